// Dense: matmul + bias + activation; rejects inputs whose last dim differs from the kernel's.
#include "kiln/keras/layers/dense.h"

#include "kiln/core/check.h"
#include "kiln/keras/activations.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/ops/nn.h"

namespace kiln::keras {

Dense::Dense(int64_t units, DenseOptions options)
    : Layer(options.name, options.input_shape, options.dtype), units_(units), options_(std::move(options)) {
  set_activity_regularizer(options_.activity_regularizer);
  if (units <= 0)
    KILN_THROW(ValueError, "[Dense] expected units > 0, received units=", units, ".");
  options_.activation.check();  // unknown names fail at construction, as in Keras
}

Dims Dense::compute_output_shape(const Dims& input_shape) const {
  Dims out = input_shape;
  if (out.empty()) out.push_back(units_);
  out.back() = units_;
  return out;
}

void Dense::build_weights(const Dims& input_shape) {
  if (input_shape.empty())
    KILN_THROW(ShapeError, "[", name(), "] expected input of rank >= 2 (batch, features), ",
               "received a rank-1 batch. Hint: reshape the input to (batch, 1).");
  kernel_ = add_weight("kernel", {input_shape.back(), units_}, options_.kernel_initializer, /*trainable=*/true,
                       options_.kernel_regularizer, options_.kernel_constraint);
  if (options_.use_bias) bias_ = add_weight("bias", {units_}, options_.bias_initializer, /*trainable=*/true,
                                         options_.bias_regularizer, options_.bias_constraint);
}

Tensor Dense::call(const Tensor& x, bool /*training*/) {
  const int64_t in_dim = kernel_.shape().dim(0);
  if (x.rank() < 2 || x.dim(-1) != in_dim) {
    int64_t features = 1;
    for (int i = 1; i < x.rank(); ++i) features *= x.dim(i);
    const bool flatten_fixes = x.rank() > 2 && features == in_dim;
    KILN_THROW(ShapeError, "[", name(), "] expected input with last dimension ", in_dim,
               ", received ", x.shape(), ". Hint: ",
               flatten_fixes ? "add Flatten() before Dense."
                             : "check the previous layer's output shape (model.summary()).");
  }
  Tensor y = matmul(x, kernel_);
  if (options_.use_bias) y = y + bias_;
  return options_.activation(y);
}

std::string Dense::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["units"] = units_;
  internal::put_kernel_fields(j, options_);
  return j.dump();
}

// Dense's keys in every Keras release beyond the kernel fields and the base layer's.
constexpr internal::ConfigKey kDenseKeys[] = {{"units"}};
Dense Dense::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Dense.from_config");
  internal::expect_layer_keys(
      j, {kDenseKeys, internal::kernel_field_keys(), internal::lora_and_quantization_keys()}, "Dense");
  DenseOptions o;
  internal::get_kernel_fields(j, o);
  Dense d(internal::int_field(j, "units", "Dense"), o);
  d.set_trainable(j.value("trainable", true));
  return d;
}

}  // namespace kiln::keras
