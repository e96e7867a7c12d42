// Bidirectional and TimeDistributed: inner layers made from the wrapped layer's config, named
// under the wrapper so their weights carry tf.keras 2.x's names, and tracked as its weights.
#include "kiln/keras/layers/wrappers.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

// {"class_name": ..., "config": ...} as Keras serializes a layer (2.13+ adds module keys).
nlohmann::json layer_json(const std::string& class_name, const std::string& config) {
  return {{"class_name", class_name}, {"config", nlohmann::json::parse(config)}};
}

// The wrapped layer of a wrapper's config: (class name, config JSON).
std::pair<std::string, std::string> wrapped_layer(const nlohmann::json& j, const char* wrapper) {
  if (!j.contains("layer") || !j["layer"].is_object() || !j["layer"].contains("class_name") ||
      !j["layer"].contains("config"))
    KILN_THROW(ConfigError, "[", wrapper, ".from_config] expected \"layer\": {\"class_name\": ..., \"config\": ...}.");
  // The layer as Keras serializes it: {"class_name", "config"}, with 2.13+'s module,
  // registered_name and build_config.
  internal::expect_only_keys(j["layer"], {internal::serialized_object_keys()}, "wrapped layer",
                             str_cat(j.value("name", wrapper), ".layer"));
  return {j["layer"]["class_name"].get<std::string>(), j["layer"]["config"].dump()};
}

// A copy of `layer` made from its config, with go_backwards flipped when `reversed`.
std::shared_ptr<Recurrent> recurrent_copy(const std::string& class_name, const std::string& config, bool reversed) {
  nlohmann::json c = nlohmann::json::parse(config);
  if (reversed) c["go_backwards"] = !c.value("go_backwards", false);
  auto out = std::dynamic_pointer_cast<Recurrent>(layer_from_config(class_name, c.dump()).shared());
  if (!out)
    KILN_THROW(ValueError, "[Bidirectional] expected a recurrent layer (SimpleRNN, LSTM, GRU), received ", class_name, ".");
  return out;
}

Tensor reverse_time(const Tensor& x) {
  const int64_t steps = x.dim(1);
  std::vector<int32_t> order(static_cast<size_t>(steps));
  for (int64_t t = 0; t < steps; ++t) order[static_cast<size_t>(t)] = static_cast<int32_t>(steps - 1 - t);
  return take(x, Tensor::from_vector<int32_t>({steps}, order), 1);
}

}  // namespace

Bidirectional::Bidirectional(const Recurrent& layer, BidirectionalOptions options)
    : Layer(options.name, options.input_shape, options.dtype),
      layer_class_(layer.class_name()),
      layer_config_(layer.get_config()),
      inner_name_(layer.name().empty() ? to_snake_case(layer.class_name()) : layer.name()),
      options_(std::move(options)) {
  const std::string& m = options_.merge_mode;
  if (m != "concat" && m != "sum" && m != "mul" && m != "ave")
    KILN_THROW(ValueError, "[Bidirectional] merge_mode '", m, "' is not built; use concat, sum, mul or ave ",
               "(Keras's None, which returns both outputs, needs multi-output layers).");
  if (layer.options().return_state)
    KILN_THROW(ValueError, "[Bidirectional] a wrapped layer with return_state=true is not built in Kiln.");
  forward_ = recurrent_copy(layer_class_, layer_config_, false);
  backward_ = recurrent_copy(layer_class_, layer_config_, true);
  // Keras forces zero_output_for_mask = return_sequences on both directions.
  forward_->set_zero_output_for_mask(layer.options().return_sequences);
  backward_->set_zero_output_for_mask(layer.options().return_sequences);
}

Dims Bidirectional::compute_output_shape(const Dims& input_shape) const {
  Dims out = forward_->compute_output_shape(input_shape);
  if (options_.merge_mode == "concat") out.back() *= 2;
  return out;
}

Tensor Bidirectional::compute_mask(const Tensor& x, const Tensor& mask) const { return forward_->compute_mask(x, mask); }

void Bidirectional::build_weights(const Dims& input_shape) {
  forward_->set_name(name() + "/forward_" + inner_name_);
  backward_->set_name(name() + "/backward_" + inner_name_);
  forward_->build(input_shape);
  backward_->build(input_shape);
  track_weights(*forward_);
  track_weights(*backward_);
}

Tensor Bidirectional::call(const Tensor& x, bool training) { return call_masked(x, Tensor(), training); }

