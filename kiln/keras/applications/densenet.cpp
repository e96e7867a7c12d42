// DenseNet121 as keras/src/applications/densenet.py builds it, with its layer names.
#include "kiln/core/str_cat.h"
#include "kiln/keras/applications/applications_impl.h"
#include "kiln/keras/layers/activation.h"
#include "kiln/keras/layers/batch_normalization.h"
#include "kiln/keras/layers/concatenate.h"
#include "kiln/keras/layers/conv2d.h"
#include "kiln/keras/layers/global_average_pooling2d.h"
#include "kiln/keras/layers/pooling2d.h"
#include "kiln/keras/layers/reshaping.h"

namespace kiln::keras::applications {
namespace {

KerasTensor bn_relu(const KerasTensor& x, const std::string& name) {
  const KerasTensor y = BatchNormalization({.epsilon = 1.001e-5, .name = name + "_bn"})(x);
  return Activation("relu", {.name = name + "_relu"})(y);
}

// One growth step: BN-ReLU-1x1 (4 * growth) - BN-ReLU-3x3 (growth), concatenated to its input.
KerasTensor conv_block(const KerasTensor& x, int64_t growth_rate, const std::string& name) {
  KerasTensor x1 = bn_relu(x, name + "_0");
  x1 = Conv2D(4 * growth_rate, 1, {.use_bias = false, .name = name + "_1_conv"})(x1);
  x1 = bn_relu(x1, name + "_1");
  x1 = Conv2D(growth_rate, 3, {.padding = "same", .use_bias = false, .name = name + "_2_conv"})(x1);
  return Concatenate({.axis = 3, .name = name + "_concat"})({x, x1});
}

KerasTensor transition_block(const KerasTensor& in, double reduction, const std::string& name) {
  KerasTensor x = bn_relu(in, name);
  x = Conv2D(static_cast<int64_t>(static_cast<double>(x.shape().back()) * reduction), 1,
             {.use_bias = false, .name = name + "_conv"})(x);
  return AveragePooling2D(2, {.strides = {2, 2}, .name = name + "_pool"})(x);
}

}  // namespace

Functional DenseNet121(ApplicationOptions o) {
  const Dims shape = internal::image_shape("DenseNet121", o.input_shape, o.input_tensor);
  const KerasTensor input = internal::image_input(shape, o.input_tensor);
  KerasTensor x = ZeroPadding2D(3)(input);
  x = Conv2D(64, 7, {.strides = {2, 2}, .use_bias = false, .name = "conv1_conv"})(x);
  x = bn_relu(x, "conv1");
  x = ZeroPadding2D(1)(x);
  x = MaxPooling2D(3, {.strides = {2, 2}, .name = "pool1"})(x);
  const int blocks[4] = {6, 12, 24, 16};
  for (int s = 0; s < 4; ++s) {
    for (int i = 1; i <= blocks[s]; ++i) x = conv_block(x, 32, str_cat("conv", s + 2, "_block", i));
    if (s < 3) x = transition_block(x, 0.5, str_cat("pool", s + 2));
  }
  x = BatchNormalization({.epsilon = 1.001e-5, .name = "bn"})(x);
  x = Activation("relu", {.name = "relu"})(x);
  if (o.include_top) {
    x = GlobalAveragePooling2D({.name = "avg_pool"})(x);
    x = internal::predictions("DenseNet121", x, o.classes, o.classifier_activation);
  } else {
    x = internal::pooled("DenseNet121", x, o.pooling, "avg_pool", "max_pool");
  }
  return internal::finish(input, x, "densenet121", o.weights);
}

}  // namespace kiln::keras::applications
