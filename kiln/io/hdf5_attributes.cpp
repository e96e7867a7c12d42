// The attribute half of Hdf5Group: text attributes in the three encodings h5py produces,
// numeric attributes, and Keras's split of long string lists into name0, name1, ...
#include <algorithm>
#include <cstring>

#include "kiln/core/check.h"
#include "kiln/core/crc32c.h"
#include "kiln/io/hdf5_file.h"
#include "kiln/io/hdf5_impl.h"
#include "kiln/io/named_tensor.h"

namespace kiln::io {
namespace {

// No real attribute holds more; a corrupt dataspace must not drive a huge allocation.
constexpr int64_t kMaxAttributeElements = int64_t{1} << 24;

std::string attribute_object(const std::string& path, const std::string& name) {
  return str_cat(path, "@", name);
}

struct OpenAttribute {
  h5::Id attr;
  h5::Id type;
  h5::Id space;
  int64_t count = 0;  // elements (1 for a scalar)
  Dims dims;
};

OpenAttribute open_attribute(hid_t loc, const std::string& name, const std::string& file,
                             const std::string& object) {
  OpenAttribute a;
  const htri_t exists = H5Aexists(loc, name.c_str());
  if (exists < 0) h5::fail(file, object, "cannot be looked up (the object's attribute index is damaged)");
  if (exists == 0) h5::fail(file, object, "no such attribute");
  a.attr = h5::Id(
      h5::check(H5Aopen(loc, name.c_str(), H5P_DEFAULT), file, object, "cannot open attribute"),
      H5Aclose);
  a.type = h5::Id(h5::check(H5Aget_type(a.attr.get()), file, object, "unreadable attribute type"),
                  H5Tclose);
  a.space =
      h5::Id(h5::check(H5Aget_space(a.attr.get()), file, object, "unreadable attribute dataspace"),
             H5Sclose);
  a.dims = h5::extent_dims(a.space.get(), file, object);
  a.count = h5::checked_shape(DType::kU8, a.dims, file, object).num_elements();
  if (a.count > kMaxAttributeElements)
    h5::fail(file, object, str_cat("claims ", a.count, " elements, more than any attribute holds"));
  return a;
}

// Frees the strings HDF5 allocated for a variable-length read, also when an exception leaves.
struct VlenReclaim {
  hid_t type, space;
  std::vector<char*>* buffer;
  ~VlenReclaim() { H5Dvlen_reclaim(type, space, H5P_DEFAULT, buffer->data()); }
};

std::vector<std::string> read_strings(const OpenAttribute& a, const std::string& file,
                                      const std::string& object) {
  if (H5Tget_class(a.type.get()) != H5T_STRING) h5::fail(file, object, "is not a text attribute");
  const size_t n = static_cast<size_t>(a.count);
  std::vector<std::string> out;
  out.reserve(n);
  const H5T_cset_t cset = H5Tget_cset(a.type.get());
  if (H5Tis_variable_str(a.type.get()) > 0) {
    h5::Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), cset);
    std::vector<char*> ptrs(n, nullptr);
    h5::check_status(H5Aread(a.attr.get(), mem.get(), ptrs.data()), file, object,
                     "cannot read text attribute");
    VlenReclaim reclaim{mem.get(), a.space.get(), &ptrs};
    for (char* p : ptrs) out.emplace_back(p == nullptr ? "" : p);
    return out;
  }
  const size_t size = H5Tget_size(a.type.get());
  if (size == 0 || size > (size_t{1} << 31) / std::max<size_t>(n, 1))
    h5::fail(file, object, str_cat("has an implausible string size ", size));
  const H5T_str_t pad = H5Tget_strpad(a.type.get());
  h5::Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem.get(), size);
  H5Tset_strpad(mem.get(), pad);
  H5Tset_cset(mem.get(), cset);
  std::string buffer(n * size, '\0');
  h5::check_status(H5Aread(a.attr.get(), mem.get(), buffer.data()), file, object,
                   "cannot read text attribute");
  for (size_t i = 0; i < n; ++i) {
    std::string s = buffer.substr(i * size, size);
    s.resize(std::min(s.size(), s.find('\0')));  // NumPy 'S' and C strings stop at NUL
    if (pad == H5T_STR_SPACEPAD) s.erase(s.find_last_not_of(' ') + 1);
    out.push_back(std::move(s));
  }
  return out;
}

h5::Id string_type(StringKind kind, size_t fixed_size) {
  h5::Id t(H5Tcopy(H5T_C_S1), H5Tclose);
  if (kind == StringKind::kFixedAscii) {
    H5Tset_size(t.get(), std::max<size_t>(fixed_size, 1));
    H5Tset_strpad(t.get(), H5T_STR_NULLPAD);
    H5Tset_cset(t.get(), H5T_CSET_ASCII);
  } else {
    H5Tset_size(t.get(), H5T_VARIABLE);
    H5Tset_cset(t.get(), kind == StringKind::kVariableUtf8 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
  }
  return t;
}

size_t longest(std::vector<std::string>::const_iterator begin,
               std::vector<std::string>::const_iterator end) {
  size_t n = 0;
  for (auto it = begin; it != end; ++it) n = std::max(n, it->size());
  return n;
}

}  // namespace