Tensor Bidirectional::call_masked(const Tensor& x, const Tensor& mask, bool training) {
  const Tensor fw = forward_->call_with_mask(x, mask, training);
  Tensor bw = backward_->call_with_mask(x, mask, training);
  if (forward_->options().return_sequences) bw = reverse_time(bw);
  const std::string& m = options_.merge_mode;
  if (m == "concat") return concat({fw, bw}, -1);
  if (m == "sum") return fw + bw;
  if (m == "mul") return fw * bw;
  return (fw + bw) * 0.5;
}

std::string Bidirectional::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["layer"] = layer_json(layer_class_, layer_config_);
  j["merge_mode"] = options_.merge_mode;
  return j.dump();
}

// Bidirectional's keys: the wrapped layer, merge_mode, backward_layer (refused below: Kiln
// runs the layer backwards) and num_constants (written only for constants, which Kiln lacks).
constexpr internal::ConfigKey kBidirectionalKeys[] = {
    {"layer"},
    {"merge_mode"},
    {"backward_layer"},
    {"num_constants", "null", "Kiln's recurrent layers take no constants"}};
Bidirectional Bidirectional::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Bidirectional.from_config");
  internal::expect_layer_keys(j, {kBidirectionalKeys}, "Bidirectional");
  BidirectionalOptions o;
  o.name = j.value("name", "");
  if (j.contains("merge_mode") && j["merge_mode"].is_null())
    KILN_THROW(ConfigError, "[", o.name, "] merge_mode=None (both outputs as a list) is not built in Kiln.");
  o.merge_mode = internal::guarded("Bidirectional.from_config", [&] { return j.value("merge_mode", std::string("concat")); });
  if (j.contains("backward_layer"))
    KILN_THROW(ConfigError, "[", o.name, "] a custom backward_layer is not built in Kiln.");
  o.input_shape = internal::input_shape_from(j);
  auto [cls, config] = wrapped_layer(j, "Bidirectional");
  Bidirectional b(*recurrent_copy(cls, config, false), o);
  b.set_trainable(j.value("trainable", true));
  return b;
}

TimeDistributed::TimeDistributed(const LayerHandle& layer, TimeDistributedOptions options)
    : Layer(options.name, options.input_shape, options.dtype),
      layer_class_(layer->class_name()),
      layer_config_(layer->get_config()),
      inner_(layer_from_config(layer_class_, layer_config_).shared()) {}

Dims TimeDistributed::compute_output_shape(const Dims& input_shape) const {
  if (input_shape.empty())
    KILN_THROW(ShapeError, "[", name(), "] expected input of shape (batch, time, ...), received a rank-1 batch.");
  Dims out{input_shape[0]};
  const Dims inner = inner_->compute_output_shape(Dims(input_shape.begin() + 1, input_shape.end()));
  out.insert(out.end(), inner.begin(), inner.end());
  return out;
}

void TimeDistributed::build_weights(const Dims& input_shape) {
  if (input_shape.empty())
    KILN_THROW(ShapeError, "[", name(), "] expected input of shape (batch, time, ...), received a rank-1 batch.");
  inner_->set_name(name());  // tf.keras 2.x: time_distributed/kernel
  inner_->build(Dims(input_shape.begin() + 1, input_shape.end()));
  track_weights(*inner_);
}

Tensor TimeDistributed::call(const Tensor& x, bool training) {
  Dims folded{x.dim(0) * x.dim(1)};
  folded.insert(folded.end(), x.dims().begin() + 2, x.dims().end());
  const Tensor y = (*inner_)(reshape(x, folded), training);
  Dims out{x.dim(0), x.dim(1)};
  out.insert(out.end(), y.dims().begin() + 1, y.dims().end());
  return reshape(y, out);
}

std::string TimeDistributed::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["layer"] = layer_json(layer_class_, layer_config_);
  return j.dump();
}

constexpr internal::ConfigKey kTimeDistributedKeys[] = {{"layer"}};
TimeDistributed TimeDistributed::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "TimeDistributed.from_config");
  internal::expect_layer_keys(j, {kTimeDistributedKeys}, "TimeDistributed");
  TimeDistributedOptions o;
  o.name = j.value("name", "");
  o.input_shape = internal::input_shape_from(j);
  auto [cls, config] = wrapped_layer(j, "TimeDistributed");
  TimeDistributed t(layer_from_config(cls, config), o);
  t.set_trainable(j.value("trainable", true));
  return t;
}

}  // namespace kiln::keras
