// Shape arithmetic, validation and printing.
#include "kiln/core/shape.h"

#include <ostream>

#include "kiln/core/check.h"

namespace kiln {

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    KILN_THROW(ShapeError, "[Shape] ", what, " overflows int64: ", a, " x ", b,
               ". Hint: a dimension is absurdly large; check the input's shape.");
  return r;
}

std::string dims_to_string(const Dims& dims) { return str_cat("[", str_join(dims), "]"); }

int64_t checked_num_elements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0)
      KILN_THROW(ShapeError, "[Shape] dimensions must be >= 0, received ", dims_to_string(dims),
                 ". Hint: shapes are static in Kiln; use a fixed size (e.g. drop_remainder=true).");
    n = checked_mul(n, d, "element count");
  }
  return n;
}

Shape::Shape(DType dtype, Dims dims)
    : dtype_(dtype), dims_(std::move(dims)), num_elements_(checked_num_elements(dims_)) {}

int Shape::normalize_axis(int axis) const {
  int r = rank();
  if (axis < -r || axis >= r)
    KILN_THROW(ShapeError, "[Shape] axis ", axis, " is out of range for ", to_string(),
               " (rank ", r, "): expected an axis in [", -r, ", ", r - 1, "].");
  return axis < 0 ? axis + r : axis;
}

int64_t Shape::dim(int axis) const { return dims_[static_cast<size_t>(normalize_axis(axis))]; }

int64_t Shape::byte_size() const {
  return checked_mul(num_elements_, static_cast<int64_t>(size_of(dtype_)), "byte size");
}

std::string Shape::to_string() const { return str_cat(name(dtype_), dims_to_string(dims_)); }

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.to_string(); }

}  // namespace kiln
