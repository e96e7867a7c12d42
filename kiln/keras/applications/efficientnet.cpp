// EfficientNetB0-B3 as keras/src/applications/efficientnet.py (Keras 3; tf-keras 2.15 builds the
// same graph) builds them, with Keras's layer names: the stem (Rescaling(1/255), Normalization,
// and for ImageNet weights Rescaling(1 / sqrt(stddev)) per channel), the MBConv blocks scaled by
// the width and depth coefficients, the top. The official weight files load into it by order
// or by name, Normalization's mean, variance and count included.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "kiln/core/check.h"
#include "kiln/core/str_cat.h"
#include "kiln/keras/applications/applications_impl.h"
#include "kiln/keras/layers/activation.h"
#include "kiln/keras/layers/add.h"
#include "kiln/keras/layers/batch_normalization.h"
#include "kiln/keras/layers/conv2d.h"
#include "kiln/keras/layers/dense.h"
#include "kiln/keras/layers/depthwise_conv2d.h"
#include "kiln/keras/layers/dropout.h"
#include "kiln/keras/layers/global_average_pooling2d.h"
#include "kiln/keras/layers/merging.h"
#include "kiln/keras/layers/normalization.h"
#include "kiln/keras/layers/rescaling.h"
#include "kiln/keras/layers/reshape.h"
#include "kiln/keras/layers/reshaping.h"

namespace kiln::keras::applications {
namespace {

// Keras's CONV_KERNEL_INITIALIZER and DENSE_KERNEL_INITIALIZER.
Initializer variance_scaling(double scale, const char* distribution) {
  Initializer i("variance_scaling");
  i.scale = scale;
  i.mode = "fan_out";
  i.distribution = distribution;
  return i;
}
Initializer conv_init() { return variance_scaling(2.0, "truncated_normal"); }

// One row of DEFAULT_BLOCKS_ARGS (id_skip is true and se_ratio 0.25 in every row).
struct BlockArgs {
  int64_t kernel_size, repeats, filters_in, filters_out, expand_ratio, strides;
};
constexpr BlockArgs kBlocks[] = {{3, 1, 32, 16, 1, 1},   {3, 2, 16, 24, 6, 2},  {5, 2, 24, 40, 6, 2},
                                 {3, 3, 40, 80, 6, 2},   {5, 3, 80, 112, 6, 1}, {5, 4, 112, 192, 6, 2},
                                 {3, 1, 192, 320, 6, 1}};
constexpr double kSeRatio = 0.25;
constexpr double kImagenetStddevRgb[3] = {0.229, 0.224, 0.225};

KerasTensor bn(const KerasTensor& x, const std::string& name) { return BatchNormalization({.name = name})(x); }
KerasTensor swish(const KerasTensor& x, const std::string& name) { return Activation("swish", {.name = name})(x); }

// efficientnet.py's block(): expansion, depthwise convolution, squeeze-and-excite, projection,
// and the residual (with drop-connect: Dropout of whole examples) where shapes allow.
KerasTensor mb_conv_block(const KerasTensor& in, double drop_rate, const std::string& name, int64_t filters_in,
                          int64_t filters_out, int64_t kernel_size, int64_t strides, int64_t expand_ratio) {
  const int64_t filters = filters_in * expand_ratio;
  KerasTensor x = in;
  if (expand_ratio != 1) {
    x = Conv2D(filters, 1, {.padding = "same", .use_bias = false, .kernel_initializer = conv_init(),
                            .name = name + "expand_conv"})(x);
    x = swish(bn(x, name + "expand_bn"), name + "expand_activation");
  }
  if (strides == 2) x = ZeroPadding2D(internal::correct_pad(x, kernel_size), {.name = name + "dwconv_pad"})(x);
  x = DepthwiseConv2D(kernel_size, {.strides = {strides, strides}, .padding = strides == 2 ? "valid" : "same",
                                    .use_bias = false, .depthwise_initializer = conv_init(), .name = name + "dwconv"})(x);
  x = swish(bn(x, name + "bn"), name + "activation");

  const int64_t filters_se = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(filters_in) * kSeRatio));
  KerasTensor se = GlobalAveragePooling2D({.name = name + "se_squeeze"})(x);
  se = Reshape({1, 1, filters}, {.name = name + "se_reshape"})(se);
  se = Conv2D(filters_se, 1, {.padding = "same", .activation = "swish", .kernel_initializer = conv_init(),
                              .name = name + "se_reduce"})(se);
  se = Conv2D(filters, 1, {.padding = "same", .activation = "sigmoid", .kernel_initializer = conv_init(),
                           .name = name + "se_expand"})(se);
  x = Multiply({.name = name + "se_excite"})({x, se});

  x = Conv2D(filters_out, 1, {.padding = "same", .use_bias = false, .kernel_initializer = conv_init(),
                              .name = name + "project_conv"})(x);
  x = bn(x, name + "project_bn");
  if (strides == 1 && filters_in == filters_out) {
    if (drop_rate > 0) x = Dropout(drop_rate, {.noise_shape = Dims{kNoneDim, 1, 1, 1}, .name = name + "drop"})(x);
    x = Add({.name = name + "add"})({x, in});
  }
  return x;
}

