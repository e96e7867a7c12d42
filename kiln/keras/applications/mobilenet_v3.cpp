// MobileNetV3Small and MobileNetV3Large as keras/src/applications/mobilenet_v3.py builds them,
// with Keras 3's layer names. Keras writes hard_sigmoid as arithmetic on its tensors
// (ReLU(6)(x + 3) * (1 / 6)), which saves as op layers; Kiln writes the same function with
// Keras layers that both Keras 2 and 3 load (Rescaling(1/6, offset 0.5), then ReLU(max_value 1)),
// and hard_swish as Keras 2 did (Multiply([x, hard_sigmoid(x)])). None of them has weights, so
// the weighted layers and their order, which Keras's weight files follow, are Keras's.
#include "kiln/core/check.h"
#include "kiln/core/str_cat.h"
#include "kiln/keras/applications/applications_impl.h"
#include "kiln/keras/layers/activation.h"
#include "kiln/keras/layers/add.h"
#include "kiln/keras/layers/advanced_activations.h"
#include "kiln/keras/layers/batch_normalization.h"
#include "kiln/keras/layers/conv2d.h"
#include "kiln/keras/layers/depthwise_conv2d.h"
#include "kiln/keras/layers/dropout.h"
#include "kiln/keras/layers/flatten.h"
#include "kiln/keras/layers/global_average_pooling2d.h"
#include "kiln/keras/layers/merging.h"
#include "kiln/keras/layers/rescaling.h"
#include "kiln/keras/layers/reshaping.h"

