// ResNet50/101/152 and their V2s as keras/src/applications/resnet.py and resnet_v2.py build them,
// with their layer names.
#include "kiln/core/str_cat.h"
#include "kiln/keras/applications/applications_impl.h"
#include "kiln/keras/layers/activation.h"
#include "kiln/keras/layers/add.h"
#include "kiln/keras/layers/batch_normalization.h"
#include "kiln/keras/layers/conv2d.h"
#include "kiln/keras/layers/global_average_pooling2d.h"
#include "kiln/keras/layers/pooling2d.h"
#include "kiln/keras/layers/reshaping.h"

namespace kiln::keras::applications {
namespace {

KerasTensor bn(const KerasTensor& x, const std::string& name) {
  return BatchNormalization({.epsilon = 1.001e-5, .name = name})(x);
}
KerasTensor relu(const KerasTensor& x, const std::string& name) { return Activation("relu", {.name = name})(x); }

KerasTensor residual_block_v1(const KerasTensor& in, int64_t filters, int64_t stride, bool conv_shortcut,
                              const std::string& name) {
  KerasTensor shortcut = in;
  if (conv_shortcut) {
    shortcut = Conv2D(4 * filters, 1, {.strides = {stride, stride}, .name = name + "_0_conv"})(in);
    shortcut = bn(shortcut, name + "_0_bn");
  }
  KerasTensor x = Conv2D(filters, 1, {.strides = {stride, stride}, .name = name + "_1_conv"})(in);
  x = relu(bn(x, name + "_1_bn"), name + "_1_relu");
  x = Conv2D(filters, 3, {.padding = "same", .name = name + "_2_conv"})(x);
  x = relu(bn(x, name + "_2_bn"), name + "_2_relu");
  x = bn(Conv2D(4 * filters, 1, {.name = name + "_3_conv"})(x), name + "_3_bn");
  x = Add({.name = name + "_add"})({shortcut, x});
  return relu(x, name + "_out");
}

KerasTensor stack_v1(KerasTensor x, int64_t filters, int blocks, int64_t stride1, const std::string& name) {
  x = residual_block_v1(x, filters, stride1, true, name + "_block1");
  for (int i = 2; i <= blocks; ++i) x = residual_block_v1(x, filters, 1, false, str_cat(name, "_block", i));
  return x;
}

KerasTensor residual_block_v2(const KerasTensor& in, int64_t filters, int64_t stride, bool conv_shortcut,
                              const std::string& name) {
  const KerasTensor preact = relu(bn(in, name + "_preact_bn"), name + "_preact_relu");
  KerasTensor shortcut = in;
  if (conv_shortcut) shortcut = Conv2D(4 * filters, 1, {.strides = {stride, stride}, .name = name + "_0_conv"})(preact);
  else if (stride > 1) shortcut = MaxPooling2D(1, {.strides = {stride, stride}})(in);
  KerasTensor x = Conv2D(filters, 1, {.use_bias = false, .name = name + "_1_conv"})(preact);
  x = relu(bn(x, name + "_1_bn"), name + "_1_relu");
  x = ZeroPadding2D(1, {.name = name + "_2_pad"})(x);
  x = Conv2D(filters, 3, {.strides = {stride, stride}, .use_bias = false, .name = name + "_2_conv"})(x);
  x = relu(bn(x, name + "_2_bn"), name + "_2_relu");
  x = Conv2D(4 * filters, 1, {.name = name + "_3_conv"})(x);
  return Add({.name = name + "_out"})({shortcut, x});
}

KerasTensor stack_v2(KerasTensor x, int64_t filters, int blocks, int64_t stride1, const std::string& name) {
  x = residual_block_v2(x, filters, 1, true, name + "_block1");
  for (int i = 2; i < blocks; ++i) x = residual_block_v2(x, filters, 1, false, str_cat(name, "_block", i));
  return residual_block_v2(x, filters, stride1, false, str_cat(name, "_block", blocks));
}

// resnet.py's ResNet(): the stem, the four stacks (blocks per stack), the top. `preact`: V2.
// `model` names it in errors, `keras_name` is the model's name in Keras ("resnet50v2").
Functional build_resnet(const std::string& model, const std::string& keras_name, const int (&blocks)[4], bool preact,
                        const ApplicationOptions& o) {
  const Dims shape = internal::image_shape(model, o.input_shape, o.input_tensor);
  const KerasTensor input = internal::image_input(shape, o.input_tensor);
  KerasTensor x = ZeroPadding2D(3, {.name = "conv1_pad"})(input);
  x = Conv2D(64, 7, {.strides = {2, 2}, .name = "conv1_conv"})(x);
  if (!preact) x = relu(bn(x, "conv1_bn"), "conv1_relu");
  x = ZeroPadding2D(1, {.name = "pool1_pad"})(x);
  x = MaxPooling2D(3, {.strides = {2, 2}, .name = "pool1_pool"})(x);
  const int64_t filters[4] = {64, 128, 256, 512};
  for (int s = 0; s < 4; ++s) {
    const std::string name = str_cat("conv", s + 2);
    // V1 strides in each stack's first block (but the first stack's); V2 in each last block
    // (but the last stack's).
    if (preact) x = stack_v2(x, filters[s], blocks[s], s == 3 ? 1 : 2, name);
    else x = stack_v1(x, filters[s], blocks[s], s == 0 ? 1 : 2, name);
  }
  if (preact) x = relu(bn(x, "post_bn"), "post_relu");
  if (o.include_top) {
    x = GlobalAveragePooling2D({.name = "avg_pool"})(x);
    x = internal::predictions(model, x, o.classes, o.classifier_activation);
  } else {
    x = internal::pooled(model, x, o.pooling, "avg_pool", "max_pool");
  }
  return internal::finish(input, x, keras_name, o.weights);
}

}  // namespace

Functional ResNet50(ApplicationOptions o) { return build_resnet("ResNet50", "resnet50", {3, 4, 6, 3}, false, o); }
Functional ResNet101(ApplicationOptions o) { return build_resnet("ResNet101", "resnet101", {3, 4, 23, 3}, false, o); }
Functional ResNet152(ApplicationOptions o) { return build_resnet("ResNet152", "resnet152", {3, 8, 36, 3}, false, o); }
Functional ResNet50V2(ApplicationOptions o) { return build_resnet("ResNet50V2", "resnet50v2", {3, 4, 6, 3}, true, o); }
Functional ResNet101V2(ApplicationOptions o) { return build_resnet("ResNet101V2", "resnet101v2", {3, 4, 23, 3}, true, o); }
Functional ResNet152V2(ApplicationOptions o) { return build_resnet("ResNet152V2", "resnet152v2", {3, 8, 36, 3}, true, o); }

}  // namespace kiln::keras::applications
