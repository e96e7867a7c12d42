// Hdf5File and the group/dataset half of Hdf5Group (attributes live in hdf5_attributes.cpp).
#include "kiln/io/hdf5_file.h"

#include <filesystem>

#include "kiln/core/check.h"
#include "kiln/core/crc32c.h"
#include "kiln/io/hdf5_impl.h"
#include "kiln/io/named_tensor.h"

namespace kiln::io {
namespace {

// Creating "a/b/c" creates "a" and "a/b" as h5py does.
h5::Id intermediate_groups_lcpl() {
  h5::Id lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  return lcpl;
}

// Keeps HDF5's file locks, but tolerates file systems without flock (some NFS and overlay
// mounts), where libhdf5 would otherwise refuse to open any file.
h5::Id file_access_plist() {
  h5::Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_file_locking(fapl.get(), /*use_file_locking=*/1, /*ignore_when_disabled=*/1);
  return fapl;
}

// Dataset values are the one part of a file in the 1.8 format that HDF5 does not checksum,
// so Kiln records their CRC-32C in an attribute of the dataset, inside its checksummed object
// header. Other writers' datasets have none and are read unchecked.
constexpr const char* kValuesCrcAttribute = "kiln_crc32c";

uint32_t values_crc(const HostTensor& t) {
  return t.byte_size() == 0 ? 0 : crc32c(t.raw_data(), static_cast<size_t>(t.byte_size()));
}

void record_values_crc(hid_t ds, const HostTensor& t, const std::string& file, const std::string& object) {
  const int64_t crc = values_crc(t);
  h5::Id type = h5::type_for(DType::kI64);
  h5::Id space = h5::make_space({});
  h5::Id attr(h5::check(H5Acreate2(ds, kValuesCrcAttribute, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                        file, object, "cannot record the values' checksum"),
              H5Aclose);
  h5::check_status(H5Awrite(attr.get(), type.get(), &crc), file, object, "cannot record the values' checksum");
}

// Checks `t`, just read from `ds`, against the CRC-32C Kiln recorded when writing it (if any).
void check_values_crc(hid_t ds, const HostTensor& t, const std::string& file, const std::string& object) {
  const htri_t recorded = H5Aexists(ds, kValuesCrcAttribute);
  if (recorded < 0) h5::fail(file, object, str_cat("cannot look up its ", kValuesCrcAttribute, " attribute"));
  if (recorded == 0) return;
  h5::Id attr(h5::check(H5Aopen(ds, kValuesCrcAttribute, H5P_DEFAULT), file, object,
                        str_cat("cannot open its ", kValuesCrcAttribute, " attribute")),
              H5Aclose);
  h5::Id space(h5::check(H5Aget_space(attr.get()), file, object, "unreadable checksum dataspace"), H5Sclose);
  h5::Id file_type(h5::check(H5Aget_type(attr.get()), file, object, "unreadable checksum type"), H5Tclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1 || H5Tget_class(file_type.get()) != H5T_INTEGER)
    h5::fail(file, object, str_cat("has a ", kValuesCrcAttribute, " attribute that is not one integer"));
  int64_t crc = -1;
  h5::Id mem = h5::type_for(DType::kI64);
  h5::check_status(H5Aread(attr.get(), mem.get(), &crc), file, object, "cannot read the values' checksum");
  if (crc != static_cast<int64_t>(values_crc(t)))
    h5::fail(file, object, str_cat("holds values whose CRC-32C differs from the one recorded when it was saved (",
                                   kValuesCrcAttribute, "): the file is corrupt"));
}

}  // namespace

Hdf5Group::Hdf5Group(int64_t id, std::shared_ptr<h5::FileState> file, std::string path)
    : id_(id), file_(std::move(file)), path_(std::move(path)) {}

Hdf5Group::Hdf5Group(Hdf5Group&& other) noexcept
    : id_(std::exchange(other.id_, -1)),
      file_(std::move(other.file_)),
      path_(std::move(other.path_)) {}

Hdf5Group& Hdf5Group::operator=(Hdf5Group&& other) noexcept {
  if (this != &other) {
    if (id_ >= 0) H5Gclose(id_);
    id_ = std::exchange(other.id_, -1);
    file_ = std::move(other.file_);
    path_ = std::move(other.path_);
  }
  return *this;
}

Hdf5Group::~Hdf5Group() {
  if (id_ >= 0) H5Gclose(id_);
}

const std::string& Hdf5Group::file_path() const {
  static const std::string kNoFile = "<closed HDF5 group>";
  return file_ ? file_->path : kNoFile;
}

void Hdf5Group::fail(const std::string& object, const std::string& what) const {
  h5::fail(file_path(), object, what);
}

namespace {

// The type of the object at `name`, which exists: an object whose link is there but whose
// header cannot be read (a damaged file) is an error, never "absent".
H5I_type_t object_type(hid_t loc, const std::string& name, const std::string& file, const std::string& object) {
  h5::Id obj(H5Oopen(loc, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.valid()) h5::fail(file, object, "is listed but cannot be read (its object header is damaged)");
  return H5Iget_type(obj.get());
}

}  // namespace

bool Hdf5Group::contains(const std::string& name) const {
  // One component at a time: H5Lexists fails, rather than answering false, when an
  // intermediate link is missing or names a dataset. A failure of a link test itself, or an
  // intermediate object that cannot be opened, is damage, not absence.
  std::string prefix;
  size_t start = 0;
  bool any = false;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    if (slash == std::string::npos) slash = name.size();
    if (slash > start) {
      if (any && object_type(id_, prefix, file_path(), h5::join_path(path_, prefix)) != H5I_GROUP) return false;
      if (!prefix.empty()) prefix += '/';
      prefix.append(name, start, slash - start);
      const htri_t exists = H5Lexists(id_, prefix.c_str(), H5P_DEFAULT);
      if (exists < 0) fail(h5::join_path(path_, prefix), "cannot be looked up (the group's link index is damaged)");
      if (exists == 0) return false;
      any = true;
    }
    start = slash + 1;
  }
  return any;
}

bool Hdf5Group::has_group(const std::string& name) const {
  return contains(name) && object_type(id_, name, file_path(), h5::join_path(path_, name)) == H5I_GROUP;
}

bool Hdf5Group::has_dataset(const std::string& name) const {
  return contains(name) && object_type(id_, name, file_path(), h5::join_path(path_, name)) == H5I_DATASET;
}

std::vector<std::string> Hdf5Group::children() const {
  std::vector<std::string> names;
  if (H5Literate(id_, H5_INDEX_NAME, H5_ITER_INC, nullptr, h5::collect_name<H5L_info_t>, &names) <
      0)
    fail(path_, "cannot list the group's members");
  return names;
}

Hdf5Group Hdf5Group::create_group(const std::string& name) {
  const std::string object = h5::join_path(path_, name);
  if (contains(name)) fail(object, "cannot create group: the name already exists");
  h5::Id lcpl = intermediate_groups_lcpl();
  hid_t g = h5::check(H5Gcreate2(id_, name.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
                      file_path(), object, "cannot create group");
  return Hdf5Group(g, file_, object);
}

Hdf5Group Hdf5Group::open_group(const std::string& name) const {
  const std::string object = h5::join_path(path_, name);
  if (!has_group(name)) fail(object, "no such group");
  hid_t g =
      h5::check(H5Gopen2(id_, name.c_str(), H5P_DEFAULT), file_path(), object, "cannot open group");
  return Hdf5Group(g, file_, object);
}

Hdf5Group Hdf5Group::require_group(const std::string& name) {
  if (has_group(name)) return open_group(name);
  if (contains(name)) fail(h5::join_path(path_, name), "exists but is not a group");
  return create_group(name);
}

void Hdf5Group::remove(const std::string& name) {
  const std::string object = h5::join_path(path_, name);
  if (!contains(name)) fail(object, "cannot remove: no such object");
  h5::check_status(H5Ldelete(id_, name.c_str(), H5P_DEFAULT), file_path(), object, "cannot remove");
}

void Hdf5Group::write_dataset(const std::string& name, const HostTensor& tensor) {
  const std::string object = h5::join_path(path_, name);
  KILN_CHECK(tensor.defined(), "write_dataset of an undefined tensor to ", object);
  if (contains(name)) fail(object, "cannot create dataset: the name already exists");
  h5::Id type = h5::type_for(tensor.dtype());
  h5::Id space = h5::make_space(tensor.dims());
  h5::Id lcpl = intermediate_groups_lcpl();
  h5::Id ds(h5::check(H5Dcreate2(id_, name.c_str(), type.get(), space.get(), lcpl.get(),
                                 H5P_DEFAULT, H5P_DEFAULT),
                      file_path(), object, "cannot create dataset"),
            H5Dclose);
  if (tensor.num_elements() > 0)
    h5::check_status(
        H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, tensor.raw_data()),
        file_path(), object, "cannot write dataset");
  record_values_crc(ds.get(), tensor, file_path(), object);
}

namespace {

// Opens a dataset and reads its shape, rejecting sizes no file of this size could hold.
struct OpenDataset {
  h5::Id ds;
  Shape shape;
};

OpenDataset open_dataset(hid_t loc, const std::string& name, const std::string& file,
                         const std::string& object) {
  OpenDataset out;
  out.ds =
      h5::Id(h5::check(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), file, object, "no such dataset"),
             H5Dclose);
  h5::Id type(h5::check(H5Dget_type(out.ds.get()), file, object, "unreadable dataset type"),
              H5Tclose);
  const DType dtype = h5::dtype_for(type.get(), file, object);
  h5::Id space(h5::check(H5Dget_space(out.ds.get()), file, object, "unreadable dataspace"),
               H5Sclose);
  out.shape = h5::checked_shape(dtype, h5::extent_dims(space.get(), file, object), file, object);

