// HDF5 error capture and the dtype <-> HDF5 type mapping shared by hdf5_file.cpp and
// hdf5_attributes.cpp.
#include "kiln/io/hdf5_impl.h"

#include <vector>

#include "kiln/core/check.h"

namespace kiln::io::h5 {
namespace {

herr_t innermost_message(unsigned n, const H5E_error2_t* err, void* out) {
  // Walking upward, frame 0 is where HDF5 first noticed the problem.
  if (n == 0 && err->desc != nullptr) *static_cast<std::string*>(out) = err->desc;
  return 0;
}

Id float16_type(size_t exponent_pos, size_t exponent_bits, size_t mantissa_bits, size_t bias) {
  // As h5py builds 'f2': start from a 32-bit float, set the fields, then shrink.
  Id t(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
  H5Tset_fields(t.get(), 15, exponent_pos, exponent_bits, 0, mantissa_bits);
  H5Tset_size(t.get(), 2);
  H5Tset_ebias(t.get(), bias);
  return t;
}

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_STRING: return "string";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_COMPOUND: return "compound";
    case H5T_REFERENCE: return "reference";
    case H5T_ENUM: return "enum";
    case H5T_VLEN: return "variable-length";
    case H5T_ARRAY: return "array";
    default: return "unknown";
  }
}

bool is_bool_enum(hid_t type) {
  if (H5Tget_size(type) != 1 || H5Tget_nmembers(type) != 2) return false;
  for (unsigned i = 0; i < 2; ++i) {
    char* member = H5Tget_member_name(type, i);
    if (member == nullptr) return false;
    int8_t value = -1;
    bool ok = H5Tget_member_value(type, i, &value) >= 0 &&
              std::string(member) == (i == 0 ? "FALSE" : "TRUE") && value == static_cast<int8_t>(i);
    H5free_memory(member);
    if (!ok) return false;
  }
  return true;
}

}  // namespace

void silence_error_printing() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

std::string take_error_detail() {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_message, &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
}

void fail(const std::string& file, const std::string& object, const std::string& what) {
  std::string detail = take_error_detail();
  KILN_THROW(IOError, "[", file, ":", object, "] ", what,
             detail.empty() ? std::string() : str_cat(" (HDF5: ", detail, ")"),
             ". Hint: check that the file is a complete, uncorrupted HDF5 (.h5) file with the "
             "expected layout.");
}

hid_t check(hid_t id, const std::string& file, const std::string& object, const std::string& what) {
  if (id < 0) fail(file, object, what);
  return id;
}

void check_status(herr_t status, const std::string& file, const std::string& object,
                  const std::string& what) {
  if (status < 0) fail(file, object, what);
}

Id type_for(DType dtype) {
  switch (dtype) {
    case DType::kF32: return Id(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
    case DType::kF64: return Id(H5Tcopy(H5T_IEEE_F64LE), H5Tclose);
    case DType::kI32: return Id(H5Tcopy(H5T_STD_I32LE), H5Tclose);
    case DType::kI64: return Id(H5Tcopy(H5T_STD_I64LE), H5Tclose);
    case DType::kU8: return Id(H5Tcopy(H5T_STD_U8LE), H5Tclose);
    case DType::kF16: return float16_type(10, 5, 10, 15);
    case DType::kBF16: return float16_type(7, 8, 7, 127);
    case DType::kBool: {
      Id t(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
      int8_t f = 0, tr = 1;
      H5Tenum_insert(t.get(), "FALSE", &f);
      H5Tenum_insert(t.get(), "TRUE", &tr);
      return t;
    }
    case DType::kString:
      KILN_THROW(DTypeError, "[hdf5] a string tensor cannot be stored as a numeric dataset.");
  }
  KILN_CHECK(false, "unhandled dtype ", dtype);
  return {};
}

DType dtype_for(hid_t type, const std::string& file, const std::string& object) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT) {
    if (size == 8) return DType::kF64;
    if (size == 4) return DType::kF32;
    if (size == 2) return H5Tget_ebias(type) == 127 ? DType::kBF16 : DType::kF16;
  } else if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    if (!is_signed && size == 1) return DType::kU8;
    if (is_signed ? size <= 4 : size == 2) return DType::kI32;
    if (is_signed ? size == 8 : size == 4) return DType::kI64;
  } else if (cls == H5T_ENUM && is_bool_enum(type)) {
    return DType::kBool;
  }
  fail(file, object,
       str_cat("holds ", size, "-byte ", class_name(cls),
               " values, which Kiln cannot load (Kiln reads float 16/32/64, int 8-64, uint 8-32 "
               "and h5py bools)"));
}

Dims extent_dims(hid_t space, const std::string& file, const std::string& object) {
  const H5S_class_t cls = H5Sget_simple_extent_type(space);
  if (cls == H5S_SCALAR) return {};
  if (cls != H5S_SIMPLE) fail(file, object, "has no data (null or unknown dataspace)");
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) fail(file, object, "has an unreadable dataspace");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0)
    fail(file, object, "has an unreadable dataspace");
  Dims out;
  for (hsize_t d : dims) {
    if (d > static_cast<hsize_t>(INT64_MAX)) fail(file, object, str_cat("has dimension ", d));
    out.push_back(static_cast<int64_t>(d));
  }
  return out;
}

Id make_space(const Dims& dims) {
  if (dims.empty()) return Id(H5Screate(H5S_SCALAR), H5Sclose);
  std::vector<hsize_t> h(dims.begin(), dims.end());
  return Id(H5Screate_simple(static_cast<int>(h.size()), h.data(), nullptr), H5Sclose);
}

Shape checked_shape(DType dtype, const Dims& dims, const std::string& file,
                    const std::string& object) {
  try {
    Shape shape(dtype, dims);
    (void)shape.byte_size();
    return shape;
  } catch (const ShapeError&) {
    fail(file, object, str_cat("has dimensions ", dims_to_string(dims), " whose size overflows"));
  }
}

std::string join_path(const std::string& parent, const std::string& name) {
  if (!name.empty() && name.front() == '/') return name;
  return parent == "/" ? "/" + name : parent + "/" + name;
}

}  // namespace kiln::io::h5
