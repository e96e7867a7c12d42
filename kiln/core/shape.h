// Shape: a dtype plus static dimensions, printed as in IR text ("f32[128,784]"). All size
// arithmetic is checked, so absurd dimensions become a ShapeError, never an overflow.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

#include "kiln/core/dtype.h"

namespace kiln {

using Dims = std::vector<int64_t>;

/// Dtype and dimensions of a tensor; rank 0 is a scalar.
class Shape {
 public:
  Shape() = default;
  /// Throws ShapeError if a dimension is negative or the element count overflows int64.
  Shape(DType dtype, Dims dims);
  Shape(DType dtype, std::initializer_list<int64_t> dims) : Shape(dtype, Dims(dims)) {}

  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  /// Dimension `axis`; negative counts from the end (-1 is the last). Throws ShapeError.
  int64_t dim(int axis) const;
  /// Normalizes a possibly negative axis to [0, rank). Throws ShapeError naming the rank.
  int normalize_axis(int axis) const;
  int64_t num_elements() const { return num_elements_; }
  /// Bytes needed for the elements; checked against overflow.
  int64_t byte_size() const;
  bool is_scalar() const { return dims_.empty(); }

  Shape with_dtype(DType dtype) const { return Shape(dtype, dims_); }
  Shape with_dims(Dims dims) const { return Shape(dtype_, std::move(dims)); }

  /// "f32[128,784]"; a scalar prints as "f32[]".
  std::string to_string() const;

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.dtype_ == b.dtype_ && a.dims_ == b.dims_;
  }

 private:
  DType dtype_ = DType::kF32;
  Dims dims_;
  int64_t num_elements_ = 1;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

/// Product of dims; throws ShapeError on a negative dim or int64 overflow.
int64_t checked_num_elements(const Dims& dims);
/// a * b with a ShapeError on overflow; `what` names the quantity in the message.
int64_t checked_mul(int64_t a, int64_t b, const char* what);
/// "[128,784]".
std::string dims_to_string(const Dims& dims);

}  // namespace kiln
