// MobileNet (v1) and MobileNetV2 as keras/src/applications/mobilenet.py and mobilenet_v2.py build
// them, with their layer names.
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
#include "kiln/keras/layers/global_average_pooling2d.h"
#include "kiln/keras/layers/reshape.h"
#include "kiln/keras/layers/reshaping.h"

namespace kiln::keras::applications {
namespace {

using internal::correct_pad;
using internal::default_name;
using internal::finish;
using internal::make_divisible;

KerasTensor relu6(const KerasTensor& x, const std::string& name) { return ReLU({.max_value = 6.0, .name = name})(x); }

// MobileNet v1's BatchNormalization keeps Keras's defaults (epsilon 1e-3, momentum 0.99).
KerasTensor bn_v1(const KerasTensor& x, const std::string& name) { return BatchNormalization({.name = name})(x); }

KerasTensor depthwise_block_v1(const KerasTensor& in, int64_t pointwise_filters, double alpha, int64_t depth_multiplier,
                               int64_t stride, int block_id) {
  const int64_t filters = static_cast<int64_t>(static_cast<double>(pointwise_filters) * alpha);
  KerasTensor x = in;
  if (stride != 1) x = ZeroPadding2D(Edges2D({0, 1}, {0, 1}), {.name = str_cat("conv_pad_", block_id)})(x);
  x = DepthwiseConv2D(3, {.strides = {stride, stride}, .padding = stride == 1 ? "same" : "valid",
                          .depth_multiplier = depth_multiplier, .use_bias = false, .name = str_cat("conv_dw_", block_id)})(x);
  x = relu6(bn_v1(x, str_cat("conv_dw_", block_id, "_bn")), str_cat("conv_dw_", block_id, "_relu"));
  x = Conv2D(filters, 1, {.padding = "same", .use_bias = false, .name = str_cat("conv_pw_", block_id)})(x);
  return relu6(bn_v1(x, str_cat("conv_pw_", block_id, "_bn")), str_cat("conv_pw_", block_id, "_relu"));
}

// MobileNetV2's BatchNormalization: epsilon 1e-3, momentum 0.999.
KerasTensor bn_v2(const KerasTensor& x, const std::string& name) {
  return BatchNormalization({.momentum = 0.999, .epsilon = 1e-3, .name = name})(x);
}

KerasTensor inverted_res_block(const KerasTensor& in, int64_t expansion, int64_t stride, double alpha, int64_t filters,
                               int block_id) {
  const int64_t in_channels = in.shape().back();
  const int64_t pointwise_filters = make_divisible(static_cast<double>(static_cast<int64_t>(static_cast<double>(filters) * alpha)));
  std::string prefix = str_cat("block_", block_id, "_");
  KerasTensor x = in;
  if (block_id != 0) {
    x = Conv2D(expansion * in_channels, 1, {.padding = "same", .use_bias = false, .name = prefix + "expand"})(x);
    x = relu6(bn_v2(x, prefix + "expand_BN"), prefix + "expand_relu");
  } else {
    prefix = "expanded_conv_";
  }
  if (stride == 2) x = ZeroPadding2D(correct_pad(x, 3), {.name = prefix + "pad"})(x);
  x = DepthwiseConv2D(3, {.strides = {stride, stride}, .padding = stride == 1 ? "same" : "valid", .use_bias = false,
                          .name = prefix + "depthwise"})(x);
  x = relu6(bn_v2(x, prefix + "depthwise_BN"), prefix + "depthwise_relu");
  x = Conv2D(pointwise_filters, 1, {.padding = "same", .use_bias = false, .name = prefix + "project"})(x);
  x = bn_v2(x, prefix + "project_BN");
  if (in_channels == pointwise_filters && stride == 1) return Add({.name = prefix + "add"})({in, x});
  return x;
}

}  // namespace

Functional MobileNet(MobileNetOptions o) {
  const Dims shape = internal::image_shape("MobileNet", o.input_shape, o.input_tensor);
  if (o.alpha <= 0 || o.depth_multiplier < 1 || o.dropout < 0 || o.dropout >= 1)
    KILN_THROW(ValueError, "[MobileNet] alpha must be > 0, depth_multiplier >= 1 and dropout in [0, 1); got alpha ",
               o.alpha, ", depth_multiplier ", o.depth_multiplier, ", dropout ", o.dropout, ".");
  const KerasTensor input = internal::image_input(shape, o.input_tensor);
  KerasTensor x = Conv2D(static_cast<int64_t>(32 * o.alpha), 3,
                         {.strides = {2, 2}, .padding = "same", .use_bias = false, .name = "conv1"})(input);
  x = relu6(bn_v1(x, "conv1_bn"), "conv1_relu");
  struct Block {
    int64_t filters, stride;
  };
  const Block blocks[] = {{64, 1},  {128, 2}, {128, 1}, {256, 2}, {256, 1}, {512, 2}, {512, 1},
                          {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1}};
  for (int i = 0; i < 13; ++i)
    x = depthwise_block_v1(x, blocks[i].filters, o.alpha, o.depth_multiplier, blocks[i].stride, i + 1);
  if (o.include_top) {
    x = GlobalAveragePooling2D({.keepdims = true})(x);
    x = Dropout(o.dropout, {.name = "dropout"})(x);
    x = Conv2D(o.classes, 1, {.padding = "same", .name = "conv_preds"})(x);
    x = Reshape({o.classes}, {.name = "reshape_2"})(x);
    const std::string activation = internal::classifier_activation("MobileNet", o.classifier_activation);
    x = Activation(activation.empty() ? "linear" : activation, {.name = "predictions"})(x);
  } else {
    x = internal::pooled("MobileNet", x, o.pooling);
  }
  return finish(input, x, o.name.empty() ? default_name("mobilenet", o.alpha, shape[0]) : o.name, o.weights);
}

Functional MobileNetV2(MobileNetV2Options o) {
  const Dims shape = internal::image_shape("MobileNetV2", o.input_shape, o.input_tensor);
  if (o.alpha <= 0) KILN_THROW(ValueError, "[MobileNetV2] alpha must be > 0; got ", o.alpha, ".");
  const KerasTensor input = internal::image_input(shape, o.input_tensor);
  KerasTensor x = Conv2D(make_divisible(32 * o.alpha), 3,
                         {.strides = {2, 2}, .padding = "same", .use_bias = false, .name = "Conv1"})(input);
  x = relu6(bn_v2(x, "bn_Conv1"), "Conv1_relu");
  struct Block {
    int64_t filters, stride, expansion;
  };
  const Block blocks[] = {{16, 1, 1},  {24, 2, 6},  {24, 1, 6},  {32, 2, 6},  {32, 1, 6},  {32, 1, 6},
                          {64, 2, 6},  {64, 1, 6},  {64, 1, 6},  {64, 1, 6},  {96, 1, 6},  {96, 1, 6},
                          {96, 1, 6},  {160, 2, 6}, {160, 1, 6}, {160, 1, 6}, {320, 1, 6}};
  for (int i = 0; i < 17; ++i) x = inverted_res_block(x, blocks[i].expansion, blocks[i].stride, o.alpha, blocks[i].filters, i);
  // No alpha on the last convolution below 1.0, as the paper says.
  const int64_t last_filters = o.alpha > 1.0 ? make_divisible(1280 * o.alpha) : 1280;
  x = Conv2D(last_filters, 1, {.use_bias = false, .name = "Conv_1"})(x);
  x = relu6(bn_v2(x, "Conv_1_bn"), "out_relu");
  if (o.include_top) {
    x = GlobalAveragePooling2D()(x);
    x = internal::predictions("MobileNetV2", x, o.classes, o.classifier_activation);
  } else {
    x = internal::pooled("MobileNetV2", x, o.pooling);
  }
  return finish(input, x, o.name.empty() ? default_name("mobilenetv2", o.alpha, shape[0]) : o.name, o.weights);
}

}  // namespace kiln::keras::applications
