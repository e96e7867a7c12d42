// Functional: the graph walk (Keras's _map_graph_network: depth order, unique names, build),
// the forward pass over the nodes, the summary rows and the Keras 2 config JSON both ways.
#include "kiln/keras/models/functional.h"

#include <algorithm>
#include <set>

#include "kiln/core/check.h"
#include "kiln/core/str_cat.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/input_layer.h"
#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {
namespace {

using internal::KerasNode;

bool is_input_node(const KerasNode& n) { return n.inputs.empty() && dynamic_cast<InputLayer*>(n.layer.get()); }

// Keras's _build_map: nodes in DFS post-order from the output (each after its inputs), and
// each layer's first-visit (pre-order) index, which breaks ties between layers of one depth.
void build_map(const std::shared_ptr<KerasNode>& node, std::set<const KerasNode*>& done,
               std::vector<std::shared_ptr<KerasNode>>& post_order, std::map<const Layer*, int>& layer_index) {
  if (done.count(node.get())) return;
  layer_index.emplace(node->layer.get(), static_cast<int>(layer_index.size()));
  for (const KerasTensor& in : node->inputs) build_map(in.node(), done, post_order, layer_index);
  done.insert(node.get());
  post_order.push_back(node);
}

std::string keras_dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "float32";
    case DType::kF64: return "float64";
    case DType::kF16: return "float16";
    case DType::kBF16: return "bfloat16";
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
    case DType::kU8: return "uint8";
    case DType::kBool: return "bool";
    case DType::kString: return "string";
  }
  return "float32";
}

nlohmann::json shape_json(const Dims& dims) {
  nlohmann::json j = nlohmann::json::array({nullptr});
  for (int64_t d : dims) j.push_back(d == kNoneDim ? nlohmann::json() : nlohmann::json(d));
  return j;
}

}  // namespace

Functional::Functional(std::vector<KerasTensor> inputs, KerasTensor output, FunctionalOptions options)
    : Functional(std::move(inputs), std::vector<KerasTensor>{std::move(output)}, std::move(options)) {}

namespace {

using NamedTensors = std::vector<std::pair<std::string, KerasTensor>>;

// A dict of outputs in key order (Keras's nest.flatten of a dict); a key given twice is an error.
NamedTensors by_key(NamedTensors outputs, const std::string& model) {
  std::stable_sort(outputs.begin(), outputs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < outputs.size(); ++i)
    if (outputs[i].first == outputs[i - 1].first)
      KILN_THROW(ValueError, "[", model, "] the dict of outputs has the key '", outputs[i].first, "' twice.");
  return outputs;
}

std::vector<KerasTensor> values_of(const NamedTensors& outputs) {
  std::vector<KerasTensor> out;
  for (const auto& entry : outputs) out.push_back(entry.second);
  return out;
}

}  // namespace

Functional::Functional(std::vector<KerasTensor> inputs, NamedTensors outputs, FunctionalOptions options)
    : Functional(std::move(inputs), values_of(outputs = by_key(std::move(outputs), options.name)), options) {
  for (const auto& entry : outputs) output_keys_.push_back(entry.first);
}