void Hdf5Group::write_attribute_raw(const std::string& name, int64_t type, int64_t space,
                                    const void* data) {
  const std::string object = attribute_object(path_, name);
  remove_attribute(name);
  h5::Id attr(h5::check(H5Acreate2(id_, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT),
                        file_path(), object,
                        "cannot create attribute (an attribute over 64 KiB needs "
                        "write_keras_string_list's splitting)"),
              H5Aclose);
  h5::check_status(H5Awrite(attr.get(), type, data), file_path(), object, "cannot write attribute");
}

bool Hdf5Group::has_attribute(const std::string& name) const {
  // Absent is false; an attribute index that cannot be read is damage, never "absent".
  const htri_t e = H5Aexists(id_, name.c_str());
  if (e < 0) fail(attribute_object(path_, name), "cannot be looked up (the object's attribute index is damaged)");
  return e > 0;
}

std::vector<std::string> Hdf5Group::attribute_names() const {
  std::vector<std::string> names;
  if (H5Aiterate2(id_, H5_INDEX_NAME, H5_ITER_INC, nullptr, h5::collect_name<H5A_info_t>, &names) <
      0)
    fail(path_, "cannot list attributes");
  return names;
}

void Hdf5Group::remove_attribute(const std::string& name) {
  if (!name.ends_with(h5::kTextRefSuffix)) remove_attribute(name + h5::kTextRefSuffix);
  if (!has_attribute(name)) return;
  h5::check_status(H5Adelete(id_, name.c_str()), file_path(), attribute_object(path_, name),
                   "cannot delete attribute");
}

void Hdf5Group::write_string_attribute(const std::string& name, const std::string& value,
                                       StringKind kind) {
  h5::Id type = string_type(kind, value.size());
  h5::Id space = h5::make_space({});
  if (kind == StringKind::kFixedAscii) {
    std::string padded = value.empty() ? std::string(1, '\0') : value;
    write_attribute_raw(name, type.get(), space.get(), padded.data());
  } else {
    const char* ptr = value.c_str();
    write_attribute_raw(name, type.get(), space.get(), &ptr);
    record_text_ref(name, value);
  }
}

void Hdf5Group::record_text_ref(const std::string& name, const std::string& value) {
  const std::string object = attribute_object(path_, name);
  h5::check_status(H5Fflush(id_, H5F_SCOPE_LOCAL), file_path(), object, "cannot flush the file");
  std::optional<h5::HeapTextRef> ref = h5::find_heap_text(file_path(), value);
  if (!ref) fail(object, "cannot find the text just written in the file's global heap");
  write_tensor_attribute(name + h5::kTextRefSuffix,
                         HostTensor::from_vector<int64_t>({4}, {static_cast<int64_t>(ref->collection),
                                                                static_cast<int64_t>(ref->index),
                                                                static_cast<int64_t>(ref->size), ref->crc}));
}

std::string Hdf5Group::read_string_attribute(const std::string& name) const {
  const std::string object = attribute_object(path_, name);
  OpenAttribute a = open_attribute(id_, name, file_path(), object);
  if (a.count != 1) fail(object, str_cat("holds ", a.count, " strings where one was expected"));
  // A variable-length text lives in the unchecksummed global heap: where Kiln recorded its
  // place and checksum, check the heap before libhdf5 reads it, and the text after.
  const std::string ref_name = name + h5::kTextRefSuffix;
  std::optional<h5::HeapTextRef> ref;
  if (H5Tis_variable_str(a.type.get()) > 0 && has_attribute(ref_name)) {
    HostTensor r = read_tensor_attribute(ref_name);
    if (r.dtype() != DType::kI64 || r.num_elements() != 4)
      fail(attribute_object(path_, ref_name), str_cat("is ", r.shape(), " where Kiln writes i64[4]"));
    auto v = r.data<int64_t>();
    if (std::any_of(v.begin(), v.end(), [](int64_t x) { return x < 0; }) || v[3] > UINT32_MAX)
      fail(attribute_object(path_, ref_name), "holds negative or oversized fields");
    ref = h5::HeapTextRef{static_cast<uint64_t>(v[0]), static_cast<uint64_t>(v[1]), static_cast<uint64_t>(v[2]),
                          static_cast<uint32_t>(v[3])};
    h5::check_heap_text(file_path(), object, *ref);
  }
  std::string text = read_strings(a, file_path(), object).front();
  if (ref && (text.size() != ref->size || crc32c(text.data(), text.size()) != ref->crc))
    fail(object, str_cat("differs from the text Kiln recorded in ", ref_name,
                         " when saving: another program rewrote it, or the file is corrupt"));
  return text;
}