  // Contiguous storage must hold exactly the elements; and no dataset may claim vastly more
  // bytes than the file could produce (a corrupt header must not trigger a huge allocation).
  const uint64_t file_bytes =
      static_cast<uint64_t>(out.shape.num_elements()) * H5Tget_size(type.get());
  h5::Id dcpl(H5Dget_create_plist(out.ds.get()), H5Pclose);
  const hsize_t stored = H5Dget_storage_size(out.ds.get());
  if (dcpl.valid() && H5Pget_layout(dcpl.get()) == H5D_CONTIGUOUS && stored != 0 &&
      stored != file_bytes)
    h5::fail(file, object,
             str_cat("stores ", stored, " bytes but its shape ", out.shape, " needs ", file_bytes));
  hsize_t file_size = 0;
  H5Fget_filesize(loc, &file_size);
  if (file_bytes > 1024 * file_size + (uint64_t{64} << 20))
    h5::fail(file, object,
             str_cat("claims shape ", out.shape, " (", file_bytes,
                     " bytes), implausible for a file of ", file_size, " bytes"));
  h5::take_error_detail();
  return out;
}

}  // namespace

Shape Hdf5Group::dataset_shape(const std::string& name) const {
  const std::string object = h5::join_path(path_, name);
  if (!has_dataset(name)) fail(object, "no such dataset");
  return open_dataset(id_, name, file_path(), object).shape;
}

HostTensor Hdf5Group::read_dataset(const std::string& name) const {
  const std::string object = h5::join_path(path_, name);
  if (!has_dataset(name)) fail(object, "no such dataset");
  OpenDataset d = open_dataset(id_, name, file_path(), object);
  HostTensor t(d.shape);
  if (t.num_elements() > 0) {
    h5::Id mem = h5::type_for(t.dtype());
    h5::check_status(H5Dread(d.ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()),
                     file_path(), object, "cannot read dataset");
  }
  check_values_crc(d.ds.get(), t, file_path(), object);
  check_loaded_values(t, str_cat(file_path(), ":", object), name);
  return t;
}

Hdf5File Hdf5File::open(const std::string& path, bool writable) {
  h5::silence_error_printing();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    KILN_THROW(IOError, "[", path, "] file not found. Hint: check the path.");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 == 0)
    KILN_THROW(IOError, "[", path, "] is not an HDF5 file (no HDF5 signature). Hint: pass a ",
               ".h5 file written by Keras, h5py or Kiln.");
  auto state = std::make_shared<h5::FileState>();
  state->path = path;
  if (is_hdf5 < 0) h5::fail(path, "/", "cannot read the file's HDF5 signature");
  h5::Id fapl = file_access_plist();
  const unsigned mode = writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY;
  state->id = h5::Id(
      h5::check(H5Fopen(path.c_str(), mode, fapl.get()), path, "/", "cannot open file"), H5Fclose);
  hid_t root = h5::check(H5Gopen2(state->id.get(), "/", H5P_DEFAULT), path, "/",
                         "cannot open the root group");
  return Hdf5File(Hdf5Group(root, std::move(state), "/"));
}

Hdf5File Hdf5File::create(const std::string& path, Hdf5CreateOptions options) {
  h5::silence_error_printing();
  auto state = std::make_shared<h5::FileState>();
  state->path = path;
  h5::Id fapl = file_access_plist();
  // The HDF5 1.8 file format checksums all metadata, so a corrupt file is detected instead of
  // crashing libhdf5's decoders (which do not validate the unchecksummed 1.6 format).
  if (options.checksummed_metadata)
    H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18);
  state->id = h5::Id(h5::check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                               path, "/", "cannot create file"),
                     H5Fclose);
  hid_t root = h5::check(H5Gopen2(state->id.get(), "/", H5P_DEFAULT), path, "/",
                         "cannot open the root group");
  return Hdf5File(Hdf5Group(root, std::move(state), "/"));
}

const std::string& Hdf5File::path() const {
  return root_.file_path();
}

void Hdf5File::flush() {
  h5::check_status(H5Fflush(root_.id_, H5F_SCOPE_GLOBAL), path(), "/", "cannot flush file");
}

}  // namespace kiln::io