Functional::Functional(std::vector<KerasTensor> inputs, std::vector<KerasTensor> outputs, FunctionalOptions options)
    : Model(options.name), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
  if (inputs_.empty()) KILN_THROW(ValueError, "[", name_, "] a functional model needs at least one input.");
  std::set<const KerasNode*> input_nodes;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!inputs_[i].defined() || !is_input_node(*inputs_[i].node()))
      KILN_THROW(ValueError, "[", name_, "] input ", i, " is not a keras::Input tensor. Hint: "
                 "Functional({Input({16})}, output) takes the tensors Input() returned.");
    if (!input_nodes.insert(inputs_[i].node().get()).second)
      KILN_THROW(ValueError, "[", name_, "] input ", i, " is listed twice.");
  }
  if (outputs_.empty()) KILN_THROW(ValueError, "[", name_, "] a functional model needs at least one output.");
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (!outputs_[i].defined()) KILN_THROW(ValueError, "[", name_, "] output ", i, " is an undefined KerasTensor.");

  // Keras's _build_map walks the outputs in order, sharing the visited nodes.
  std::set<const KerasNode*> done;
  std::map<const Layer*, int> layer_index;
  for (const KerasTensor& out : outputs_) build_map(out.node(), done, nodes_, layer_index);
  for (const auto& n : nodes_)
    if (n->inputs.empty() && !input_nodes.count(n.get()))
      KILN_THROW(ValueError, "[", name_, "] graph disconnected: the output needs the input '", n->layer->name().empty() ? "(unnamed)" : n->layer->name(),
                 "' ", shape_json(n->shape).dump(), ", which is not among the model's inputs. Hint: list every Input the output depends on.");
  for (const KerasTensor& in : inputs_)  // an input the output ignores still belongs to the model
    if (!done.count(in.node().get())) {
      layer_index.emplace(in.node()->layer.get(), -1);
      nodes_.insert(nodes_.begin(), in.node());
    }

  // Depths (Keras): the output node is 0, a node's inputs are deeper, a layer is as deep as its
  // deepest node; layers are listed deepest first, ties by first visit.
  std::map<const KerasNode*, int> node_depth;
  std::map<const Layer*, int> layer_depth;
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    const KerasNode* n = it->get();
    int depth = std::max(node_depth[n], layer_depth[n->layer.get()]);
    layer_depth[n->layer.get()] = depth;
    node_depth[n] = depth;
    for (const KerasTensor& in : n->inputs) node_depth[in.node().get()] = std::max(node_depth[in.node().get()], depth + 1);
  }
  std::vector<std::shared_ptr<Layer>> layers;
  for (const auto& n : nodes_)
    if (std::find(layers.begin(), layers.end(), n->layer) == layers.end()) layers.push_back(n->layer);
  std::stable_sort(layers.begin(), layers.end(), [&](const auto& a, const auto& b) {
    if (layer_depth[a.get()] != layer_depth[b.get()]) return layer_depth[a.get()] > layer_depth[b.get()];
    return layer_index[a.get()] < layer_index[b.get()];
  });

  // Names: user-chosen ones are reserved first, then the rest get Keras's defaults.
  std::set<std::string> seen;
  for (const auto& l : layers)
    if (!l->name().empty()) {
      if (!seen.insert(l->name()).second)
        KILN_THROW(ValueError, "[", name_, "] two layers are named '", l->name(), "'. Hint: layer names must be unique within a model.");
      name_scope_.reserve(l->name());
    }
  for (const auto& l : layers) {
    if (!l->name().empty()) continue;
    if (dynamic_cast<InputLayer*>(l.get())) {  // Keras numbers inputs from 1: input_1, input_2
      std::string name;
      for (int k = 1; name.empty() || seen.count(name); ++k) name = "input_" + std::to_string(k);
      seen.insert(name);
      name_scope_.reserve(name);
      l->set_name(name);
    } else {
      l->set_name(name_scope_.unique(to_snake_case(l->class_name())));
    }
  }
  for (const auto& l : layers) layers_.push_back(l);

  std::map<const Layer*, int> nodes_per_layer;
  for (const auto& n : nodes_) {
    node_index_[n.get()] = nodes_per_layer[n->layer.get()]++;
    std::vector<Dims> shapes;
    for (const KerasTensor& in : n->inputs) shapes.push_back(in.shape());
    if (!n->inputs.empty()) n->layer->build_multi(shapes);
  }

  // Keras prints a model as a plain stack when each depth has one single-input node and no
  // layer is shared.
  std::map<int, int> nodes_at_depth;
  for (const auto& n : nodes_) {
    if (++nodes_at_depth[node_depth[n.get()]] > 1 || n->inputs.size() > 1) sequential_like_ = false;
  }
  for (const auto& [layer, count] : nodes_per_layer)
    if (count > 1) sequential_like_ = false;
}

Tensor Functional::call(const Tensor& x, bool training) { return call_multi({x}, training); }

const KerasTensor& Functional::output() const {
  if (outputs_.size() != 1)
    KILN_THROW(ValueError, "[", name_, "] the model has ", outputs_.size(), " outputs. Hint: outputs() lists them.");
  return outputs_[0];
}