void Hdf5Group::write_string_list_attribute(const std::string& name,
                                            const std::vector<std::string>& values,
                                            StringKind kind) {
  h5::Id type = string_type(kind, longest(values.begin(), values.end()));
  h5::Id space = h5::make_space({static_cast<int64_t>(values.size())});
  if (kind == StringKind::kFixedAscii) {
    const size_t size = H5Tget_size(type.get());
    std::string buffer(values.size() * size, '\0');
    for (size_t i = 0; i < values.size(); ++i)
      std::memcpy(buffer.data() + i * size, values[i].data(), values[i].size());
    write_attribute_raw(name, type.get(), space.get(), buffer.data());
  } else {
    std::vector<const char*> ptrs;
    for (const std::string& v : values) ptrs.push_back(v.c_str());
    write_attribute_raw(name, type.get(), space.get(), ptrs.data());
  }
}

std::vector<std::string> Hdf5Group::read_string_list_attribute(const std::string& name) const {
  const std::string object = attribute_object(path_, name);
  OpenAttribute a = open_attribute(id_, name, file_path(), object);
  if (a.count == 0) return {};
  // A text Kiln wrote with a heap record is read as read_string_attribute checks it.
  if (a.count == 1 && H5Tget_class(a.type.get()) == H5T_STRING && H5Tis_variable_str(a.type.get()) > 0 &&
      has_attribute(name + h5::kTextRefSuffix))
    return {read_string_attribute(name)};
  return read_strings(a, file_path(), object);
}

void Hdf5Group::write_tensor_attribute(const std::string& name, const HostTensor& value) {
  KILN_CHECK(value.defined(), "write_tensor_attribute of an undefined tensor");
  h5::Id type = h5::type_for(value.dtype());
  h5::Id space = h5::make_space(value.dims());
  write_attribute_raw(name, type.get(), space.get(), value.raw_data());
}

HostTensor Hdf5Group::read_tensor_attribute(const std::string& name) const {
  const std::string object = attribute_object(path_, name);
  OpenAttribute a = open_attribute(id_, name, file_path(), object);
  HostTensor t(Shape(h5::dtype_for(a.type.get(), file_path(), object), a.dims));
  if (t.num_elements() > 0) {
    h5::Id mem = h5::type_for(t.dtype());
    h5::check_status(H5Aread(a.attr.get(), mem.get(), t.raw_data()), file_path(), object,
                     "cannot read attribute");
  }
  check_loaded_values(t, str_cat(file_path(), ":", object), name);
  return t;
}

void Hdf5Group::write_keras_string_list(const std::string& name,
                                        const std::vector<std::string>& values) {
  for (const std::string& v : values)
    if (v.size() > kKerasAttributeLimit)
      fail(
          attribute_object(path_, name),
          str_cat("cannot save a string of ", v.size(), " bytes: HDF5 object headers hold at most ",
                  kKerasAttributeLimit, " (\"", v.substr(0, 40), "...\")"));
  remove_attribute(name);
  for (int i = 0; has_attribute(str_cat(name, i)); ++i) remove_attribute(str_cat(name, i));
  if (values.empty()) {
    write_tensor_attribute(name, HostTensor(Shape(DType::kF64, {0})));
    return;
  }
  // NumPy makes one 'S<longest>' array; np.array_split then gives the first n % k chunks one
  // extra element. Use the fewest chunks whose largest fits under the limit.
  const size_t item = std::max<size_t>(longest(values.begin(), values.end()), 1);
  const size_t n = values.size();
  size_t k = 1;
  while ((n + k - 1) / k * item > kKerasAttributeLimit) ++k;
  if (k == 1) {
    write_string_list_attribute(name, values, StringKind::kFixedAscii);
    return;
  }
  h5::Id type = string_type(StringKind::kFixedAscii, item);
  size_t begin = 0;
  for (size_t c = 0; c < k; ++c) {
    const size_t len = n / k + (c < n % k ? 1 : 0);
    std::string buffer(len * item, '\0');
    for (size_t i = 0; i < len; ++i)
      std::memcpy(buffer.data() + i * item, values[begin + i].data(), values[begin + i].size());
    h5::Id space = h5::make_space({static_cast<int64_t>(len)});
    write_attribute_raw(str_cat(name, c), type.get(), space.get(), buffer.data());
    begin += len;
  }
}

std::vector<std::string> Hdf5Group::read_keras_string_list(const std::string& name) const {
  if (has_attribute(name)) return read_string_list_attribute(name);
  std::vector<std::string> out;
  for (int i = 0; has_attribute(str_cat(name, i)); ++i) {
    std::vector<std::string> chunk = read_string_list_attribute(str_cat(name, i));
    out.insert(out.end(), chunk.begin(), chunk.end());
  }
  return out;
}

bool Hdf5Group::has_keras_string_list(const std::string& name) const {
  return has_attribute(name) || has_attribute(str_cat(name, 0));
}

}  // namespace kiln::io