// efficientnet.py's EfficientNet(): `model` names it in errors, `keras_name` in Keras.
Functional build_efficientnet(const std::string& model, const std::string& keras_name, double width_coefficient,
                              double depth_coefficient, int64_t default_size, double dropout_rate,
                              const EfficientNetOptions& o) {
  const Dims shape = internal::image_shape(
      model, o.input_shape.empty() && !o.input_tensor ? Dims{default_size, default_size, 3} : o.input_shape,
      o.input_tensor);
  if (o.drop_connect_rate < 0 || o.drop_connect_rate >= 1)
    KILN_THROW(ValueError, "[", model, "] drop_connect_rate must be in [0, 1); got ", o.drop_connect_rate, ".");
  const KerasTensor input = internal::image_input(shape, o.input_tensor);
  auto round_filters = [&](int64_t filters) {
    return internal::make_divisible(static_cast<double>(filters) * width_coefficient, /*divisor=*/8);
  };
  auto round_repeats = [&](int64_t repeats) {
    return static_cast<int64_t>(std::ceil(depth_coefficient * static_cast<double>(repeats)));
  };

  KerasTensor x = Rescaling(1.0 / 255.0)(input);
  x = Normalization({.axis = std::vector<int>{-1}})(x);
  // ImageNet files hold the stddev, not its square, as the Normalization's variance: dividing
  // once more by sqrt(stddev) divides by the stddev (Keras 3 / tf-keras; tensorflow#49930).
  if (o.imagenet_rescaling.value_or(o.weights.has_value())) {
    std::vector<double> scale;
    for (double s : kImagenetStddevRgb) scale.push_back(1.0 / std::sqrt(s));
    x = Rescaling(scale, {0.0})(x);
  }
  x = ZeroPadding2D(internal::correct_pad(x, 3), {.name = "stem_conv_pad"})(x);
  x = Conv2D(round_filters(32), 3, {.strides = {2, 2}, .padding = "valid", .use_bias = false,
                                    .kernel_initializer = conv_init(), .name = "stem_conv"})(x);
  x = swish(bn(x, "stem_bn"), "stem_activation");

  int64_t total = 0;
  for (const BlockArgs& a : kBlocks) total += round_repeats(a.repeats);
  const double blocks = static_cast<double>(total);
  int64_t b = 0;
  for (size_t i = 0; i < std::size(kBlocks); ++i) {
    const BlockArgs& a = kBlocks[i];
    int64_t filters_in = round_filters(a.filters_in), strides = a.strides;
    const int64_t filters_out = round_filters(a.filters_out);
    for (int64_t j = 0; j < round_repeats(a.repeats); ++j, ++b) {
      if (j > 0) {  // only the first block of a row changes stride and width
        strides = 1;
        filters_in = filters_out;
      }
      const std::string name = str_cat("block", i + 1, static_cast<char>('a' + j), "_");
      x = mb_conv_block(x, o.drop_connect_rate * static_cast<double>(b) / blocks, name, filters_in, filters_out,
                        a.kernel_size, strides, a.expand_ratio);
    }
  }

  x = Conv2D(round_filters(1280), 1, {.padding = "same", .use_bias = false, .kernel_initializer = conv_init(),
                                      .name = "top_conv"})(x);
  x = swish(bn(x, "top_bn"), "top_activation");
  if (o.include_top) {
    if (o.classes < 1) KILN_THROW(ValueError, "[", model, "] classes must be >= 1; got ", o.classes, ".");
    x = GlobalAveragePooling2D({.name = "avg_pool"})(x);
    if (dropout_rate > 0) x = Dropout(dropout_rate, {.name = "top_dropout"})(x);
    x = Dense(o.classes, {.activation = internal::classifier_activation(model, o.classifier_activation),
                          .kernel_initializer = variance_scaling(1.0 / 3.0, "uniform"), .name = "predictions"})(x);
  } else {
    x = internal::pooled(model, x, o.pooling, "avg_pool", "max_pool");
  }
  return internal::finish(input, x, keras_name, o.weights);
}

}  // namespace

// Keras's (width, depth, default size, dropout) per model.
Functional EfficientNetB0(EfficientNetOptions o) {
  return build_efficientnet("EfficientNetB0", "efficientnetb0", 1.0, 1.0, 224, 0.2, o);
}
Functional EfficientNetB1(EfficientNetOptions o) {
  return build_efficientnet("EfficientNetB1", "efficientnetb1", 1.0, 1.1, 240, 0.2, o);
}
Functional EfficientNetB2(EfficientNetOptions o) {
  return build_efficientnet("EfficientNetB2", "efficientnetb2", 1.1, 1.2, 260, 0.3, o);
}
Functional EfficientNetB3(EfficientNetOptions o) {
  return build_efficientnet("EfficientNetB3", "efficientnetb3", 1.2, 1.4, 300, 0.3, o);
}

}  // namespace kiln::keras::applications
