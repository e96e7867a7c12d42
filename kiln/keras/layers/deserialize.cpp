// layer_from_config: the class-name registry for model configs (an explicit table, no
// self-registering statics).
#include "kiln/core/check.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/activation.h"
#include "kiln/keras/layers/advanced_activations.h"
#include "kiln/keras/layers/add.h"
#include "kiln/keras/layers/concatenate.h"
#include "kiln/keras/layers/embedding.h"
#include "kiln/keras/layers/layer_normalization.h"
#include "kiln/keras/layers/masking.h"
#include "kiln/keras/layers/multi_head_attention.h"
#include "kiln/keras/layers/batch_normalization.h"
#include "kiln/keras/layers/conv1d.h"
#include "kiln/keras/layers/conv2d.h"
#include "kiln/keras/layers/conv2d_transpose.h"
#include "kiln/keras/layers/depthwise_conv2d.h"
#include "kiln/keras/layers/dense.h"
#include "kiln/keras/layers/dropout.h"
#include "kiln/keras/layers/flatten.h"
#include "kiln/keras/layers/global_average_pooling2d.h"
#include "kiln/keras/layers/input_layer.h"
#include "kiln/keras/layers/merging.h"
#include "kiln/keras/layers/noise.h"
#include "kiln/keras/layers/pooling1d.h"
#include "kiln/keras/layers/pooling2d.h"
#include "kiln/keras/layers/recurrent.h"
#include "kiln/keras/layers/reshape.h"
#include "kiln/keras/layers/reshaping.h"
#include "kiln/keras/layers/rescaling.h"
#include "kiln/keras/layers/category_encoding.h"
#include "kiln/keras/layers/hashing.h"
#include "kiln/keras/layers/lookup_layers.h"
#include "kiln/keras/layers/text_vectorization.h"
#include "kiln/keras/layers/image_preprocessing.h"
#include "kiln/keras/layers/normalization.h"
#include "kiln/keras/layers/random_affine_layers.h"
#include "kiln/keras/layers/random_image_layers.h"
#include "kiln/keras/layers/wrappers.h"

