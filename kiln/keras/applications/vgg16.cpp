// VGG16 as keras/src/applications/vgg16.py builds it, with its layer names.
#include "kiln/core/str_cat.h"
#include "kiln/keras/applications/applications_impl.h"
#include "kiln/keras/layers/conv2d.h"
#include "kiln/keras/layers/dense.h"
#include "kiln/keras/layers/flatten.h"
#include "kiln/keras/layers/pooling2d.h"

namespace kiln::keras::applications {

Functional VGG16(ApplicationOptions o) {
  const Dims shape = internal::image_shape("VGG16", o.input_shape, o.input_tensor);
  const KerasTensor input = internal::image_input(shape, o.input_tensor);
  KerasTensor x = input;
  const int64_t filters[5] = {64, 128, 256, 512, 512};
  const int convs[5] = {2, 2, 3, 3, 3};
  for (int b = 0; b < 5; ++b) {
    for (int c = 1; c <= convs[b]; ++c)
      x = Conv2D(filters[b], 3, {.padding = "same", .activation = "relu", .name = str_cat("block", b + 1, "_conv", c)})(x);
    x = MaxPooling2D(2, {.strides = {2, 2}, .name = str_cat("block", b + 1, "_pool")})(x);
  }
  if (o.include_top) {
    x = Flatten({.name = "flatten"})(x);
    x = Dense(4096, {.activation = "relu", .name = "fc1"})(x);
    x = Dense(4096, {.activation = "relu", .name = "fc2"})(x);
    x = internal::predictions("VGG16", x, o.classes, o.classifier_activation);
  } else {
    x = internal::pooled("VGG16", x, o.pooling);
  }
  return internal::finish(input, x, "vgg16", o.weights);
}

}  // namespace kiln::keras::applications