namespace kiln::keras::applications {
namespace {

using internal::correct_pad;
using internal::make_divisible;

using ActivationFn = KerasTensor (*)(const KerasTensor&);

KerasTensor relu(const KerasTensor& x) { return ReLU()(x); }

// relu6(x + 3) / 6 = clip(x / 6 + 0.5, 0, 1).
KerasTensor hard_sigmoid(const KerasTensor& x) {
  return ReLU({.max_value = 1.0})(Rescaling(1.0 / 6.0, 0.5)(x));
}

KerasTensor hard_swish(const KerasTensor& x) { return Multiply()({x, hard_sigmoid(x)}); }

KerasTensor bn(const KerasTensor& x, const std::string& name) {
  return BatchNormalization({.momentum = 0.999, .epsilon = 1e-3, .name = name})(x);
}

int64_t depth(double v) { return make_divisible(v); }

KerasTensor se_block(const KerasTensor& in, int64_t filters, double se_ratio, const std::string& prefix) {
  KerasTensor x = GlobalAveragePooling2D({.keepdims = true, .name = prefix + "squeeze_excite_avg_pool"})(in);
  x = Conv2D(depth(static_cast<double>(filters) * se_ratio), 1,
             {.padding = "same", .name = prefix + "squeeze_excite_conv"})(x);
  x = ReLU({.name = prefix + "squeeze_excite_relu"})(x);
  x = Conv2D(filters, 1, {.padding = "same", .name = prefix + "squeeze_excite_conv_1"})(x);
  x = hard_sigmoid(x);
  return Multiply({.name = prefix + "squeeze_excite_mul"})({in, x});
}

// One row of a stack: expansion, filters (before alpha), kernel, stride, squeeze-and-excite,
// and the activation (false: ReLU, true: the model's activation, hard_swish unless minimalistic).
struct Block {
  double expansion;
  int64_t filters, kernel, stride;
  bool se, model_activation;
};

KerasTensor inverted_res_block(const KerasTensor& in, double expansion, int64_t filters, int64_t kernel, int64_t stride,
                               double se_ratio, ActivationFn activation, int block_id) {
  const int64_t in_filters = in.shape().back();
  std::string prefix = "expanded_conv_";
  KerasTensor x = in;
  if (block_id != 0) {
    prefix = str_cat("expanded_conv_", block_id, "_");
    x = Conv2D(depth(static_cast<double>(in_filters) * expansion), 1,
               {.padding = "same", .use_bias = false, .name = prefix + "expand"})(x);
    x = activation(bn(x, prefix + "expand_bn"));
  }
  if (stride == 2) x = ZeroPadding2D(correct_pad(x, kernel), {.name = prefix + "depthwise_pad"})(x);
  x = DepthwiseConv2D(kernel, {.strides = {stride, stride}, .padding = stride == 1 ? "same" : "valid",
                               .use_bias = false, .name = prefix + "depthwise"})(x);
  x = activation(bn(x, prefix + "depthwise_bn"));
  if (se_ratio > 0) x = se_block(x, depth(static_cast<double>(in_filters) * expansion), se_ratio, prefix);
  x = Conv2D(filters, 1, {.padding = "same", .use_bias = false, .name = prefix + "project"})(x);
  x = bn(x, prefix + "project_bn");
  if (stride == 1 && in_filters == filters) return Add({.name = prefix + "add"})({in, x});
  return x;
}

Functional build_mobilenet_v3(const char* model, const std::vector<Block>& stack, int64_t last_point_channels,
                        MobileNetV3Options o) {
  const Dims shape = internal::image_shape(model, o.input_shape, o.input_tensor);
  if (o.alpha <= 0 || o.dropout_rate < 0 || o.dropout_rate >= 1)
    KILN_THROW(ValueError, "[", model, "] alpha must be > 0 and dropout_rate in [0, 1); got alpha ", o.alpha,
               ", dropout_rate ", o.dropout_rate, ".");
  const KerasTensor input = internal::image_input(shape, o.input_tensor);
  // Minimalistic: 3x3 kernels, ReLU, no squeeze-and-excite.
  const int64_t kernel = o.minimalistic ? 3 : 5;
  const ActivationFn activation = o.minimalistic ? relu : hard_swish;
  const double se_ratio = o.minimalistic ? 0.0 : 0.25;

  KerasTensor x = input;
  if (o.include_preprocessing) x = Rescaling(1.0 / 127.5, -1.0)(x);
  x = Conv2D(16, 3, {.strides = {2, 2}, .padding = "same", .use_bias = false, .name = "conv"})(x);
  x = activation(bn(x, "conv_bn"));
  for (size_t i = 0; i < stack.size(); ++i) {
    const Block& b = stack[i];
    // A row's kernel 0 is the model's kernel (5, or 3 when minimalistic), as Keras's `kernel`.
    x = inverted_res_block(x, b.expansion, depth(static_cast<double>(b.filters) * o.alpha), b.kernel == 0 ? kernel : b.kernel,
                           b.stride, b.se ? se_ratio : 0.0, b.model_activation ? activation : relu,
                           static_cast<int>(i));
  }
  const int64_t last_conv_channels = depth(static_cast<double>(x.shape().back() * 6));
  if (o.alpha > 1.0) last_point_channels = depth(static_cast<double>(last_point_channels) * o.alpha);
  x = Conv2D(last_conv_channels, 1, {.padding = "same", .use_bias = false, .name = "conv_1"})(x);
  x = activation(bn(x, "conv_1_bn"));
  if (o.include_top) {
    if (o.classes < 1) KILN_THROW(ValueError, "[", model, "] classes must be >= 1; got ", o.classes, ".");
    x = GlobalAveragePooling2D({.keepdims = true})(x);
    x = Conv2D(last_point_channels, 1, {.padding = "same", .name = "conv_2"})(x);
    x = activation(x);
    if (o.dropout_rate > 0) x = Dropout(o.dropout_rate)(x);
    x = Conv2D(o.classes, 1, {.padding = "same", .name = "logits"})(x);
    x = Flatten()(x);
    const std::string top = internal::classifier_activation(model, o.classifier_activation);
    x = Activation(top.empty() ? "linear" : top, {.name = "predictions"})(x);
  } else {
    x = internal::pooled(model, x, o.pooling, "avg_pool", "max_pool");
  }
  return internal::finish(input, x, o.name.empty() ? model : o.name, o.weights);
}

}  // namespace

Functional MobileNetV3Small(MobileNetV3Options options) {
  // Keras's stack_fn for "small"; kernel 0 = the model's kernel.
  static const std::vector<Block> stack = {
      {1, 16, 3, 2, true, false},        {72.0 / 16, 24, 3, 2, false, false}, {88.0 / 24, 24, 3, 1, false, false},
      {4, 40, 0, 2, true, true},         {6, 40, 0, 1, true, true},           {6, 40, 0, 1, true, true},
      {3, 48, 0, 1, true, true},         {3, 48, 0, 1, true, true},           {6, 96, 0, 2, true, true},
      {6, 96, 0, 1, true, true},         {6, 96, 0, 1, true, true}};
  return build_mobilenet_v3("MobileNetV3Small", stack, 1024, std::move(options));
}

Functional MobileNetV3Large(MobileNetV3Options options) {
  static const std::vector<Block> stack = {
      {1, 16, 3, 1, false, false},   {4, 24, 3, 2, false, false},   {3, 24, 3, 1, false, false},
      {3, 40, 0, 2, true, false},    {3, 40, 0, 1, true, false},    {3, 40, 0, 1, true, false},
      {6, 80, 3, 2, false, true},    {2.5, 80, 3, 1, false, true},  {2.3, 80, 3, 1, false, true},
      {2.3, 80, 3, 1, false, true},  {6, 112, 3, 1, true, true},    {6, 112, 3, 1, true, true},
      {6, 160, 0, 2, true, true},    {6, 160, 0, 1, true, true},    {6, 160, 0, 1, true, true}};
  return build_mobilenet_v3("MobileNetV3Large", stack, 1280, std::move(options));
}

}  // namespace kiln::keras::applications
