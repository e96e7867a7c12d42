// Reading Keras 3's config.json into Kiln's Keras 2 forms. Every key of every layer is
// checked: one Kiln reads from .keras files, or one whose value is Keras's neutral default
// (null, false, empty), which goes on to the layer's from_config (whose table of the keys Keras
// writes rejects any other); anything else is an IOError naming the layer, the key, the Keras
// version and what to do. The model's and compile_config's own keys are checked likewise.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/input_layer.h"
#include "kiln/keras/layers/layer.h"
#include "kiln/keras/models/functional.h"
#include "kiln/keras/saving/keras3_config_impl.h"
#include "kiln/keras/saving/saving_impl.h"

namespace kiln::keras::internal {
namespace {

using nlohmann::json;

struct Source {
  const std::string& path;
  const std::string& version;
  const CustomObjects& custom_objects;
};

[[noreturn]] void fail(const Source& src, const std::string& what, const std::string& hint) {
  // A Keras 3 .h5 file's model_config is named by its path ("m.h5:model_config").
  const char* member = src.path.ends_with(":model_config") ? "" : " config.json";
  KILN_THROW(IOError, "[", src.path, "]", member, " (written by Keras ", src.version, "): ", what, ". Hint: ", hint);
}

// The config keys Kiln reads per layer class, beyond name, trainable and dtype.
const std::map<std::string, std::set<std::string>>& known_keys() {
  static const std::map<std::string, std::set<std::string>> kKeys = {
      {"Dense", {"units", "activation", "use_bias", "kernel_initializer", "bias_initializer"}},
      {"Conv2D", {"filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "groups",
                  "activation", "use_bias", "kernel_initializer", "bias_initializer"}},
      {"Flatten", {"data_format"}},
      {"Activation", {"activation"}},
      {"Dropout", {"rate", "noise_shape", "seed"}},
      {"Reshape", {"target_shape"}},
      {"Add", {}},
      {"Concatenate", {"axis"}},
      {"LayerNormalization", {"axis", "epsilon", "center", "scale", "beta_initializer", "gamma_initializer"}},
      {"Embedding", {"input_dim", "output_dim", "embeddings_initializer", "mask_zero", "input_length"}},
      {"MaxPooling2D", {"pool_size", "strides", "padding", "data_format"}},
      {"AveragePooling2D", {"pool_size", "strides", "padding", "data_format"}},
      {"GlobalAveragePooling2D", {"data_format", "keepdims"}},
      // Keras 3.14+ writes renorm (false), renorm_clipping (null) and renorm_momentum (0.99,
      // used only with renorm).
      {"BatchNormalization", {"axis", "momentum", "epsilon", "center", "scale", "beta_initializer",
                              "gamma_initializer", "moving_mean_initializer", "moving_variance_initializer",
                              "renorm_momentum"}},
      // Keras 3.15 adds use_gate and sliding_window (neutral when off); seed seeds the
      // attention dropout's random stream, which Kiln draws its own way.
      {"MultiHeadAttention", {"num_heads", "key_dim", "value_dim", "dropout", "use_bias", "output_shape",
                              "attention_axes", "kernel_initializer", "bias_initializer", "seed"}},
      // Issue 20's catalogue: Keras 3's key names (LeakyReLU's negative_slope, not alpha).
      {"Conv1D", {"filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "groups",
                  "activation", "use_bias", "kernel_initializer", "bias_initializer"}},
      {"Conv2DTranspose", {"filters", "kernel_size", "strides", "padding", "output_padding", "data_format",
                           "dilation_rate", "activation", "use_bias", "kernel_initializer", "bias_initializer"}},
      {"DepthwiseConv2D", {"kernel_size", "strides", "padding", "depth_multiplier", "data_format", "dilation_rate",
                           "activation", "use_bias", "depthwise_initializer", "bias_initializer"}},
      {"SeparableConv2D", {"filters", "kernel_size", "strides", "padding", "depth_multiplier", "data_format",
                           "dilation_rate", "activation", "use_bias", "depthwise_initializer",
                           "pointwise_initializer", "bias_initializer"}},
      {"ZeroPadding2D", {"padding", "data_format"}},
      {"Cropping2D", {"cropping", "data_format"}},
      {"UpSampling2D", {"size", "data_format", "interpolation"}},
      {"Permute", {"dims"}},
      {"RepeatVector", {"n"}},
      {"MaxPooling1D", {"pool_size", "strides", "padding", "data_format"}},
      {"AveragePooling1D", {"pool_size", "strides", "padding", "data_format"}},
      {"GlobalMaxPooling1D", {"data_format", "keepdims"}},
      {"GlobalAveragePooling1D", {"data_format", "keepdims"}},
      {"GlobalMaxPooling2D", {"data_format", "keepdims"}},
      {"ReLU", {"max_value", "negative_slope", "threshold"}},
      {"LeakyReLU", {"negative_slope"}},
      {"PReLU", {"alpha_initializer", "shared_axes"}},
      {"Softmax", {"axis"}},
      {"SpatialDropout2D", {"rate", "seed", "data_format"}},
      {"GaussianNoise", {"stddev", "seed"}},
      {"Multiply", {}},
      {"Subtract", {}},
      {"Average", {}},
      {"Maximum", {}},
      {"Minimum", {}},
      {"Dot", {"axes", "normalize"}},
      // Recurrent layers (Keras 3's RNN base keys too); seed seeds the dropout masks,
      // and use_cudnn picks a kernel, not a result. Wrappers' inner layers are read as layers.
      {"SimpleRNN", {"units", "activation", "use_bias", "kernel_initializer", "recurrent_initializer",
                     "bias_initializer", "dropout", "recurrent_dropout", "seed", "return_sequences", "return_state",
                     "go_backwards", "unroll", "zero_output_for_mask"}},
      {"LSTM", {"units", "activation", "recurrent_activation", "use_bias", "kernel_initializer",
                "recurrent_initializer", "bias_initializer", "unit_forget_bias", "dropout", "recurrent_dropout",
                "seed", "return_sequences", "return_state", "go_backwards", "unroll", "zero_output_for_mask",
                "implementation", "use_cudnn"}},
      {"GRU", {"units", "activation", "recurrent_activation", "use_bias", "kernel_initializer",
               "recurrent_initializer", "bias_initializer", "reset_after", "dropout", "recurrent_dropout", "seed",
               "return_sequences", "return_state", "go_backwards", "unroll", "zero_output_for_mask",
               "implementation", "use_cudnn"}},
      {"Masking", {"mask_value"}},
      {"Bidirectional", {"layer", "merge_mode", "backward_layer"}},
      {"TimeDistributed", {"layer"}},
      {"Rescaling", {"scale", "offset"}},
      // Preprocessing layers: data_format and bounding_box_format go on to the layers' own
      // tables, which take channels_last and no boxes.
      {"Resizing", {"height", "width", "interpolation", "crop_to_aspect_ratio", "pad_to_aspect_ratio", "fill_mode",
                    "fill_value", "antialias", "data_format", "bounding_box_format"}},
      {"CenterCrop", {"height", "width", "data_format", "bounding_box_format"}},
      {"RandomFlip", {"mode", "seed", "data_format", "bounding_box_format"}},
      {"RandomCrop", {"height", "width", "seed", "data_format", "bounding_box_format"}},
      {"RandomContrast", {"factor", "value_range", "seed", "data_format", "bounding_box_format"}},
      {"RandomBrightness", {"factor", "value_range", "seed", "data_format", "bounding_box_format"}},
      {"RandomRotation", {"factor", "fill_mode", "fill_value", "interpolation", "seed", "data_format",
                          "bounding_box_format"}},
      {"RandomZoom", {"height_factor", "width_factor", "fill_mode", "fill_value", "interpolation", "seed",
                      "data_format", "bounding_box_format"}},
      {"RandomTranslation", {"height_factor", "width_factor", "fill_mode", "fill_value", "interpolation", "seed",
                             "data_format", "bounding_box_format"}},
      {"Normalization", {"axis", "mean", "variance", "invert"}},
      {"Discretization", {"bin_boundaries", "num_bins", "epsilon", "output_mode", "sparse"}},
      {"CategoryEncoding", {"num_tokens", "output_mode", "sparse"}},
      {"Hashing", {"num_bins", "salt", "mask_value", "output_mode", "sparse"}},
      {"StringLookup", {"invert", "max_tokens", "num_oov_indices", "oov_token", "mask_token", "output_mode", "sparse",
                        "pad_to_max_tokens", "vocabulary_dtype", "idf_weights", "vocabulary", "vocabulary_size",
                        "encoding", "oov_method"}},
      {"IntegerLookup", {"invert", "max_tokens", "num_oov_indices", "oov_token", "mask_token", "output_mode", "sparse",
                         "pad_to_max_tokens", "vocabulary_dtype", "idf_weights", "vocabulary", "vocabulary_size",
                         "oov_method"}},
      {"TextVectorization", {"max_tokens", "standardize", "split", "ngrams", "output_mode", "output_sequence_length",
                             "pad_to_max_tokens", "sparse", "ragged", "vocabulary", "idf_weights", "encoding",
                             "vocabulary_size"}},
  };
  return kKeys;
}

std::string known_classes() {
  std::string out;
  for (const auto& [cls, keys] : known_keys()) out += (out.empty() ? "" : ", ") + cls;
  return out + " and InputLayer";
}

// Keras's defaults that change nothing: a key holding one of these may be ignored.
// Keras 3.0-3.4 give each object in config.json a shared_object_id (a Bidirectional's forward
// and backward layers' initializers different ones): not part of what an object is.
json without_object_ids(json j) {
  if (j.is_object()) j.erase("shared_object_id");
  if (j.is_structured())
    for (auto& [key, value] : j.items()) value = without_object_ids(value);
  return j;
}

bool is_neutral(const json& v) {
  return v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_array() && v.empty()) ||
         (v.is_object() && v.empty());
}

bool is_keras_tensor(const json& j) {
  return j.is_object() && j.value("class_name", "") == "__keras_tensor__" && j.contains("config") &&
         j["config"].is_object();
}

// Plain values from Keras 3's wrapped ones: __tensor__/__numpy__ become their value, a
// serialized function its name, and nested {"module", "class_name", "config",
// "registered_name"} objects lose module and registered_name.
json unwrap(const json& v) {
  if (v.is_array()) {
    json out = json::array();
    for (const json& e : v) out.push_back(unwrap(e));
    return out;
  }
  if (!v.is_object()) return v;
  const std::string cls = v.value("class_name", "");
  if ((cls == "__tensor__" || cls == "__numpy__") && v.contains("config")) return v["config"].value("value", json());
  // A Keras function (a loss, metric or activation passed as a function) is its name.
  if (cls == "function" && v.contains("config") && v["config"].is_string()) return v["config"];
  json out = json::object();
  for (const auto& [k, e] : v.items())
    if (!(v.contains("class_name") && (k == "module" || k == "registered_name"))) out[k] = unwrap(e);
  return out;
}

// The dtype of a layer: a DTypePolicy object or a plain name.
std::string dtype_name(const json& d) {
  if (d.is_string()) return d.get<std::string>();
  if (d.is_object() && d.contains("config") && d["config"].is_object()) return d["config"].value("name", "float32");
  return "float32";
}

// expect_only_keys as an IOError of this file.
void check_keys(const json& j, const std::vector<ConfigKeys>& tables, const std::string& what, const Source& src) {
  try {
    expect_only_keys(j, tables, what, "config.json");
  } catch (const ConfigError& e) {
    fail(src, e.what(), "the file is damaged or was written by a newer Keras; save the model again");
  }
}

// compile_config's keys (Keras 3.0-3.15); run_eagerly, steps_per_execution and jit_compile
// choose how Keras runs a step, not its result.
constexpr ConfigKey kCompileConfigKeys[] = {{"optimizer"},         {"loss"},           {"loss_weights"},
                                            {"metrics"},           {"weighted_metrics"}, {"run_eagerly"},
                                            {"steps_per_execution"}, {"jit_compile"}};

json batch_shape_of(const json& config, const Source& src, const std::string& name) {
  for (const char* key : {"batch_shape", "batch_input_shape"})
    if (config.contains(key) && config[key].is_array()) return config[key];
  if (config.contains("shape") && config["shape"].is_array()) {
    json s = json::array({nullptr});
    for (const json& d : config["shape"]) s.push_back(d);
    return s;
  }
  fail(src, "InputLayer '" + name + "' has no batch_shape", "the file is damaged; save the model again");
}

json input_layer2(const json& config, const Source& src, const std::string& name) {
  try {
    InputLayer::from_config(config.dump());  // its keys, checked as any InputLayer's
  } catch (const ConfigError& e) {
    fail(src, e.what(), "the file is damaged or was written by a newer Keras; save the model again");
  }
  const std::string dtype = dtype_name(config.value("dtype", json("float32")));
  if (config.value("sparse", false) || config.value("ragged", false))
    fail(src, "InputLayer '" + name + "' is sparse or ragged", "Kiln's inputs are dense tensors");
  return {{"batch_input_shape", batch_shape_of(config, src, name)}, {"dtype", dtype}, {"name", name}};
}

json layer_config2(const std::string& cls, const json& config3, const Source& src);

// A wrapper's inner layer object ({"class_name", "config", ...}) as Kiln's {"class_name", "config"}.
json inner_layer2(const json& object, const Source& src, const std::string& wrapper) {
  if (!object.is_object() || !object.contains("class_name") || !object.contains("config"))
    fail(src, "layer '" + wrapper + "' has no inner layer object", "the file is damaged; save the model again");
  const std::string cls = object["class_name"].get<std::string>();
  return {{"class_name", cls}, {"config", layer_config2(cls, object["config"], src)}};
}

// Keras 3's recurrent and wrapper configs in Kiln's (Keras 2) form.
// zero_output_for_mask is honored only where Kiln sets it itself (inside Bidirectional, which
// forces it). Bidirectional writes its backward layer in full: Kiln rebuilds it from the
// forward one, so it must be that layer with go_backwards flipped.
void recurrent_config2(const std::string& cls, const json& config3, json& out, const Source& src,
                       const std::string& name) {
  if (cls == "SimpleRNN" || cls == "LSTM" || cls == "GRU") {
    if (out.value("zero_output_for_mask", false))
      fail(src, "layer '" + name + "' (" + cls + ") has zero_output_for_mask=true",
           "Kiln's recurrent layers repeat the last output at masked steps, as Keras does by default");
    for (const char* key : {"zero_output_for_mask", "use_cudnn", "seed"}) out.erase(key);
  } else if (cls == "TimeDistributed") {
    out["layer"] = inner_layer2(config3.at("layer"), src, name);
  } else if (cls == "Bidirectional") {
    json forward = config3.at("layer");
    if (forward.is_object() && forward.contains("config")) forward["config"].erase("zero_output_for_mask");
    if (config3.contains("backward_layer") && !config3["backward_layer"].is_null()) {
      json a = without_object_ids(forward.value("config", json::object())),
           b = without_object_ids(config3["backward_layer"].value("config", json::object()));
      const bool flipped = a.value("go_backwards", false) != b.value("go_backwards", false);
      for (json* c : {&a, &b})
        for (const char* key : {"name", "go_backwards", "zero_output_for_mask"}) c->erase(key);
      if (!flipped || a != b || forward.value("class_name", "") != config3["backward_layer"].value("class_name", ""))
        fail(src, "layer '" + name + "' (Bidirectional) has a backward_layer that is not its layer run backwards",
             "Kiln builds Bidirectional from one layer; rebuild the model in C++ and load the weights");
    }
    json inner = inner_layer2(forward, src, name);
    // Keras 3 names the forward layer forward_<name>; Kiln's (Keras 2's) config holds <name>,
    // left empty when it is the class's default (what Kiln writes for an unnamed layer).
    std::string inner_name = inner["config"].value("name", "");
    if (inner_name.starts_with("forward_")) inner_name = inner_name.substr(8);
    inner["config"]["name"] = inner_name == to_snake_case(inner["class_name"].get<std::string>()) ? "" : inner_name;
    out["layer"] = inner;
    out.erase("backward_layer");
  }
}

// A Keras 3 layer config as Kiln's from_config reads it.
json layer_config2(const std::string& cls, const json& config3, const Source& src) {
  const std::string name = config3.value("name", "(unnamed)");
  if (src.custom_objects.count(cls)) return unwrap(config3);  // the user's factory reads it
  auto keys = known_keys().find(cls);
  if (keys == known_keys().end())
    fail(src, "layer '" + name + "' is a " + cls + ", which Kiln does not load from .keras files",
         "Kiln loads " + known_classes() + "; pass a factory for it in LoadOptions::custom_objects, or rebuild "
         "the model in C++ and load the weights with load_weights");
  json out = json::object();
  for (const auto& [key, value] : config3.items()) {
    if (key == "dtype") {
      out[key] = value;  // a DTypePolicy / FloatDTypePolicy object or a name: policy_from_json reads both
    } else if (key == "name" || key == "trainable" || keys->second.count(key)) {
      out[key] = unwrap(value);
    } else if (!is_neutral(value)) {
      fail(src, "layer '" + name + "' (" + cls + ") has " + key + "=" + value.dump().substr(0, 120) +
                    ", which Kiln does not implement",
           "remove it from the model in Keras, or rebuild the model in C++ and use load_weights");
    } else {
      out[key] = unwrap(value);  // from_config accepts it only if Keras writes it for this class
    }
  }
  recurrent_config2(cls, config3, out, src, name);
  // Keras 3's hard_sigmoid is relu6(x + 3) / 6, not Keras 2's clip(0.2x + 0.5, 0, 1), which
  // Kiln's "hard_sigmoid" is (the one .h5 files mean).
  for (const char* key : {"activation", "recurrent_activation"})
    if (out.contains(key) && out[key] == "hard_sigmoid") out[key] = "keras3_hard_sigmoid";
  return out;
}

json tensor_ref(const json& t, const Source& src, const std::string& layer) {
  const json h = t["config"].value("keras_history", json());
  if (!h.is_array() || h.size() != 3 || !h[0].is_string() || !h[1].is_number_integer())
    fail(src, "layer '" + layer + "' has a call argument without keras_history", "the file is damaged");
  return h;
}

// The tensor arguments of a Keras 3 layer's call by position, for layers called on several
// tensors (MultiHeadAttention.call(query, value, key=None, query_mask=None, ...)), and the
// call flags whose false value is its default (dropped: Kiln's layers take only those they use).
struct CallSignature {
  std::vector<std::string> tensors;
  std::set<std::string> default_false_flags;
};
const CallSignature* call_signature(const std::string& cls) {
  static const std::map<std::string, CallSignature> kSignatures = {
      {"MultiHeadAttention", {{"query", "value", "key"}, {"return_attention_scores"}}},
  };
  auto it = kSignatures.find(cls);
  return it == kSignatures.end() ? nullptr : &it->second;
}

// A call of a layer with a CallSignature ({"args": [q, v], "kwargs": {...}} or any mix of
// positions and names) as the Keras 2 form Kiln reads: the first tensor argument positional,
// the others by name (tf.keras's [[query, 0, 0, {"value": [...]}]]).
json normalize_call(const CallSignature& sig, const json& node, const Source& src, const std::string& layer) {
  const json args = node.value("args", json::array());
  json kwargs = node.value("kwargs", json::object());
  if (!args.is_array() || !kwargs.is_object()) fail(src, "layer '" + layer + "' has a malformed call", "the file is damaged");
  for (size_t i = 0; i < args.size(); ++i) {
    if (i >= sig.tensors.size()) {
      if (!is_neutral(args[i]))
        fail(src, "layer '" + layer + "' is called with " + args[i].dump().substr(0, 80) + " as positional argument " +
                      std::to_string(i + 1),
             "Kiln's layer calls take tensors and boolean flags");
      continue;
    }
    if (kwargs.contains(sig.tensors[i]))
      fail(src, "layer '" + layer + "' gets " + sig.tensors[i] + " twice", "the file is damaged");
    kwargs[sig.tensors[i]] = args[i];
  }
  const std::string& first = sig.tensors[0];
  if (!kwargs.contains(first) || !is_keras_tensor(kwargs[first]))
    fail(src, "layer '" + layer + "' is called without a " + first + " tensor", "the file is damaged");
  json out_args = json::array({kwargs[first]});
  kwargs.erase(first);
  for (const auto& [key, value] : kwargs.items())
    if (is_keras_tensor(value) && std::find(sig.tensors.begin(), sig.tensors.end(), key) == sig.tensors.end())
      fail(src, "layer '" + layer + "' is called with the tensor " + key, "Kiln's " + first +
               "/value/key attention takes no masks; remove " + key + " in Keras, or rebuild the model in C++");
  for (const std::string& flag : sig.default_false_flags) {
    if (!kwargs.contains(flag)) continue;
    if (kwargs[flag].is_boolean() && kwargs[flag].get<bool>())
      fail(src, "layer '" + layer + "' is called with " + flag + "=true", "Kiln's layers return one tensor");
    kwargs.erase(flag);
  }
  return {{"args", out_args}, {"kwargs", kwargs}};
}

// A Keras 3 node {"args": [...], "kwargs": {...}} as Kiln's Keras 2 node: the first argument's
// tensors, each [layer, node, tensor, kwargs].
json node2(const json& node_in, const Source& src, const std::string& layer, const std::string& cls) {
  if (node_in.is_array()) return node_in;  // already Keras 2's form
  const CallSignature* sig = call_signature(cls);
  const json node = sig != nullptr ? normalize_call(*sig, node_in, src, layer) : node_in;
  const json args = node.value("args", json::array());
  const json kwargs = node.value("kwargs", json::object());
  if (!args.is_array() || args.empty())
    fail(src, "layer '" + layer + "' has a call without arguments", "the file is damaged");
  json refs = json::array();
  if (is_keras_tensor(args[0])) {
    refs.push_back(tensor_ref(args[0], src, layer));
  } else if (args[0].is_array() && !args[0].empty()) {
    for (const json& t : args[0]) {
      if (!is_keras_tensor(t))
        fail(src, "layer '" + layer + "' is called on a list holding " + t.dump().substr(0, 80),
             "Kiln's layers take tensors");
      refs.push_back(tensor_ref(t, src, layer));
    }
  } else {
    fail(src, "layer '" + layer + "' is called on " + args[0].dump().substr(0, 80), "Kiln's layers take tensors");
  }
  for (size_t i = 1; i < args.size(); ++i)
    if (!is_neutral(args[i]))
      fail(src, "layer '" + layer + "' is called with " + std::to_string(args.size()) + " positional arguments",
           "Kiln loads layers called on one tensor or one list of tensors");
  json kw = json::object();
  for (const auto& [key, value] : kwargs.items()) {
    if (is_keras_tensor(value)) kw[key] = tensor_ref(value, src, layer);
    else if (value.is_boolean()) kw[key] = value;
    else if (!value.is_null())
      fail(src, "layer '" + layer + "' is called with " + key + "=" + value.dump().substr(0, 80),
           "Kiln's layer calls take tensors and boolean flags");
  }
  json out = json::array();
  for (json r : refs) {
    r.push_back(kw);
    out.push_back(r);
  }
  return out;
}

// input_layers/output_layers: one [name, node, tensor] reference, a list of them, or (Keras 3
// models built on dicts) a dict of them: kept for outputs (a Functional with dict outputs).
json refs2(const json& j, const Source& src, const char* key) {
  if (j.is_array() && j.size() == 3 && j[0].is_string()) return json::array({j});
  const bool outputs = std::string(key) == "output_layers";
  if (j.is_object() && outputs) {
    json out = json::object();
    for (const auto& [name, ref] : j.items()) out[name] = refs2(ref, src, key).at(0);
    return out;
  }
  if (j.is_object() && j.size() == 1) return refs2(j.begin().value(), src, key);
  if (j.is_object()) {
    std::string names;
    for (const auto& [name, ref] : j.items()) names += (names.empty() ? "" : ", ") + name;
    fail(src, "the model's inputs are a dict (" + names + ")",
         "Kiln's models take a list of inputs; in Keras, build the model on a list of Input tensors");
  }
  if (!j.is_array())
    fail(src, std::string(key) + " is " + j.dump().substr(0, 80), "Kiln's models take lists of inputs and outputs");
  return j;
}

json sequential2(const json& top, const Source& src);
json functional2(const json& top, const Source& src);

bool is_model_class(const std::string& cls) { return cls == "Sequential" || cls == "Functional" || cls == "Model"; }

// A nested model entry (a keras.applications base inside a Sequential) as Kiln's Keras 2
// nested model config: read as a top-level model is, keeping whether it is frozen.
json nested_model2(const std::string& cls, const json& entry, const Source& src) {
  json e = entry;
  const bool frozen = e["config"].is_object() && e["config"].value("trainable", true) == false;
  if (e["config"].is_object()) e["config"].erase("trainable");
  json config = (cls == "Sequential" ? sequential2(e, src) : functional2(e, src))["config"];
  if (frozen) config["trainable"] = false;
  return config;
}

json sequential2(const json& top, const Source& src) {
  const json& config = top["config"];
  check_keys(config, {sequential_config_keys()}, "Sequential", src);
  json layers = json::array();
  for (const json& entry : config.at("layers")) {
    check_keys(entry, {serialized_object_keys()}, "layer entry", src);
    const std::string cls = entry.at("class_name").get<std::string>();
    const json& c = entry.at("config");
    if (cls == "InputLayer") {
      if (!layers.empty()) fail(src, "an InputLayer follows other layers", "the file is damaged");
      layers.push_back({{"class_name", "InputLayer"}, {"config", input_layer2(c, src, c.value("name", "input_layer"))}});
    } else if (is_model_class(cls)) {
      layers.push_back({{"class_name", cls == "Sequential" ? cls : "Functional"}, {"config", nested_model2(cls, entry, src)}});
    } else {
      layers.push_back({{"class_name", cls}, {"config", layer_config2(cls, c, src)}});
    }
  }
  // Built without an InputLayer: the input shape is in build_input_shape / build_config.
  json shape = config.value("build_input_shape", json());
  if (shape.is_null() && top.contains("build_config") && top["build_config"].is_object())
    shape = top["build_config"].value("input_shape", json());
  if (!layers.empty() && layers[0]["class_name"] != "InputLayer" && shape.is_array())
    layers[0]["config"]["batch_input_shape"] = shape;
  return {{"class_name", "Sequential"}, {"config", {{"name", config.value("name", "sequential")}, {"layers", layers}}}};
}

json functional2(const json& top, const Source& src) {
  const json& config = top["config"];
  check_keys(config, {functional_config_keys()}, "Functional", src);
  json layers = json::array();
  for (const json& entry : config.at("layers")) {
    check_keys(entry, {functional_layer_entry_keys(), serialized_object_keys()}, "layer entry", src);
    const std::string cls = entry.at("class_name").get<std::string>();
    const json& c = entry.at("config");
    const std::string name = entry.value("name", c.value("name", ""));
    json e;
    if (cls == "InputLayer") {
      e = {{"class_name", cls}, {"config", input_layer2(c, src, name)}, {"inbound_nodes", json::array()}};
    } else {
      json nodes = json::array();
      for (const json& n : entry.at("inbound_nodes")) nodes.push_back(node2(n, src, name, cls));
      if (is_model_class(cls))
        e = {{"class_name", cls == "Sequential" ? cls : "Functional"}, {"config", nested_model2(cls, entry, src)},
             {"inbound_nodes", nodes}};
      else
        e = {{"class_name", cls}, {"config", layer_config2(cls, c, src)}, {"inbound_nodes", nodes}};
    }
    e["name"] = name;
    layers.push_back(e);
  }
  return {{"class_name", "Functional"},
          {"config", {{"name", config.value("name", "model")}, {"layers", layers},
                      {"input_layers", refs2(config.at("input_layers"), src, "input_layers")},
                      {"output_layers", refs2(config.at("output_layers"), src, "output_layers")}}}};
}

// Keras 3's compile_config as a Keras 2 training_config. Optimizer features Kiln lacks
// (EMA, loss scaling, accumulation) are refused rather than dropped.
json training2(const json& cc, const Source& src) {
  check_keys(cc, {kCompileConfigKeys}, "compile_config", src);
  const json& opt = cc.value("optimizer", json());
  json optimizer_config;
  if (opt.is_string()) {
    optimizer_config = {{"class_name", opt}, {"config", json::object()}};
  } else if (opt.is_object() && opt.contains("class_name")) {
    check_keys(opt, {serialized_object_keys()}, "compile_config optimizer", src);
    json c = opt.value("config", json::object());
    const std::string cls = opt["class_name"].get<std::string>();
    for (const char* key :
         {"use_ema", "ema_overwrite_frequency", "loss_scale_factor", "gradient_accumulation_steps", "amsgrad"})
      if (c.contains(key) && !is_neutral(c[key]))
        fail(src, "compile_config optimizer " + cls + " has " + key + "=" + c[key].dump(),
             "Kiln's optimizers do not implement it; load with {.compile = false} and compile in C++");
    if (cls != "AdamW" && c.contains("weight_decay") && !is_neutral(c["weight_decay"]))
      fail(src, "compile_config optimizer " + cls + " has weight_decay=" + c["weight_decay"].dump(),
           "use AdamW, or load with {.compile = false} and compile in C++");
    optimizer_config = {{"class_name", cls}, {"config", c}};
  } else {
    fail(src, "compile_config has no optimizer", "load with {.compile = false} and compile in C++");
  }
  // One loss, or a multi-output model's list or dict of them (with loss_weights alike).
  const json loss = unwrap(cc.value("loss", json()));
  if (!loss.is_string() && !loss.is_structured())
    fail(src, "compile_config loss is " + loss.dump().substr(0, 80),
         "Kiln loads a loss, a list of losses or a dict by output name; load with {.compile = false}");
  const json weighted = cc.value("weighted_metrics", json());
  return {{"loss", loss}, {"metrics", unwrap(cc.value("metrics", json::array()))},
          {"weighted_metrics", is_neutral(weighted) ? json() : unwrap(weighted)},
          {"loss_weights", unwrap(cc.value("loss_weights", json()))}, {"optimizer_config", optimizer_config}};
}

}  // namespace

