// Masking: the mask is a reduction over the features; the output zeroes masked steps.
#include "kiln/keras/layers/masking.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

// any(x != value) over the last axis, as a bool (batch, time) tensor.
Tensor steps_kept(const Tensor& x, double value, const std::string& layer) {
  if (x.rank() < 3)
    KILN_THROW(ShapeError, "[", layer, "] expected input of shape (batch, time, features...), received ", x.shape(), ".");
  Tensor any = reduce_max(cast(not_equal(x, full(Shape(x.dtype(), {}), value)), DType::kF32), {-1});
  for (int r = x.rank() - 1; r > 2; --r) any = reduce_max(any, {-1});
  return greater(any, 0.0);
}

}  // namespace

Masking::Masking(MaskingOptions options)
    : Layer(options.name, options.input_shape, options.dtype), mask_value_(options.mask_value) {}

Tensor Masking::compute_mask(const Tensor& x, const Tensor& /*mask*/) const {
  return steps_kept(x, mask_value_, name());
}

Tensor Masking::call(const Tensor& x, bool /*training*/) {
  Tensor keep = cast(steps_kept(x, mask_value_, name()), x.dtype());
  Dims dims = keep.dims();
  while (static_cast<int>(dims.size()) < x.rank()) dims.push_back(1);
  return x * reshape(keep, dims);
}

std::string Masking::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["mask_value"] = mask_value_;
  return j.dump();
}

constexpr internal::ConfigKey kMaskingKeys[] = {{"mask_value"}};
Masking Masking::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Masking.from_config");
  internal::expect_layer_keys(j, {kMaskingKeys}, "Masking");
  MaskingOptions o;
  o.name = j.value("name", "");
  o.mask_value = internal::guarded("Masking.from_config", [&] { return j.value("mask_value", 0.0); });
  o.input_shape = internal::input_shape_from(j);
  Masking m(o);
  m.set_trainable(j.value("trainable", true));
  return m;
}

}  // namespace kiln::keras
