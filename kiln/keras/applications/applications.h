// keras.applications: the ImageNet architectures as Keras builds them, layer for layer and
// name for name, so that Keras's own weight files load into them (`.weights = path`) and their
// parameter counts equal Keras's published ones. Kiln downloads nothing: where Keras's default
// is weights="imagenet", Kiln's is none (random initialization) and the user gives the path of
// the file Keras would have fetched (e.g. resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5).
//
//   Functional base = applications::MobileNetV2({.input_shape = {160, 160, 3}, .include_top = false,
//                                                .weights = "mobilenet_v2_..._no_top.h5"});
//   HostTensor x = applications::mobilenet_v2::preprocess_input(images);   // [0, 255] -> [-1, 1]
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/keras/layers/keras_tensor.h"
#include "kiln/keras/models/functional.h"

namespace kiln::keras::applications {

/// ResNet*, ResNet*V2, VGG16 and DenseNet121 take Keras's arguments in Keras's order.
struct ApplicationOptions {
  bool include_top = true;  // the classifier (global pooling + Dense(classes)) on top
  /// A Keras weight file (.h5) to load, by the layers' order as Keras's load_weights does; none:
  /// random initialization (Keras's default "imagenet" would download; Kiln does not).
  std::optional<std::string> weights = std::nullopt;
  /// The tensor to build on instead of a new Input (Keras's input_tensor).
  std::optional<KerasTensor> input_tensor = std::nullopt;
  /// (rows, cols, 3); empty = (224, 224, 3). Without the top, rows and cols >= 32.
  Dims input_shape = {};
  std::string pooling = "";  // without the top: "" (the 4-D features), "avg" or "max"
  int64_t classes = 1000;
  /// The top's activation: "softmax", or "" (or "linear") for logits.
  std::string classifier_activation = "softmax";
};

/// keras.applications.MobileNet(input_shape, alpha, depth_multiplier, dropout, include_top, ...).
struct MobileNetOptions {
  Dims input_shape = {};
  double alpha = 1.0;  // the width multiplier: every layer's filters scaled by it
  int64_t depth_multiplier = 1;
  double dropout = 1e-3;  // before the top's 1x1 convolution
  bool include_top = true;
  std::optional<std::string> weights = std::nullopt;
  std::optional<KerasTensor> input_tensor = std::nullopt;
  std::string pooling = "";
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";
  std::string name = "";  // "" = Keras's "mobilenet_{alpha:.2f}_{rows}"
};

/// keras.applications.MobileNetV2(input_shape, alpha, include_top, weights, ...).
struct MobileNetV2Options {
  Dims input_shape = {};
  double alpha = 1.0;
  bool include_top = true;
  std::optional<std::string> weights = std::nullopt;
  std::optional<KerasTensor> input_tensor = std::nullopt;
  std::string pooling = "";
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";
  std::string name = "";  // "" = Keras's "mobilenetv2_{alpha:.2f}_{rows}"
};

/// keras.applications.MobileNetV3Small / MobileNetV3Large(input_shape, alpha, minimalistic,
/// include_top, weights, ...). The model rescales [0, 255] pixels itself when
/// include_preprocessing (Keras's default), so mobilenet_v3's preprocess_input is the identity.
struct MobileNetV3Options {
  Dims input_shape = {};
  double alpha = 1.0;
  /// No squeeze-and-excite, 3x3 kernels and ReLU everywhere (Keras's "minimalistic" models).
  bool minimalistic = false;
  bool include_top = true;
  std::optional<std::string> weights = std::nullopt;
  std::optional<KerasTensor> input_tensor = std::nullopt;
  int64_t classes = 1000;
  std::string pooling = "";
  double dropout_rate = 0.2;  // before the top's logits convolution
  std::string classifier_activation = "softmax";
  bool include_preprocessing = true;  // Rescaling(1 / 127.5, offset -1) first
  std::string name = "";  // "" = "MobileNetV3Small" / "MobileNetV3Large", as Keras
};

/// keras.applications.EfficientNetB0..B3(include_top, weights, input_tensor, input_shape, pooling,
/// classes, classifier_activation, **kwargs). The model rescales and normalizes [0, 255] pixels
/// itself, so efficientnet's preprocess_input is the identity.
struct EfficientNetOptions {
  bool include_top = true;
  std::optional<std::string> weights = std::nullopt;
  std::optional<KerasTensor> input_tensor = std::nullopt;
  /// (rows, cols, 3); empty = the model's size (B0 224, B1 240, B2 260, B3 300).
  Dims input_shape = {};
  std::string pooling = "";
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";
  /// Keras's keyword argument: the blocks' residual Dropout rates rise linearly from 0 to it.
  double drop_connect_rate = 0.2;
  /// Whether the stem divides by sqrt(ImageNet's stddev) per channel after its Normalization,
  /// as Keras does for weights="imagenet" only (those files hold the stddev as the variance).
  /// Unset: when `weights` is given, as Kiln's path stands for that download; set false for a
  /// file saved from a model built with weights=None.
  std::optional<bool> imagenet_rescaling = std::nullopt;
};

Functional MobileNet(MobileNetOptions options = {});
Functional MobileNetV2(MobileNetV2Options options = {});
Functional MobileNetV3Small(MobileNetV3Options options = {});
Functional MobileNetV3Large(MobileNetV3Options options = {});
Functional ResNet50(ApplicationOptions options = {});
Functional ResNet101(ApplicationOptions options = {});
Functional ResNet152(ApplicationOptions options = {});
Functional ResNet50V2(ApplicationOptions options = {});
Functional ResNet101V2(ApplicationOptions options = {});
Functional ResNet152V2(ApplicationOptions options = {});
Functional VGG16(ApplicationOptions options = {});
Functional DenseNet121(ApplicationOptions options = {});
Functional EfficientNetB0(EfficientNetOptions options = {});
Functional EfficientNetB1(EfficientNetOptions options = {});
Functional EfficientNetB2(EfficientNetOptions options = {});
Functional EfficientNetB3(EfficientNetOptions options = {});

/// One predicted class: its WordNet id, its name and the score.
struct Prediction {
  std::string class_id;
  std::string name;
  float score = 0;
};

/// keras.applications.imagenet_utils.decode_predictions: the `top` best classes of each row of
/// `preds` (batch, classes), best first, named from Keras's imagenet_class_index.json (a JSON
/// object {"0": ["n01440764", "tench"], ...}) at `class_index_path`. A ValueError when preds'
/// classes differ from the file's.
std::vector<std::vector<Prediction>> decode_predictions(const HostTensor& preds, const std::string& class_index_path,
                                                        int top = 5);

/// keras.applications.imagenet_utils.preprocess_input's modes, on a float32 batch of RGB images
/// (..., 3) in [0, 255]: "none" returns them unchanged (the models that rescale themselves:
/// mobilenet_v3, efficientnet); "tf" scales to [-1, 1]; "torch" scales to [0, 1] and normalizes by
/// ImageNet's mean and std per channel; "caffe" flips RGB to BGR and subtracts ImageNet's BGR
/// mean. Each family's own preprocess_input below names its mode, as Keras's modules do.
HostTensor preprocess_input(const HostTensor& images, const std::string& mode);

/// A family's preprocess_input, as keras.applications.<family>.preprocess_input(x).
struct Preprocess {
  const char* mode;
  HostTensor operator()(const HostTensor& images) const { return preprocess_input(images, mode); }
};
// clang-format off
namespace mobilenet { inline constexpr Preprocess preprocess_input{"tf"}; }
namespace mobilenet_v2 { inline constexpr Preprocess preprocess_input{"tf"}; }
namespace resnet { inline constexpr Preprocess preprocess_input{"caffe"}; }
namespace resnet_v2 { inline constexpr Preprocess preprocess_input{"tf"}; }
namespace vgg16 { inline constexpr Preprocess preprocess_input{"caffe"}; }
namespace densenet { inline constexpr Preprocess preprocess_input{"torch"}; }
namespace mobilenet_v3 { inline constexpr Preprocess preprocess_input{"none"}; }
namespace efficientnet { inline constexpr Preprocess preprocess_input{"none"}; }
// clang-format on

}  // namespace kiln::keras::applications
