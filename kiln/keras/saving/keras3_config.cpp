// Keras 3 config.json <-> Kiln's Keras 2 config forms. Writing starts from Model::to_json and
// the compile options and adds what Keras 3's deserialize_keras_object needs; reading checks
// each layer's keys against what Kiln honors, so nothing in the file is silently dropped.
#include "kiln/keras/saving/keras3_config_impl.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/layers/input_layer.h"
#include "kiln/keras/models/functional.h"
#include "kiln/keras/models/model_layer.h"
#include "kiln/keras/optimizers/loss_scale_optimizer.h"
#include "kiln/keras/saving/training_config.h"

namespace kiln::keras::internal {
namespace {

using nlohmann::json;

json dtype_policy(const std::string& name) {
  return {{"module", "keras"}, {"class_name", "DTypePolicy"}, {"config", {{"name", name}}},
          {"registered_name", nullptr}};
}

json public_object(const std::string& module, const std::string& class_name, json config) {
  return {{"module", module}, {"class_name", class_name}, {"config", std::move(config)}, {"registered_name", nullptr}};
}

json batch_shape(const Dims& dims) {
  json j = json::array({nullptr});
  for (int64_t d : dims) j.push_back(d == kNoneDim ? json() : json(d));
  return j;
}

json sequential_config3(const Model& model, const json& k2);
json functional_config3(const Functional& model, const json& k2);

// A model used as a layer, as Keras 3 serializes it: the model object itself (module, class,
// config with its layers), frozen when its ModelLayer is.
json nested_model3(const ModelLayer& layer) {
  const Model& m = layer.model();
  const json k2 = json::parse(m.to_json());
  json out = k2["class_name"] == "Sequential" ? sequential_config3(m, k2)
                                              : functional_config3(dynamic_cast<const Functional&>(m), k2);
  if (!layer.trainable()) out["config"]["trainable"] = false;
  return out;
}

// ---- writing -----------------------------------------------------------------------------

// A Kiln (Keras 2) layer config as Keras 3 writes it: DTypePolicy, nested objects with their
// module, and no batch_input_shape (Keras 3 layers reject it; the InputLayer carries it).
json layer_config3(json config) {
  config.erase("batch_input_shape");
  // tf.keras 2.x's MultiHeadAttention records its built shapes in its config; Keras 3's takes
  // them from build_config and rejects them as keyword arguments.
  for (const char* key : {"query_shape", "value_shape", "key_shape"}) config.erase(key);
  // Kiln's (Keras 2) form is a name or {"class_name": "Policy", "config": {"name": ...}}.
  if (config.contains("dtype") && config["dtype"].is_string())
    config["dtype"] = dtype_policy(config["dtype"].get<std::string>());
  else if (config.contains("dtype") && config["dtype"].is_object())
    config["dtype"] = dtype_policy(config["dtype"]["config"]["name"].get<std::string>());
  for (auto& [key, value] : config.items())
    if (key.ends_with("_initializer") && value.is_object() && value.contains("class_name"))
      value = public_object("keras.initializers", value["class_name"].get<std::string>(),
                            value.value("config", json::object()));
  return config;
}

json layer_entry3(const std::string& class_name, const json& config);

// A wrapper's inner layer config renamed (Keras 3's Bidirectional names its two layers
// forward_<name> and backward_<name>, and recreates them from these configs).
json renamed_entry3(const json& inner, const std::string& name, bool flip_go_backwards) {
  json c = inner.at("config");
  c["name"] = name;
  if (flip_go_backwards) c["go_backwards"] = !c.value("go_backwards", false);
  return layer_entry3(inner.at("class_name").get<std::string>(), c);
}

// Keras 3's hard_sigmoid is relu6(x + 3) / 6: Kiln's keras3_hard_sigmoid is written as it, and
// Kiln's (Keras 2's) clip(0.2x + 0.5, 0, 1) is refused, since a file saying hard_sigmoid would
// load into a different model.
void activations3(json& c, const std::string& class_name) {
  for (const char* key : {"activation", "recurrent_activation"}) {
    if (c.value(key, json()) == "keras3_hard_sigmoid") c[key] = "hard_sigmoid";
    else if (c.value(key, json()) == "hard_sigmoid")
      KILN_THROW(ConfigError, "[", c.value("name", class_name), "] ", key, "=hard_sigmoid is Keras 2's ",
                 "clip(0.2x + 0.5, 0, 1), and Keras 3's hard_sigmoid is relu6(x + 3) / 6: a .keras file cannot ",
                 "say which. Hint: save the model as .h5 (tf.keras 2.x), or use sigmoid.");
  }
}

// Keras 3's recurrent layers: no time_major (Keras 3 rejects it). Wrappers hold their inner
// layers as objects; Bidirectional names both of its layers (backward_layer too, as Keras 3
// writes it).
void recurrent_config3(const std::string& class_name, json& c) {
  if (class_name == "SimpleRNN" || class_name == "LSTM" || class_name == "GRU") {
    c.erase("time_major");
  } else if (class_name == "Bidirectional") {
    const json inner = c.at("layer");
    // An unnamed wrapped layer is its snake_case class name, as Keras names every layer.
    std::string name = inner.at("config").value("name", "");
    if (name.empty()) name = to_snake_case(inner.at("class_name").get<std::string>());
    c["layer"] = renamed_entry3(inner, "forward_" + name, false);
    c["backward_layer"] = renamed_entry3(inner, "backward_" + name, true);
  } else if (class_name == "TimeDistributed") {
    c["layer"] = layer_entry3(c.at("layer").at("class_name").get<std::string>(), c.at("layer").at("config"));
  }
}

json layer_entry3(const std::string& class_name, const json& config) {
  json c = layer_config3(config);
  // tf.keras 2's host layers carry their output dtype ("int64", "string"); Keras 3's pass
  // none to Layer, so they write the global float32 policy.
  if (class_name == "TextVectorization" || class_name == "StringLookup" || class_name == "IntegerLookup")
    c["dtype"] = dtype_policy("float32");
  // Keras 3 renamed LeakyReLU's alpha (it still reads alpha, with a deprecation warning).
  if (class_name == "LeakyReLU" && c.contains("alpha")) {
    c["negative_slope"] = c["alpha"];
    c.erase("alpha");
  }
  recurrent_config3(class_name, c);
  activations3(c, class_name);
  return public_object("keras.layers", class_name, std::move(c));
}

json input_layer3(const json& shape, const std::string& dtype, const std::string& name) {
  return public_object("keras.layers", "InputLayer",
                       {{"batch_shape", shape}, {"dtype", dtype}, {"sparse", false}, {"name", name}});
}

// Keras 3's Optimizer config: the base keys every optimizer writes, Kiln's own keys, and
// none of Keras 2's (decay, is_legacy_optimizer), which Keras 3 rejects.
json optimizer_config3(const Optimizer& optimizer) {
  json c = json::parse(optimizer.get_config());
  c.erase("decay");
  c.erase("is_legacy_optimizer");
  const json base = {{"weight_decay", nullptr}, {"clipnorm", nullptr}, {"global_clipnorm", nullptr},
                     {"clipvalue", nullptr}, {"use_ema", false}, {"ema_momentum", 0.99},
                     {"ema_overwrite_frequency", nullptr}, {"loss_scale_factor", nullptr},
                     {"gradient_accumulation_steps", nullptr}};
  for (const auto& [key, value] : base.items())
    if (!c.contains(key)) c[key] = value;
  if (optimizer.class_name() == "Adam" && !c.contains("amsgrad")) c["amsgrad"] = false;
  if (const auto* lso = dynamic_cast<const LossScaleOptimizer*>(&optimizer)) {
    // Keras 3 serializes the inner optimizer as an object of its own, and its wrapper is
    // always dynamic (it rejects a "dynamic" key).
    c["inner_optimizer"] = optimizer_config3(lso->inner_optimizer());
    if (lso->options().dynamic) c.erase("dynamic");
  }
  return public_object("keras.optimizers", optimizer.class_name(), c);
}

json compile_config3(const CompileOptions& options) {
  const json tc = json::parse(training_config_json(options));
  // Objects become Keras 3's public objects, inside a multi-output model's lists and dicts too.
  std::function<json(const json&, const char*)> public3 = [&](const json& j, const char* module) -> json {
    if (j.is_object() && j.contains("class_name")) return public_object(module, j["class_name"].get<std::string>(), j["config"]);
    if (!j.is_structured()) return j;
    json out = j;
    for (auto& [key, e] : out.items()) e = public3(e, module);
    return out;
  };
  const json loss = public3(tc["loss"], "keras.losses");
  const json metrics = public3(tc.value("metrics", json::array()), "keras.metrics");
  const json weighted = public3(tc.value("weighted_metrics", json()), "keras.metrics");
  return {{"optimizer", optimizer_config3(*options.optimizer)}, {"loss", loss}, {"loss_weights", tc["loss_weights"]},
          {"metrics", metrics}, {"weighted_metrics", weighted}, {"run_eagerly", false},
          {"steps_per_execution", options.steps_per_execution}, {"jit_compile", "auto"}};
}

// (layer name, node index) -> the node's output, for __keras_tensor__ shapes. Node indices
// follow Functional's: each layer's nodes in DFS post-order from the output.
using NodeKey = std::pair<std::string, int>;
void index_nodes(const std::shared_ptr<KerasNode>& node, std::set<const KerasNode*>& done,
                 std::map<const Layer*, int>& count, std::map<NodeKey, const KerasNode*>& out) {
  if (done.count(node.get())) return;
  for (const KerasTensor& in : node->inputs) index_nodes(in.node(), done, count, out);
  done.insert(node.get());
  out[{node->layer->name(), count[node->layer.get()]++}] = node.get();
}

json functional_config3(const Functional& model, const json& k2) {
  std::set<const KerasNode*> done;
  std::map<const Layer*, int> count;
  std::map<NodeKey, const KerasNode*> nodes;
  for (const KerasTensor& in : model.inputs()) index_nodes(in.node(), done, count, nodes);
  for (const KerasTensor& out : model.outputs()) index_nodes(out.node(), done, count, nodes);
  // Kiln's compiled layers compute in float32; an Input keeps its declared dtype, a host
  // layer gives int64 ids (output_mode "int") or float32 rows.
  std::map<std::string, std::string> input_dtypes;
  for (const json& entry : k2["config"]["layers"])
    if (entry["class_name"] == "InputLayer") input_dtypes[entry["name"].get<std::string>()] = entry["config"].value("dtype", "float32");
  auto tensor3 = [&](const json& ref) {
    const NodeKey key{ref[0].get<std::string>(), ref[1].get<int>()};
    KILN_CHECK(nodes.count(key), "functional node ", key.first, "[", key.second, "] is in the graph");
    const KerasNode* n = nodes.at(key);
    return json{{"class_name", "__keras_tensor__"},
                {"config", {{"shape", batch_shape(n->shape)},
                            {"dtype", input_dtypes.count(key.first) ? input_dtypes[key.first]
                                      : n->dtype == DType::kI64           ? "int64"
                                                                          : "float32"},
                            {"keras_history", json::array({key.first, key.second, ref.size() > 2 ? ref[2] : json(0)})}}}};
  };
  json layers = json::array();
  for (const json& entry : k2["config"]["layers"]) {
    const std::string cls = entry["class_name"].get<std::string>();
    const std::string name = entry["name"].get<std::string>();
    json e;
    if (cls == "InputLayer") {
      const json& c = entry["config"];
      e = input_layer3(c["batch_input_shape"], c.value("dtype", "float32"), name);
    } else if (const auto* nested = dynamic_cast<const ModelLayer*>(&model.get_layer(name))) {
      e = nested_model3(*nested);
    } else {
      e = layer_entry3(cls, entry["config"]);
    }
    json inbound = json::array();
    for (const json& node : entry["inbound_nodes"]) {
      // Kiln's Keras 2 node: the first call argument's tensors, each [name, index, 0, kwargs].
      json first = json::array();
      json kwargs = json::object();
      for (const json& r : node) {
        first.push_back(tensor3(r));
        if (r.size() > 3)
          for (const auto& [k, v] : r[3].items()) kwargs[k] = v.is_array() ? tensor3(v) : v;
      }
      json shapes = json::array();
      for (const json& t : first) shapes.push_back(t["config"]["shape"]);
      if (inbound.empty()) e["build_config"] = {{"input_shape", first.size() == 1 ? shapes[0] : shapes}};
      // Layer.get_build_config of a layer built from several tensor arguments:
      // {"shapes_dict": {"<argument>_shape": ...}} (MultiHeadAttention.build(query_shape, value_shape, key_shape)).
      if (inbound.empty() && cls == "MultiHeadAttention") {
        json shapes_dict = {{"query_shape", shapes[0]}};
        for (const char* arg : {"value", "key"})
          if (kwargs.contains(arg)) shapes_dict[std::string(arg) + "_shape"] = kwargs[arg]["config"]["shape"];
        e["build_config"] = {{"shapes_dict", shapes_dict}};
      }
      inbound.push_back({{"args", json::array({first.size() == 1 ? first[0] : first})}, {"kwargs", kwargs}});
    }
    e["name"] = name;
    e["inbound_nodes"] = inbound;
    layers.push_back(e);
  }
  const json& c = k2["config"];
  return {{"module", "keras.src.models.functional"}, {"class_name", "Functional"},
          {"config", {{"name", c["name"]}, {"trainable", true}, {"layers", layers},
                      {"input_layers", c["input_layers"]}, {"output_layers", c["output_layers"]}}},
          {"registered_name", "Functional"}};
}

// The dtype of the Input Keras 3 needs before a Sequential's first layer: the keys of a
// leading lookup layer or TextVectorization (Kiln's Sequential declares shapes only).
std::string sequential_input_dtype(const json& first) {
  const std::string cls = first["class_name"].get<std::string>();
  const bool invert = first["config"].value("invert", false);
  if (cls == "TextVectorization" || (cls == "StringLookup" && !invert)) return "string";
  if (cls == "IntegerLookup" || cls == "StringLookup") return "int64";
  return "float32";
}

json sequential_config3(const Model& model, const json& k2) {
  const json& src = k2["config"]["layers"];
  json layers = json::array();
  Dims shape;
  const bool built = !src.empty() && src[0]["config"].contains("batch_input_shape");
  if (built) {
    std::string input_name = "input_layer";
    for (int k = 1; std::any_of(model.layers().begin(), model.layers().end(),
                                [&](const LayerHandle& l) { return l->name() == input_name; });
         ++k)
      input_name = "input_layer_" + std::to_string(k);
    const json& bis = src[0]["config"]["batch_input_shape"];
    layers.push_back(input_layer3(bis, sequential_input_dtype(src[0]), input_name));
    for (size_t i = 1; i < bis.size(); ++i) shape.push_back(bis[i].is_null() ? kNoneDim : bis[i].get<int64_t>());
  }
  const Dims input_shape = shape;
  for (size_t i = 0; i < src.size(); ++i) {
    const auto* nested = dynamic_cast<const ModelLayer*>(model.layers()[i].get());
    json e = nested != nullptr ? nested_model3(*nested)
                               : layer_entry3(src[i]["class_name"].get<std::string>(), src[i]["config"]);
    if (built) {
      e["build_config"] = {{"input_shape", batch_shape(shape)}};
      shape = model.layers()[i]->compute_output_shape(shape);
    }
    layers.push_back(e);
  }
  json config = {{"name", k2["config"]["name"]}, {"trainable", true}, {"dtype", dtype_policy("float32")},
                 {"layers", layers}};
  json top = {{"module", "keras"}, {"class_name", "Sequential"}, {"config", json()}, {"registered_name", nullptr}};
  if (built) {
    config["build_input_shape"] = batch_shape(input_shape);
    top["build_config"] = {{"input_shape", batch_shape(input_shape)}};
  }
  top["config"] = config;
  return top;
}

}  // namespace

std::string keras3_config_json(const Model& model, bool include_compile) {
  const json k2 = json::parse(model.to_json());
  json top = k2["class_name"] == "Sequential" ? sequential_config3(model, k2)
                                              : functional_config3(dynamic_cast<const Functional&>(model), k2);
  if (include_compile && model.is_compiled()) top["compile_config"] = compile_config3(model.compile_options());
  return top.dump();
}

std::vector<std::string> keras3_layer_paths(const Model& model) {
  std::map<std::string, int> used;
  std::vector<std::string> out;
  for (const LayerHandle& l : model.layers()) {
    const std::string base = to_snake_case(l->class_name());
    auto [it, fresh] = used.emplace(base, 0);
    out.push_back("layers/" + (fresh ? base : base + "_" + std::to_string(++it->second)));
  }
  return out;
}

std::vector<Variable> keras3_optimizer_variables(const Optimizer& optimizer) {
  const std::vector<Variable> all = optimizer.variables();  // iterations, learning rate, slots
  std::vector<Variable> out{all[0]};
  if (!json::parse(optimizer.get_config())["learning_rate"].is_object()) out.push_back(all[1]);
  const std::vector<Variable> slots(all.begin() + 2, all.end());
  auto kind = [](const Variable& v) { return v.name().substr(v.name().rfind('/') + 1); };
  if (optimizer.class_name() == "RMSprop") {
    const size_t head = out.size();
    for (const char* k : {"velocity", "momentum", "average_gradient"})
      for (const Variable& s : slots)
        if (kind(s) == k) out.push_back(s);
    KILN_CHECK(out.size() == head + slots.size(), "every RMSprop slot has a Keras 3 kind");
    return out;
  }
  out.insert(out.end(), slots.begin(), slots.end());
  return out;
}

}  // namespace kiln::keras::internal