std::vector<std::string> Functional::output_names() const {
  if (!output_keys_.empty()) return output_keys_;
  std::vector<std::string> names;
  for (const KerasTensor& out : outputs_) names.push_back(out.layer().name());
  return names;
}

Tensor Functional::call_multi(const std::vector<Tensor>& inputs, bool training) {
  if (outputs_.size() != 1)
    KILN_THROW(ValueError, "[", name_, "] the model has ", outputs_.size(), " outputs; call() and call_multi() "
               "return one tensor. Hint: call_outputs() returns one per output.");
  return call_outputs(inputs, training)[0];
}

namespace {

std::string layer_label(const Layer& l) { return str_cat("'", l.name(), "' (", l.class_name(), ")"); }

}  // namespace

std::vector<std::vector<std::shared_ptr<KerasNode>>> Functional::host_chains() const {
  std::map<const KerasNode*, std::vector<std::shared_ptr<KerasNode>>> readers;
  for (const auto& n : nodes_)
    for (const KerasTensor& in : n->inputs) readers[in.node().get()].push_back(n);
  std::set<const KerasNode*> outputs;
  for (const KerasTensor& o : outputs_) outputs.insert(o.node().get());
  auto on_host = [](const std::shared_ptr<KerasNode>& n) { return dynamic_cast<const HostLayer*>(n->layer.get()) != nullptr; };
  std::vector<std::vector<std::shared_ptr<KerasNode>>> chains;
  for (const KerasTensor& in : inputs_) {
    std::vector<std::shared_ptr<KerasNode>> chain;
    const KerasNode* at = in.node().get();
    for (;;) {
      const std::vector<std::shared_ptr<KerasNode>>& next = readers[at];
      const auto host = std::find_if(next.begin(), next.end(), on_host);
      if (host == next.end()) break;
      // fit, evaluate and predict replace the value a host layer reads by what it returns, so
      // nothing else may read that value.
      const std::string what = chain.empty() ? str_cat("input '", in.layer().name(), "'")
                                             : str_cat("the output of ", layer_label(*chain.back()->layer));
      if (outputs.count(at))
        KILN_THROW(CompileError, "[", name_, "] ", what, " feeds the host layer ", layer_label(*(*host)->layer),
                   " and is also a model output; the host layers replace the value they read before the compiled "
                   "step. Hint: output the host layer's result instead, or map the layer over the Dataset.");
      if (next.size() > 1) {
        const auto other = next[next[0] == *host ? 1 : 0];
        KILN_THROW(CompileError, "[", name_, "] ", what, " feeds the host layer ", layer_label(*(*host)->layer),
                   " and also ", layer_label(*other->layer), "; the host layers replace the value they read before "
                   "the compiled step, so it can feed only them. Hint: give ", other->layer->name(),
                   " its own Input, or map the host layer over the Dataset.");
      }
      chain.push_back(*host);
      at = host->get();
    }
    chains.push_back(std::move(chain));
  }
  return chains;
}

std::vector<std::vector<const HostLayer*>> Functional::host_layers() const {
  std::vector<std::vector<const HostLayer*>> out;
  for (const auto& chain : host_chains()) {
    out.emplace_back();
    for (const auto& n : chain) out.back().push_back(dynamic_cast<const HostLayer*>(n->layer.get()));
  }
  return out;
}

