// Tensor handle basics and the arithmetic operators (thin calls into ops/elementwise.h).
#include "kiln/trace/tensor.h"

#include "kiln/trace/emit.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/trace_context.h"

namespace kiln {

Tensor::Tensor(HostTensor value) {
  KILN_CHECK(value.defined(), "Tensor made from an undefined HostTensor");
  auto node = std::make_shared<trace::TensorNode>();
  node->shape = value.shape();
  node->value = std::move(value);
  node_ = std::move(node);
}

Tensor Tensor::scalar(double value, DType dtype) {
  return trace::full(Shape(dtype, Dims{}), value);
}

const Shape& Tensor::shape() const {
  KILN_CHECK(node_ != nullptr, "shape() of an undefined Tensor");
  return node_->shape;
}

bool Tensor::is_symbolic() const { return node_ != nullptr && node_->instruction != nullptr; }

HostTensor Tensor::value() const {
  KILN_CHECK(node_ != nullptr, "value() of an undefined Tensor");
  if (is_symbolic())
    KILN_THROW(ValueError, "[Tensor::value] ", shape(), " is symbolic (inside a trace) and has "
               "no value yet. Hint: return it from the kiln::function to get its value.");
  return node_->value;
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }

// A double adopts the tensor's dtype (as Python scalars do in JAX and TF).
static Tensor like(const Tensor& t, double v) { return Tensor::scalar(v, t.dtype()); }

Tensor operator+(const Tensor& a, double b) { return add(a, like(a, b)); }
Tensor operator-(const Tensor& a, double b) { return sub(a, like(a, b)); }
Tensor operator*(const Tensor& a, double b) { return mul(a, like(a, b)); }
Tensor operator/(const Tensor& a, double b) { return div(a, like(a, b)); }
Tensor operator+(double a, const Tensor& b) { return add(like(b, a), b); }
Tensor operator-(double a, const Tensor& b) { return sub(like(b, a), b); }
Tensor operator*(double a, const Tensor& b) { return mul(like(b, a), b); }
Tensor operator/(double a, const Tensor& b) { return div(like(b, a), b); }

}  // namespace kiln
