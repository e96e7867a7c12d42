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

LayerHandle from_class(const std::string& class_name, const std::string& config_json) {
  if (class_name == "Dense") return Dense::from_config(config_json);
  if (class_name == "Flatten") return Flatten::from_config(config_json);
  if (class_name == "Activation") return Activation::from_config(config_json);
  if (class_name == "Dropout") return Dropout::from_config(config_json);
  if (class_name == "Reshape") return Reshape::from_config(config_json);
  if (class_name == "InputLayer") return InputLayer::from_config(config_json);
  if (class_name == "Add") return Add::from_config(config_json);
  if (class_name == "Concatenate") return Concatenate::from_config(config_json);
  if (class_name == "LayerNormalization") return LayerNormalization::from_config(config_json);
  if (class_name == "Embedding") return Embedding::from_config(config_json);
  if (class_name == "MultiHeadAttention") return MultiHeadAttention::from_config(config_json);
  if (class_name == "Conv2D") return Conv2D::from_config(config_json);
  if (class_name == "MaxPooling2D") return MaxPooling2D::from_config(config_json);
  if (class_name == "AveragePooling2D") return AveragePooling2D::from_config(config_json);
  if (class_name == "GlobalAveragePooling2D") return GlobalAveragePooling2D::from_config(config_json);
  if (class_name == "BatchNormalization") return BatchNormalization::from_config(config_json);
  if (class_name == "ZeroPadding2D") return ZeroPadding2D::from_config(config_json);
  if (class_name == "Cropping2D") return Cropping2D::from_config(config_json);
  if (class_name == "UpSampling2D") return UpSampling2D::from_config(config_json);
  if (class_name == "Permute") return Permute::from_config(config_json);
  if (class_name == "RepeatVector") return RepeatVector::from_config(config_json);
  if (class_name == "MaxPooling1D") return MaxPooling1D::from_config(config_json);
  if (class_name == "AveragePooling1D") return AveragePooling1D::from_config(config_json);
  if (class_name == "GlobalMaxPooling1D") return GlobalMaxPooling1D::from_config(config_json);
  if (class_name == "GlobalMaxPooling2D") return GlobalMaxPooling2D::from_config(config_json);
  if (class_name == "ReLU") return ReLU::from_config(config_json);
  if (class_name == "LeakyReLU") return LeakyReLU::from_config(config_json);
  if (class_name == "PReLU") return PReLU::from_config(config_json);
  if (class_name == "Softmax") return Softmax::from_config(config_json);
  if (class_name == "SpatialDropout2D") return SpatialDropout2D::from_config(config_json);
  if (class_name == "GaussianNoise") return GaussianNoise::from_config(config_json);
  if (class_name == "Multiply") return Multiply::from_config(config_json);
  if (class_name == "Subtract") return Subtract::from_config(config_json);
  if (class_name == "Average") return Average::from_config(config_json);
  if (class_name == "Maximum") return Maximum::from_config(config_json);
  if (class_name == "Minimum") return Minimum::from_config(config_json);
  if (class_name == "Dot") return Dot::from_config(config_json);
  if (class_name == "Conv1D") return Conv1D::from_config(config_json);
  if (class_name == "Conv2DTranspose") return Conv2DTranspose::from_config(config_json);
  if (class_name == "DepthwiseConv2D") return DepthwiseConv2D::from_config(config_json);
  if (class_name == "SeparableConv2D") return SeparableConv2D::from_config(config_json);
  if (class_name == "SimpleRNN") return SimpleRNN::from_config(config_json);
  if (class_name == "LSTM") return LSTM::from_config(config_json);
  if (class_name == "GRU") return GRU::from_config(config_json);
  if (class_name == "Masking") return Masking::from_config(config_json);
  if (class_name == "Bidirectional") return Bidirectional::from_config(config_json);
  if (class_name == "TimeDistributed") return TimeDistributed::from_config(config_json);
  if (class_name == "Rescaling") return Rescaling::from_config(config_json);
  if (class_name == "CategoryEncoding") return CategoryEncoding::from_config(config_json);
  if (class_name == "CenterCrop") return CenterCrop::from_config(config_json);
  if (class_name == "Discretization") return Discretization::from_config(config_json);
  if (class_name == "Hashing") return Hashing::from_config(config_json);
  if (class_name == "StringLookup") return StringLookup::from_config(config_json);
  if (class_name == "IntegerLookup") return IntegerLookup::from_config(config_json);
  if (class_name == "TextVectorization") return TextVectorization::from_config(config_json);
  if (class_name == "Normalization") return Normalization::from_config(config_json);
  if (class_name == "RandomBrightness") return RandomBrightness::from_config(config_json);
  if (class_name == "RandomContrast") return RandomContrast::from_config(config_json);
  if (class_name == "RandomCrop") return RandomCrop::from_config(config_json);
  if (class_name == "RandomFlip") return RandomFlip::from_config(config_json);
  if (class_name == "RandomRotation") return RandomRotation::from_config(config_json);
  if (class_name == "RandomTranslation") return RandomTranslation::from_config(config_json);
  if (class_name == "RandomZoom") return RandomZoom::from_config(config_json);
  if (class_name == "Resizing") return Resizing::from_config(config_json);
  KILN_THROW(ConfigError, "[layer_from_config] unknown layer class '", class_name,
             "'. Hint: Kiln knows Dense, Flatten, Activation, Dropout, Reshape, InputLayer, Conv2D, ",
             "MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, BatchNormalization, Add, Concatenate, ",
             "LayerNormalization, Embedding, MultiHeadAttention, ZeroPadding2D, Cropping2D, UpSampling2D, Permute, ",
             "RepeatVector, MaxPooling1D, AveragePooling1D, GlobalMaxPooling1D, GlobalMaxPooling2D, ReLU, LeakyReLU, ",
             "PReLU, Softmax, SpatialDropout2D, GaussianNoise, Multiply, Subtract, Average, Maximum, Minimum, Dot, ",
             "Conv1D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D, SimpleRNN, LSTM, GRU, Masking, ",
             "Bidirectional, TimeDistributed, Rescaling, Resizing, CenterCrop, RandomFlip, RandomCrop, RandomContrast, ",
             "RandomBrightness, RandomRotation, RandomZoom, RandomTranslation, Normalization, Discretization, ",
             "CategoryEncoding, Hashing, StringLookup, IntegerLookup and TextVectorization.");
}

}  // namespace

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