namespace kiln::keras {

namespace {

using FromConfig = LayerHandle (*)(const std::string& config_json);

template <class L>
LayerHandle build(const std::string& config_json) {
  return L::from_config(config_json);
}

struct Registered {
  const char* class_name;
  FromConfig from_config;
};

// Keras class name -> the layer's from_config; the catalogue's one list (the unknown-class hint
// and the layer harness's coverage check read it).
constexpr Registered kRegistry[] = {
    {"Dense", &build<Dense>},
    {"Flatten", &build<Flatten>},
    {"Activation", &build<Activation>},
    {"Dropout", &build<Dropout>},
    {"Reshape", &build<Reshape>},
    {"InputLayer", &build<InputLayer>},
    {"Add", &build<Add>},
    {"Concatenate", &build<Concatenate>},
    {"LayerNormalization", &build<LayerNormalization>},
    {"Embedding", &build<Embedding>},
    {"MultiHeadAttention", &build<MultiHeadAttention>},
    {"Conv2D", &build<Conv2D>},
    {"MaxPooling2D", &build<MaxPooling2D>},
    {"AveragePooling2D", &build<AveragePooling2D>},
    {"GlobalAveragePooling2D", &build<GlobalAveragePooling2D>},
    {"BatchNormalization", &build<BatchNormalization>},
    {"ZeroPadding2D", &build<ZeroPadding2D>},
    {"Cropping2D", &build<Cropping2D>},
    {"UpSampling2D", &build<UpSampling2D>},
    {"Permute", &build<Permute>},
    {"RepeatVector", &build<RepeatVector>},
    {"MaxPooling1D", &build<MaxPooling1D>},
    {"AveragePooling1D", &build<AveragePooling1D>},
    {"GlobalMaxPooling1D", &build<GlobalMaxPooling1D>},
    {"GlobalAveragePooling1D", &build<GlobalAveragePooling1D>},
    {"GlobalMaxPooling2D", &build<GlobalMaxPooling2D>},
    {"ReLU", &build<ReLU>},
    {"LeakyReLU", &build<LeakyReLU>},
    {"PReLU", &build<PReLU>},
    {"Softmax", &build<Softmax>},
    {"SpatialDropout2D", &build<SpatialDropout2D>},
    {"GaussianNoise", &build<GaussianNoise>},
    {"Multiply", &build<Multiply>},
    {"Subtract", &build<Subtract>},
    {"Average", &build<Average>},
    {"Maximum", &build<Maximum>},
    {"Minimum", &build<Minimum>},
    {"Dot", &build<Dot>},
    {"Conv1D", &build<Conv1D>},
    {"Conv2DTranspose", &build<Conv2DTranspose>},
    {"DepthwiseConv2D", &build<DepthwiseConv2D>},
    {"SeparableConv2D", &build<SeparableConv2D>},
    {"SimpleRNN", &build<SimpleRNN>},
    {"LSTM", &build<LSTM>},
    {"GRU", &build<GRU>},
    {"Masking", &build<Masking>},
    {"Bidirectional", &build<Bidirectional>},
    {"TimeDistributed", &build<TimeDistributed>},
    {"Rescaling", &build<Rescaling>},
    {"CategoryEncoding", &build<CategoryEncoding>},
    {"CenterCrop", &build<CenterCrop>},
    {"Discretization", &build<Discretization>},
    {"Hashing", &build<Hashing>},
    {"StringLookup", &build<StringLookup>},
    {"IntegerLookup", &build<IntegerLookup>},
    {"TextVectorization", &build<TextVectorization>},
    {"Normalization", &build<Normalization>},
    {"RandomBrightness", &build<RandomBrightness>},
    {"RandomContrast", &build<RandomContrast>},
    {"RandomCrop", &build<RandomCrop>},
    {"RandomFlip", &build<RandomFlip>},
    {"RandomRotation", &build<RandomRotation>},
    {"RandomTranslation", &build<RandomTranslation>},
    {"RandomZoom", &build<RandomZoom>},
    {"Resizing", &build<Resizing>},
};

LayerHandle from_class(const std::string& class_name, const std::string& config_json) {
  for (const Registered& r : kRegistry)
    if (class_name == r.class_name) return r.from_config(config_json);
  std::string known;
  for (const Registered& r : kRegistry) known += (known.empty() ? "" : ", ") + std::string(r.class_name);
  KILN_THROW(ConfigError, "[layer_from_config] unknown layer class '", class_name, "'. Hint: Kiln knows ", known, ".");
}

}  // namespace

std::vector<std::string> registered_layer_classes() {
  std::vector<std::string> names;
  for (const Registered& r : kRegistry) names.emplace_back(r.class_name);
  return names;
}

LayerHandle layer_from_config(const std::string& class_name, const std::string& config_json) {
  LayerHandle layer = from_class(class_name, config_json);
  // The policy every layer's config carries ("dtype"); an InputLayer's is its input's dtype.
  if (class_name != "InputLayer") {
    const nlohmann::json j = internal::parse(config_json, "layer_from_config");
    // Discretization's and Hashing's "int64" is their output dtype, not a policy.
    const bool int_output = class_name == "Discretization" || class_name == "Hashing";
    // The lookup layers compute on the host in int64 and f32 whatever their policy says.
    const bool host_lookup =
        class_name == "StringLookup" || class_name == "IntegerLookup" || class_name == "TextVectorization";
    if (j.contains("dtype") && !host_lookup && !(int_output && internal::names_integer_dtype(config_json)))
      layer->set_dtype_policy(internal::policy_from_json(j["dtype"], layer->name()));
  }
  return layer;
}

}  // namespace kiln::keras
