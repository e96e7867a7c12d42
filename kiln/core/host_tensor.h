// HostTensor: concrete bytes plus a Shape in host memory, 64-byte aligned, with shared
// ownership (copies share storage; clone() copies bytes). The only tensor type data/ and io/ see.
// A string tensor (DType::kString) holds std::string objects instead of bytes: it has no
// raw_data() (a DTypeError), so no byte-copying path can touch it by mistake.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/core/half.h"
#include "kiln/core/shape.h"

namespace kiln {

/// Alignment of every HostTensor allocation: a cache line, and enough for AVX-512 loads.
inline constexpr size_t kHostAlignment = 64;

template <> struct DTypeOf<std::string> { static constexpr DType value = DType::kString; };

class HostTensor {
 public:
  /// An empty (undefined) tensor; defined() is false.
  HostTensor() = default;
  /// Zero-filled tensor of `shape` (a string tensor: empty strings). Throws OutOfMemoryError if
  /// the allocation fails.
  explicit HostTensor(Shape shape);

  static HostTensor zeros(Shape shape) { return HostTensor(std::move(shape)); }
  /// A tensor of `shape` whose contents are unspecified: use it when every element is written
  /// next (a batch filled row by row, a map output), to skip the zero-fill of HostTensor(Shape).
  /// Throws OutOfMemoryError if the allocation fails.
  static HostTensor uninitialized(Shape shape);
  /// A tensor over `storage`, which the caller allocated with at least shape.byte_size() bytes;
  /// the last tensor sharing it runs its deleter (a buffer pool returns it to the pool there).
  /// Numeric dtypes only (raw bytes hold no std::string objects): a string shape is a DTypeError.
  static HostTensor from_storage(Shape shape, std::shared_ptr<std::byte> storage);
  /// A tensor over memory it does not own (arena slices, argument buffers); the caller keeps
  /// `data` alive and 64-byte aligned if kernels need it. Numeric dtypes only.
  static HostTensor view(Shape shape, void* data);
  /// A tensor holding `values` (row-major); throws ShapeError if the count differs.
  template <typename T>
  static HostTensor from_vector(Dims dims, const std::vector<T>& values);
  template <typename T>
  static HostTensor scalar(T value) {
    return from_vector<T>({}, std::vector<T>{value});
  }

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return shape_.dtype(); }
  const Dims& dims() const { return shape_.dims(); }
  int rank() const { return shape_.rank(); }
  int64_t num_elements() const { return shape_.num_elements(); }
  int64_t byte_size() const { return shape_.num_elements() * static_cast<int64_t>(size_of(dtype())); }

  bool is_string() const { return dtype() == DType::kString; }

  /// The elements' bytes. A string tensor has none: a DTypeError saying strings are not numbers
  /// (read them with data<std::string>()).
  void* raw_data() {
    if (is_string()) [[unlikely]] throw_no_raw_data();
    return data_;
  }
  const void* raw_data() const {
    if (is_string()) [[unlikely]] throw_no_raw_data();
    return data_;
  }

  /// Typed view of the elements; throws DTypeError if T does not match dtype().
  template <typename T>
  std::span<T> data() {
    check_type(dtype_of<std::remove_const_t<T>>);
    return {static_cast<T*>(data_), static_cast<size_t>(num_elements())};
  }
  template <typename T>
  std::span<const T> data() const {
    check_type(dtype_of<std::remove_const_t<T>>);
    return {static_cast<const T*>(data_), static_cast<size_t>(num_elements())};
  }
  /// Copies the elements out, converted to T.
  template <typename T>
  std::vector<T> to_vector() const;

  /// Same bytes, new dims (element count must match). Shares storage.
  HostTensor reshape(Dims dims) const;
  /// Deep copy.
  HostTensor clone() const;
  /// Copies `src`'s elements (same dtype, any shape) into this tensor starting at element
  /// `first`: a memcpy for numbers, string assignments for strings.
  void copy_elements_from(const HostTensor& src, int64_t first);
  /// Element-wise conversion (16-bit floats round to nearest even). Returns *this if same dtype.
  /// Between strings and numbers: a DTypeError.
  HostTensor astype(DType dtype) const;
  /// A view of rows [begin, end) along axis 0; shares storage.
  HostTensor slice_rows(int64_t begin, int64_t end) const;
  /// A view of `shape` over this tensor's bytes starting `byte_offset` bytes in; shares storage.
  /// Throws ShapeError if the view does not fit. One Shape copy, so cheap enough per element
  /// (from_tensor_slices, unbatch hand out rows this way).
  HostTensor view_at(Shape shape, int64_t byte_offset) const;
  bool shares_storage_with(const HostTensor& other) const { return storage_ == other.storage_; }
  /// The shared allocation; a from_storage deleter may carry where the bytes came from
  /// (data::record_source reads a TFRecord record's file and index back this way).
  const std::shared_ptr<std::byte>& storage() const { return storage_; }

 private:
  void check_type(DType requested) const;
  [[noreturn]] void throw_no_raw_data() const;

  Shape shape_;
  std::shared_ptr<std::byte> storage_;  // owns the aligned allocation
  void* data_ = nullptr;                // start of this tensor's elements inside storage_
};

template <typename T>
HostTensor HostTensor::from_vector(Dims dims, const std::vector<T>& values) {
  HostTensor t(Shape(dtype_of<T>, std::move(dims)));
  if (static_cast<int64_t>(values.size()) != t.num_elements())
    KILN_THROW(ShapeError, "[HostTensor::from_vector] expected ", t.num_elements(),
               " values for ", t.shape(), ", received ", values.size(), ".");
  auto dst = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) dst[i] = values[i];
  return t;
}

template <typename T>
std::vector<T> HostTensor::to_vector() const {
  HostTensor converted = astype(dtype_of<T>);
  auto src = converted.data<T>();
  return std::vector<T>(src.begin(), src.end());
}

}  // namespace kiln