Keras2Configs keras2_configs_from_keras3(const std::string& config_json, const std::string& path,
                                         const std::string& keras_version, const LoadOptions& options) {
  const Source src{path, keras_version, options.custom_objects};
  json top;
  try {
    top = json::parse(config_json);
  } catch (const json::exception&) {
    fail(src, "is not valid JSON", "the file is damaged; save the model again");
  }
  if (!top.is_object() || !top.contains("class_name") || !top["class_name"].is_string() ||
      !top.contains("config") || !top["config"].is_object())
    fail(src, "has no model class_name and config", "the file is damaged; save the model again");
  check_keys(top, {serialized_object_keys()}, "the model object", src);
  try {
    const std::string cls = top["class_name"].get<std::string>();
    Keras2Configs out;
    if (cls == "Sequential") {
      out.model_config = sequential2(top, src).dump();
    } else if (cls == "Functional" || cls == "Model") {
      out.model_config = functional2(top, src).dump();
    } else {
      const json reg = top.value("registered_name", json());
      fail(src, "the model is a '" + cls + "'" + (reg.is_string() ? " (registered as '" + reg.get<std::string>() + "')" : "") +
                    ", a subclassed model",
           "Kiln builds Sequential and Functional models; rebuild the model in C++ and load the weights "
           "with load_weights");
    }
    const json cc = top.value("compile_config", json());
    if (options.compile && cc.is_object() && !cc.empty()) out.training_config = training2(cc, src).dump();
    return out;
  } catch (const json::exception& e) {
    fail(src, std::string("is malformed (") + e.what() + ")", "the file is damaged; save the model again");
  }
}

}  // namespace kiln::keras::internal
