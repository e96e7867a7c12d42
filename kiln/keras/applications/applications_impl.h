// What every keras.applications builder shares: the input, the top or the pooling, the model and
// its weights (imagenet_utils.py and the tails of Keras's builders).
#pragma once

#include <optional>
#include <string>

#include "kiln/keras/applications/applications.h"
#include "kiln/keras/layers/reshaping.h"

namespace kiln::keras::applications::internal {

/// The image shape a builder uses: `input_shape`, the input tensor's shape, or (224, 224, 3);
/// a ValueError naming `model` when it is not (rows, cols, channels) with rows, cols >= 32.
Dims image_shape(const std::string& model, const Dims& input_shape, const std::optional<KerasTensor>& input_tensor);

/// `input_tensor`, or a new Input of `shape`.
KerasTensor image_input(const Dims& shape, const std::optional<KerasTensor>& input_tensor);

/// Without the top: the features (`pooling` ""), or their global average ("avg") or max
/// ("max") pooling, named `avg_name` / `max_name` where Keras names them ("" = auto). A
/// ValueError naming `model` for another pooling.
KerasTensor pooled(const std::string& model, const KerasTensor& x, const std::string& pooling,
                   const std::string& avg_name = "", const std::string& max_name = "");

/// The top's activation checked as Keras's validate_activation does: "softmax", or "" for none
/// ("linear" is none too); a ValueError naming `model` otherwise.
std::string classifier_activation(const std::string& model, const std::string& activation);

/// Dense(classes, classifier_activation, name="predictions").
KerasTensor predictions(const std::string& model, const KerasTensor& x, int64_t classes,
                        const std::string& classifier_activation);

/// mobilenet's _make_divisible / mobilenet_v3's _depth: `v` rounded to a multiple of `divisor`
/// (at least `divisor`), never more than 10% below `v`.
int64_t make_divisible(double v, int64_t divisor = 8);

/// imagenet_utils.correct_pad: the ZeroPadding2D before a stride-2 "valid" convolution of
/// `kernel_size` that makes it see TensorFlow's "same" padding of `x`.
Edges2D correct_pad(const KerasTensor& x, int64_t kernel_size);

/// "mobilenet_1.00_224": the name Keras gives `family` at width `alpha` (f"{alpha:0.2f}").
std::string default_name(const char* family, double alpha, int64_t rows);

/// The model from `input` to `x`, named `name`, with `weights` loaded (Keras's load_weights: by
/// the layers' order; an IOError or ValueError naming the file when it does not fit).
Functional finish(const KerasTensor& input, const KerasTensor& x, const std::string& name,
                  const std::optional<std::string>& weights);

}  // namespace kiln::keras::applications::internal
