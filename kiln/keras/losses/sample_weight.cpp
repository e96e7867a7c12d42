// broadcast_weights: Keras's squeeze_or_expand_dimensions on the weights, then a broadcast.
#include "kiln/keras/losses/sample_weight.h"

#include "kiln/core/check.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

Tensor broadcast_weights(const Tensor& sample_weight, const Shape& values, const std::string& where) {
  Tensor w = cast(sample_weight, DType::kF32);
  if (w.rank() == values.rank() - 1) w = expand_dims(w, w.rank());
  else if (w.rank() == values.rank() + 1 && w.dim(-1) == 1) w = squeeze(w, w.rank() - 1);
  bool fits = w.rank() <= values.rank();
  for (int i = 1; fits && i <= w.rank(); ++i) {
    const int64_t d = w.dims()[static_cast<size_t>(w.rank() - i)];
    fits = d == 1 || d == values.dims()[static_cast<size_t>(values.rank() - i)];
  }
  if (!fits)
    KILN_THROW(ShapeError, "[", where, "] sample weights ", sample_weight.shape(), " do not broadcast to the values ",
               values, " they weigh. Hint: give one weight per sample (batch,) or per step (batch, T).");
  return w.dims() == values.dims() ? w : broadcast_to(w, values.dims());
}

Tensor label_like(const Tensor& y_true, const Tensor& y_pred) {
  return y_true.rank() == 1 && y_pred.rank() == 2 && y_pred.dim(1) == 1 ? expand_dims(y_true, -1) : y_true;
}

}  // namespace kiln::keras
