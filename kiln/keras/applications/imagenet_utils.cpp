// imagenet_utils.py's parts: input shapes, the top, weights, preprocess_input and
// decode_predictions.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/core/str_cat.h"
#include "kiln/keras/applications/applications_impl.h"
#include "kiln/keras/layers/dense.h"
#include "kiln/keras/layers/global_average_pooling2d.h"
#include "kiln/keras/layers/pooling1d.h"

namespace kiln::keras::applications {
namespace internal {

Dims image_shape(const std::string& model, const Dims& input_shape, const std::optional<KerasTensor>& input_tensor) {
  Dims shape = !input_shape.empty() ? input_shape : input_tensor ? input_tensor->shape() : Dims{224, 224, 3};
  if (shape.size() != 3 || shape[0] < 32 || shape[1] < 32 || shape[2] < 1)
    KILN_THROW(ValueError, "[", model, "] input_shape must be (rows, cols, channels) with rows and cols >= 32, "
               "as in Keras; got ", dims_to_string(shape), ".");
  return shape;
}

KerasTensor image_input(const Dims& shape, const std::optional<KerasTensor>& input_tensor) {
  return input_tensor ? *input_tensor : Input(shape);
}

KerasTensor pooled(const std::string& model, const KerasTensor& x, const std::string& pooling,
                   const std::string& avg_name, const std::string& max_name) {
  if (pooling.empty()) return x;
  if (pooling == "avg") return GlobalAveragePooling2D({.name = avg_name})(x);
  if (pooling == "max") return GlobalMaxPooling2D({.name = max_name})(x);
  KILN_THROW(ValueError, "[", model, "] pooling must be \"\" (none), \"avg\" or \"max\"; got \"", pooling, "\".");
}

std::string classifier_activation(const std::string& model, const std::string& activation) {
  if (activation == "" || activation == "linear") return "";
  if (activation == "softmax") return activation;
  KILN_THROW(ValueError, "[", model, "] classifier_activation must be \"softmax\" or \"\" (logits), as Keras's "
             "validate_activation allows for ImageNet weights; got \"", activation, "\".");
}

KerasTensor predictions(const std::string& model, const KerasTensor& x, int64_t classes,
                        const std::string& activation) {
  if (classes < 1) KILN_THROW(ValueError, "[", model, "] classes must be >= 1; got ", classes, ".");
  return Dense(classes, {.activation = classifier_activation(model, activation), .name = "predictions"})(x);
}

int64_t make_divisible(double v, int64_t divisor) {
  int64_t rounded = std::max<int64_t>(divisor, static_cast<int64_t>(v + static_cast<double>(divisor) / 2) / divisor * divisor);
  if (static_cast<double>(rounded) < 0.9 * v) rounded += divisor;  // never more than 10% down
  return rounded;
}

Edges2D correct_pad(const KerasTensor& x, int64_t kernel_size) {
  const Dims& d = x.shape();
  const int64_t adjust_rows = 1 - d[0] % 2, adjust_cols = 1 - d[1] % 2, half = kernel_size / 2;
  return Edges2D({half - adjust_rows, half}, {half - adjust_cols, half});
}

std::string default_name(const char* family, double alpha, int64_t rows) {
  char text[64];
  std::snprintf(text, sizeof text, "%s_%0.2f_%lld", family, alpha, static_cast<long long>(rows));
  return text;
}

Functional finish(const KerasTensor& input, const KerasTensor& x, const std::string& name,
                  const std::optional<std::string>& weights) {
  Functional model({input}, x, {.name = name});
  if (weights) model.load_weights(*weights);
  return model;
}

}  // namespace internal

HostTensor preprocess_input(const HostTensor& images, const std::string& mode) {
  const Shape& s = images.shape();
  if (s.dtype() != DType::kF32 || s.rank() < 1 || s.dims().back() != 3)
    KILN_THROW(ValueError, "[preprocess_input] expects float32 RGB images (..., 3) in [0, 255]; got ", s, ".");
  if (mode != "tf" && mode != "torch" && mode != "caffe" && mode != "none")
    KILN_THROW(ValueError, "[preprocess_input] mode must be \"tf\", \"torch\", \"caffe\" or \"none\"; got \"", mode,
               "\".");
  if (mode == "none") return images.clone();  // Keras's placeholder: the model rescales itself
  HostTensor out(s);
  const float* in = static_cast<const float*>(images.raw_data());
  float* o = static_cast<float*>(out.raw_data());
  const int64_t pixels = s.num_elements() / 3;
  // ImageNet's statistics, as imagenet_utils.py has them.
  constexpr float kTorchMean[3] = {0.485f, 0.456f, 0.406f}, kTorchStd[3] = {0.229f, 0.224f, 0.225f};
  constexpr float kCaffeMeanBgr[3] = {103.939f, 116.779f, 123.68f};
  auto each_pixel = [&](auto channel) {
    for (int64_t p = 0; p < pixels; ++p)
      for (int c = 0; c < 3; ++c) o[3 * p + c] = channel(in + 3 * p, c);
  };
  if (mode == "tf") each_pixel([](const float* px, int c) { return px[c] / 127.5f - 1.0f; });
  else if (mode == "torch") each_pixel([&](const float* px, int c) { return (px[c] / 255.0f - kTorchMean[c]) / kTorchStd[c]; });
  else each_pixel([&](const float* px, int c) { return px[2 - c] - kCaffeMeanBgr[c]; });  // BGR, zero-centred
  return out;
}

std::vector<std::vector<Prediction>> decode_predictions(const HostTensor& preds, const std::string& class_index_path,
                                                        int top) {
  const Shape& s = preds.shape();
  if (s.rank() != 2) KILN_THROW(ValueError, "[decode_predictions] expects predictions (batch, classes); got ", s, ".");
  std::ifstream file(class_index_path);
  if (!file) KILN_THROW(IOError, "[decode_predictions] cannot open the class index '", class_index_path, "'.");
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(file);
  } catch (const nlohmann::json::exception& e) {
    KILN_THROW(IOError, "[decode_predictions] '", class_index_path, "' is not JSON: ", e.what());
  }
  const int64_t classes = s.dims()[1];
  if (!index.is_object() || static_cast<int64_t>(index.size()) != classes)
    KILN_THROW(ValueError, "[decode_predictions] '", class_index_path, "' names ", index.size(),
               " classes; the predictions have ", classes, ".");
  std::vector<std::pair<std::string, std::string>> names(static_cast<size_t>(classes));
  for (int64_t k = 0; k < classes; ++k) {
    const auto entry = index.find(std::to_string(k));
    if (entry == index.end() || !entry->is_array() || entry->size() != 2 || !(*entry)[0].is_string() ||
        !(*entry)[1].is_string())
      KILN_THROW(IOError, "[decode_predictions] '", class_index_path, "' has no [\"wnid\", \"name\"] entry \"", k, "\".");
    names[static_cast<size_t>(k)] = {(*entry)[0].get<std::string>(), (*entry)[1].get<std::string>()};
  }
  const std::vector<double> p = preds.to_vector<double>();
  std::vector<std::vector<Prediction>> out;
  for (int64_t r = 0; r < s.dims()[0]; ++r) {
    std::vector<int64_t> order(static_cast<size_t>(classes));
    std::iota(order.begin(), order.end(), 0);
    const double* row = p.data() + r * classes;
    const int64_t k = std::min<int64_t>(std::max(top, 0), classes);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    std::vector<Prediction>& best = out.emplace_back();
    for (int64_t i = 0; i < k; ++i) {
      const auto& [id, name] = names[static_cast<size_t>(order[static_cast<size_t>(i)])];
      best.push_back({id, name, static_cast<float>(row[order[static_cast<size_t>(i)]])});
    }
  }
  return out;
}

}  // namespace kiln::keras::applications
