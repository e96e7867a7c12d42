// Tensor: the value users compute with. A cheap shared handle that is symbolic inside a trace
// (an instruction of the active TraceContext) and concrete outside one (a HostTensor, eager).
#pragma once

#include <memory>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/core/shape.h"

namespace kiln {

namespace ir {
class Instruction;
}
namespace trace {
struct TensorNode;
class TraceContext;
}  // namespace trace

class Tensor {
 public:
  /// An undefined tensor (defined() is false).
  Tensor() = default;
  /// A concrete tensor sharing `value`'s storage.
  explicit Tensor(HostTensor value);
  /// A concrete scalar of `dtype`.
  static Tensor scalar(double value, DType dtype = DType::kF32);
  /// A concrete tensor of `dims` holding `values` (row-major).
  template <typename T>
  static Tensor from_vector(Dims dims, const std::vector<T>& values) {
    return Tensor(HostTensor::from_vector<T>(std::move(dims), values));
  }

  bool defined() const { return node_ != nullptr; }
  const Shape& shape() const;
  DType dtype() const { return shape().dtype(); }
  const Dims& dims() const { return shape().dims(); }
  int rank() const { return shape().rank(); }
  /// Dimension `axis`; negative counts from the end.
  int64_t dim(int axis) const { return shape().dim(axis); }

  /// True inside a trace: the tensor names an instruction and has no value yet.
  bool is_symbolic() const;
  /// The value of a concrete tensor (shares storage). Throws ValueError for symbolic tensors.
  HostTensor value() const;
  /// The elements converted to T (concrete tensors only).
  template <typename T>
  std::vector<T> to_vector() const {
    return value().to_vector<T>();
  }

  /// Internal: the shared node (value or instruction) this handle refers to.
  const std::shared_ptr<trace::TensorNode>& node() const { return node_; }
  explicit Tensor(std::shared_ptr<trace::TensorNode> node) : node_(std::move(node)) {}

 private:
  std::shared_ptr<trace::TensorNode> node_;
};

/// Elementwise arithmetic with NumPy-style broadcasting; mixed dtypes promote (dtype.h), and
/// a double operand becomes a scalar of the tensor's dtype.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

}  // namespace kiln