std::vector<Tensor> Functional::call_outputs(const std::vector<Tensor>& inputs, bool training) {
  if (inputs.size() != inputs_.size())
    KILN_THROW(ValueError, "[", name_, "] expected ", inputs_.size(), " inputs, received ", inputs.size(),
               ". Hint: dataset elements are (x_1, ..., x_n, y) for a model with n inputs.");
  // A traced call (the compiled steps) starts after the host layers, which fit, evaluate and
  // predict ran already: an input arrives as its last host layer's output.
  const bool traced = std::any_of(inputs.begin(), inputs.end(), [](const Tensor& x) { return x.is_symbolic(); });
  std::set<const KerasNode*> ran_on_host;
  std::map<const KerasNode*, Tensor> values;
  const std::vector<std::vector<std::shared_ptr<KerasNode>>> chains =
      traced ? host_chains() : std::vector<std::vector<std::shared_ptr<KerasNode>>>(inputs_.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const KerasTensor& spec = inputs_[i];
    const Tensor& x = inputs[i];
    const KerasNode* feed = chains[i].empty() ? spec.node().get() : chains[i].back().get();
    for (const auto& n : chains[i]) ran_on_host.insert(n.get());
    // A None dimension takes any size: the model is traced once per concrete shape.
    if (x.rank() != static_cast<int>(feed->shape.size()) + 1 ||
        !std::equal(feed->shape.begin(), feed->shape.end(), x.dims().begin() + 1,
                    [](int64_t want, int64_t got) { return want == kNoneDim || want == got; }))
      KILN_THROW(ShapeError, "[", name_, "] input '", spec.layer().name(), "' expected shape ",
                 shape_json(feed->shape).dump(), " (batch first",
                 chains[i].empty() ? "" : str_cat(", after its host layers up to '", chains[i].back()->layer->name(), "'"),
                 "), received ", x.shape(), ".");
    // Keras casts inputs to the Input dtype; a host layer's output keeps its own.
    values[feed] = chains[i].empty() ? cast(x, spec.dtype()) : x;
  }
  std::map<const KerasNode*, Tensor> masks;  // Keras's _keras_mask of each node's output
  for (const auto& n : nodes_) {
    if (n->inputs.empty() || ran_on_host.count(n.get())) continue;
    std::vector<Tensor> xs;
    for (const KerasTensor& in : n->inputs) xs.push_back(values.at(in.node().get()));
    const Tensor mask = n->inputs.size() == 1 ? masks[n->inputs[0].node().get()] : Tensor();
    for (const KerasTensor& in : n->inputs)
      if (n->inputs.size() > 1 && masks[in.node().get()].defined())
        KILN_THROW(ValueError, "[", n->layer->name(), "] an input of this ", n->layer->class_name(),
                   " carries a mask; Kiln propagates masks through single-input layers only. Hint: consume the ",
                   "mask with a recurrent layer (return_sequences=false) before merging.");
    if (mask.defined() && !n->flags.empty())
      KILN_THROW(ValueError, "[", n->layer->name(), "] a masked input with call arguments is not supported.");
    values[n.get()] = mask.defined() ? n->layer->call_with_mask(xs[0], mask, training) : (*n->layer)(xs, training, n->flags);
    masks[n.get()] = n->layer->compute_mask(xs[0], mask);
  }
  std::vector<Tensor> out;
  output_masks_.clear();
  for (const KerasTensor& o : outputs_) {
    output_masks_.push_back(masks[o.node().get()]);
    out.push_back(values.at(o.node().get()));
  }
  return out;
}

std::vector<Dims> Functional::layer_output_shapes() const {
  std::vector<Dims> out;
  for (const LayerHandle& l : layers_) {
    std::vector<Dims> shapes;
    for (const auto& n : nodes_)
      if (n->layer.get() == l.get()) shapes.push_back(n->shape);
    const bool same = std::all_of(shapes.begin(), shapes.end(), [&](const Dims& d) { return d == shapes[0]; });
    out.push_back(same ? shapes[0] : Dims{});  // a shared layer with several shapes: "multiple"
  }
  return out;
}

std::pair<std::string, int> Functional::node_ref(const KerasTensor& t) const {
  return {t.layer().name(), node_index_.at(t.node().get())};
}

std::vector<Model::SummaryRow> Functional::summary_rows() const {
  const std::vector<Dims> shapes = layer_output_shapes();
  std::vector<SummaryRow> rows;
  for (size_t i = 0; i < layers_.size(); ++i) {
    SummaryRow row{.layer = layers_[i].get(), .output_shape = shapes[i],
                   .list_shape = dynamic_cast<const InputLayer*>(layers_[i].get()) != nullptr};
    for (const auto& n : nodes_)
      if (n->layer.get() == layers_[i].get())
        for (const KerasTensor& in : n->inputs) {
          auto [name, index] = node_ref(in);
          row.connected_to.push_back(str_cat(name, "[", index, "][0]"));
        }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string Functional::to_json() const {
  auto ref = [&](const KerasTensor& t) {
    auto [name, index] = node_ref(t);
    return nlohmann::json::array({name, index, 0});
  };
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerHandle& l : layers_) {
    nlohmann::json config = nlohmann::json::parse(l->get_config());
    nlohmann::json inbound = nlohmann::json::array();
    for (const auto& n : nodes_) {
      if (n->layer.get() != l.get()) continue;
      if (n->inputs.empty()) {  // Keras 2's InputLayer config
        config = {{"batch_input_shape", shape_json(n->shape)}, {"dtype", keras_dtype_name(n->dtype)},
                  {"sparse", false}, {"ragged", false}, {"name", l->name()}};
        continue;
      }
      // Keras Node.serialize: the first call argument's tensors each carry the kwargs (the
      // later tensor arguments by name, and the flags).
      const std::vector<std::string> arg_names = l->call_arg_names();
      nlohmann::json kwargs = nlohmann::json::object();
      for (const auto& [flag, value] : n->flags) kwargs[flag] = value;
      size_t first_arg_count = n->inputs.size();
      if (!arg_names.empty()) {
        first_arg_count = 1;
        for (size_t i = 1; i < n->inputs.size(); ++i) kwargs[arg_names.at(i - 1)] = ref(n->inputs[i]);
      }
      nlohmann::json node = nlohmann::json::array();
      for (size_t i = 0; i < first_arg_count; ++i) {
        nlohmann::json r = ref(n->inputs[i]);
        r.push_back(kwargs);
        node.push_back(r);
      }
      inbound.push_back(node);
    }
    layers.push_back({{"class_name", l->class_name()}, {"config", config}, {"name", l->name()}, {"inbound_nodes", inbound}});
  }
  nlohmann::json input_layers = nlohmann::json::array();
  for (const KerasTensor& in : inputs_) input_layers.push_back(ref(in));
  nlohmann::json output_layers = output_keys_.empty() ? nlohmann::json::array() : nlohmann::json::object();
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (output_keys_.empty()) output_layers.push_back(ref(outputs_[i]));
    else output_layers[output_keys_[i]] = ref(outputs_[i]);  // Keras's nest.pack_sequence_as of a dict
  nlohmann::json j = {{"class_name", "Functional"},
                      {"config", {{"name", name_}, {"layers", layers}, {"input_layers", input_layers},
                                  {"output_layers", output_layers}}}};
  return j.dump();
}

namespace {

bool is_tensor_ref(const nlohmann::json& j) { return j.is_array() && j.size() >= 3 && j[0].is_string() && j[1].is_number_integer(); }

}  // namespace

std::unique_ptr<Functional> Functional::from_json(const std::string& json, const LayerFromConfig& make_layer) {
  const char* where = "Functional.from_json";
  nlohmann::json j = internal::parse(json, where);
  const std::string class_name = j.value("class_name", "");
  if (class_name != "Functional" && class_name != "Model")
    KILN_THROW(ConfigError, "[", where, "] expected class_name \"Functional\" (or \"Model\"), received \"", class_name, "\".");
  try {
    const nlohmann::json& config = j.at("config");
    std::map<std::string, LayerHandle> layers;
    std::map<std::pair<std::string, int>, KerasTensor> tensors;  // (layer, node index) -> output
    std::vector<std::pair<std::string, const nlohmann::json*>> pending;  // (layer, its node data) in order
    for (const nlohmann::json& entry : config.at("layers")) {
      const std::string layer_class = entry.at("class_name").get<std::string>();
      const nlohmann::json& layer_config = entry.at("config");
      const std::string name = entry.value("name", layer_config.value("name", ""));
      if (layer_class == "InputLayer") {
        InputLayer::from_config(layer_config.dump());  // checks its keys as a Sequential's InputLayer is checked
        DType dtype = layer_config.contains("dtype") ? parse_dtype(layer_config["dtype"].get<std::string>()) : DType::kF32;
        tensors[{name, 0}] = Input(internal::input_shape_from(layer_config), {.name = name, .dtype = dtype});
        continue;
      }
      layers[name] = (make_layer ? make_layer : layer_from_config)(layer_class, layer_config.dump());
      layers[name]->set_name(name);
      for (const nlohmann::json& node : entry.at("inbound_nodes")) pending.emplace_back(name, &node);
    }
    // Nodes in file order; a node whose inputs are not made yet waits for a later round
    // (Keras's deque), which terminates because each round makes at least one node.
    std::map<std::string, int> made;
    while (!pending.empty()) {
      std::vector<std::pair<std::string, const nlohmann::json*>> waiting;
      for (const auto& [name, node] : pending) {
        std::vector<const nlohmann::json*> first_arg;
        for (const nlohmann::json& r : *node) first_arg.push_back(&r);
        if (is_tensor_ref(*node)) first_arg = {node};  // a bare reference (unnested single input)
        std::vector<std::pair<std::string, int>> refs;
        CallFlags flags;
        std::map<std::string, std::pair<std::string, int>> kwarg_refs;
        for (const nlohmann::json* r : first_arg) {
          if (!is_tensor_ref(*r)) KILN_THROW(ConfigError, "[", where, "] layer '", name, "': malformed inbound node ", r->dump(), ".");
          refs.emplace_back((*r)[0].get<std::string>(), (*r)[1].get<int>());
          if (r->size() < 4) continue;
          for (const auto& [key, value] : (*r)[3].items()) {
            if (is_tensor_ref(value)) kwarg_refs[key] = {value[0].get<std::string>(), value[1].get<int>()};
            else if (value.is_boolean()) flags[key] = value.get<bool>();
            else if (!value.is_null())
              KILN_THROW(ConfigError, "[", where, "] layer '", name, "': unsupported call argument ", key, "=", value.dump(), ".");
          }
        }
        for (const std::string& arg : layers[name]->call_arg_names())
          if (kwarg_refs.count(arg)) refs.push_back(kwarg_refs[arg]);
        const bool ready = std::all_of(refs.begin(), refs.end(), [&](const auto& r) { return tensors.count(r) > 0; });
        if (!ready) {
          waiting.emplace_back(name, node);
          continue;
        }
        std::vector<KerasTensor> inputs;
        for (const auto& r : refs) inputs.push_back(tensors.at(r));
        tensors[{name, made[name]++}] = internal::record_call(layers[name].shared(), inputs, flags);
      }
      if (waiting.size() == pending.size())
        KILN_THROW(ConfigError, "[", where, "] layer '", waiting[0].first, "' refers to a layer output that no node makes.");
      pending = std::move(waiting);
    }
    auto lookup = [&](const nlohmann::json& r) {
      if (!is_tensor_ref(r) || !tensors.count({r[0].get<std::string>(), r[1].get<int>()}))
        KILN_THROW(ConfigError, "[", where, "] unknown tensor reference ", r.dump(), ".");
      return tensors.at({r[0].get<std::string>(), r[1].get<int>()});
    };
    std::vector<KerasTensor> inputs;
    for (const nlohmann::json& r : config.at("input_layers")) inputs.push_back(lookup(r));
    const nlohmann::json& refs = config.at("output_layers");
    const FunctionalOptions options{config.value("name", "model")};
    if (refs.is_object()) {  // a dict of outputs
      NamedTensors outputs;
      for (const auto& [key, r] : refs.items()) outputs.emplace_back(key, lookup(r));
      return std::make_unique<Functional>(inputs, outputs, options);
    }
    std::vector<KerasTensor> outputs;
    if (is_tensor_ref(refs)) outputs.push_back(lookup(refs));  // a bare reference: one output
    else
      for (const nlohmann::json& r : refs) outputs.push_back(lookup(r));
    return std::make_unique<Functional>(inputs, outputs, options);
  } catch (const nlohmann::json::exception& e) {
    KILN_THROW(ConfigError, "[", where, "] malformed Functional config: ", e.what(), ".");
  }
}

}  // namespace kiln::keras
