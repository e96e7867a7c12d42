// Recurrent layers: x @ kernel for every step at once (one matmul), then the cell's recurrent
// part scanned over time-major steps, with Keras's mask semantics in the scan body.
#include "kiln/keras/layers/recurrent.h"

#include <cstring>

#include "kiln/core/check.h"
#include "kiln/keras/activations.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/random_key_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/random.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/scan.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

Recurrent::Recurrent(int64_t units, RecurrentOptions options, int gates, const char* cell)
    : Layer(options.name, options.input_shape, options.dtype),
      units_(units),
      options_(std::move(options)),
      gates_(gates),
      cell_(cell) {
  if (units <= 0) KILN_THROW(ValueError, "[", class_name_of(cell), "] expected units > 0, received units=", units, ".");
  const std::pair<const char*, double> rates[] = {{"dropout", options_.dropout},
                                                  {"recurrent_dropout", options_.recurrent_dropout}};
  for (const auto& [key, rate] : rates)
    if (!(rate >= 0 && rate < 1))
      KILN_THROW(ValueError, "[", options_.name.empty() ? class_name_of(cell) : options_.name, "] expected ", key,
                 " in [0, 1), received ", key, "=", rate, ".");
  set_activity_regularizer(options_.activity_regularizer);
  activations::get(options_.activation);  // unknown names fail at construction, as in Keras
  activations::get(options_.recurrent_activation);
}

std::string Recurrent::class_name_of(const std::string& cell) {
  if (cell == "lstm_cell") return "LSTM";
  if (cell == "gru_cell") return "GRU";
  return "SimpleRNN";
}

Dims Recurrent::compute_output_shape(const Dims& input_shape) const {
  if (input_shape.size() != 2)
    KILN_THROW(ShapeError, "[", name(), "] expected input of shape (batch, time, features), received per-example ",
               "dims of rank ", input_shape.size(), ".");
  return options_.return_sequences ? Dims{input_shape[0], units_} : Dims{units_};
}

Dims Recurrent::compute_output_shape_multi(const std::vector<Dims>& input_shapes) const {
  return compute_output_shape(input_shapes.at(0));
}

Tensor Recurrent::compute_mask(const Tensor& /*x*/, const Tensor& mask) const {
  return options_.return_sequences ? mask : Tensor();
}

void Recurrent::build_weights_multi(const std::vector<Dims>& input_shapes) { build_weights(input_shapes.at(0)); }

void Recurrent::build_weights(const Dims& input_shape) {
  if (input_shape.size() != 2)
    KILN_THROW(ShapeError, "[", name(), "] expected input of shape (batch, time, features), received per-example ",
               "dims of rank ", input_shape.size(), ". Hint: a recurrent layer reads sequences; reshape or embed first.");
  const RecurrentOptions& o = options_;
  if (o.dropout > 0 || o.recurrent_dropout > 0) counter_ = internal::make_seed_state(name());
  kernel_ = add_weight(cell_ + "/kernel", {input_shape[1], gates_ * units_}, o.kernel_initializer, /*trainable=*/true,
                       o.kernel_regularizer, o.kernel_constraint);
  recurrent_kernel_ = add_weight(cell_ + "/recurrent_kernel", {units_, gates_ * units_}, o.recurrent_initializer,
                                 /*trainable=*/true, o.recurrent_regularizer, o.recurrent_constraint);
  if (o.use_bias) {
    bias_ = add_weight(cell_ + "/bias", bias_dims(), o.bias_initializer, /*trainable=*/true, o.bias_regularizer,
                       o.bias_constraint);
    if (gates_ == 4 && options_.unit_forget_bias) {
      // Keras's unit_forget_bias: the forget gate's block starts at ones. Written into the
      // variable's bytes (the copy shares them), in whatever dtype it keeps.
      HostTensor storage = bias_.storage();
      HostTensor values = storage.astype(DType::kF64);
      for (int64_t k = units_; k < 2 * units_; ++k) values.data<double>()[static_cast<size_t>(k)] = 1.0;
      const HostTensor stored = values.astype(storage.dtype());
      std::memmove(storage.raw_data(), stored.raw_data(), static_cast<size_t>(storage.shape().byte_size()));
    }
  }
}

Tensor Recurrent::gate(const Tensor& t, int k) const {
  Dims starts(static_cast<size_t>(t.rank()), 0), limits = t.dims();
  starts.back() = k * units_;
  limits.back() = (k + 1) * units_;
  return slice(t, starts, limits);
}

Tensor Recurrent::recurrent_projection(const Tensor& h, const Tensor& recurrent_kernel,
                                       const std::vector<Tensor>& h_masks) const {
  if (h_masks.empty()) return matmul(h, recurrent_kernel);
  std::vector<Tensor> parts;
  for (int k = 0; k < static_cast<int>(h_masks.size()); ++k)
    parts.push_back(matmul(h * h_masks[static_cast<size_t>(k)], gate(recurrent_kernel, k)));
  return parts.size() == 1 ? parts[0] : concat(parts, 1);
}

Tensor Recurrent::input_projection(const Tensor& x, const std::vector<Tensor>& x_masks) const {
  const Tensor time_major = transpose(x, {1, 0, 2});  // (time, batch, features)
  if (x_masks.empty()) return matmul(time_major, kernel_);
  // A mask (batch, features) is the same at every step: broadcast over the time axis.
  auto masked = [&](const Tensor& m) { return time_major * expand_dims(m, 0); };
  if (x_masks.size() == 1) return matmul(masked(x_masks[0]), kernel_);
  std::vector<Tensor> parts;
  for (int k = 0; k < static_cast<int>(x_masks.size()); ++k)
    parts.push_back(matmul(masked(x_masks[static_cast<size_t>(k)]), gate(kernel_, k)));
  return concat(parts, 2);
}

Recurrent::DropoutMasks Recurrent::draw_dropout_masks(int64_t batch, int64_t features, DType dtype) const {
  const RecurrentOptions& o = options_;
  // tf.keras 2.15: recurrent_dropout switches LSTM and GRU to implementation 1, with a mask per
  // gate for the inputs and for h; implementation 2 (no recurrent dropout) masks the inputs
  // once for all gates. SimpleRNN has one of each.
  const int64_t per_gate = o.recurrent_dropout > 0 ? gates_ : 1;
  const Tensor key = internal::next_random_key(counter_, o.seed, name());
  // One draw per kind, its columns split per gate; the kinds take distinct keys.
  auto draw = [&](double rate, int64_t width, const Tensor& kind_key) {
    std::vector<Tensor> masks;
    if (rate == 0) return masks;
    const Tensor all = dropout(ones(Shape(dtype, {batch, per_gate * width})), rate, kind_key, /*training=*/true);
    for (int64_t k = 0; k < per_gate; ++k) masks.push_back(slice(all, {0, k * width}, {batch, (k + 1) * width}));
    return masks;
  };
  return {draw(o.dropout, features, key * 2.0), draw(o.recurrent_dropout, units_, key * 2.0 + 1.0)};
}

Tensor Recurrent::call(const Tensor& x, bool training) { return call_masked(x, Tensor(), training); }

Tensor Recurrent::call_masked(const Tensor& x, const Tensor& mask, bool training) {
  std::vector<Tensor> out = run(x, mask, {}, training);
  return out[0];
}

Tensor Recurrent::call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool training) {
  const bool has_mask = flags.count("mask") && flags.at("mask");
  for (const auto& [flag, on] : flags)
    if (flag != "mask")
      KILN_THROW(ValueError, "[", name(), "] ", class_name(), " takes the call flag 'mask' only, received '", flag, "'.");
  const size_t first_state = has_mask ? 2 : 1;
  std::vector<Tensor> states(inputs.begin() + static_cast<std::ptrdiff_t>(std::min(first_state, inputs.size())),
                             inputs.end());
  return run(inputs.at(0), has_mask ? inputs.at(1) : Tensor(), std::move(states), training)[0];
}

std::vector<Tensor> Recurrent::call_with_state(const Tensor& x, const Tensor& mask,
                                               const std::vector<Tensor>& initial_state, bool training) {
  std::vector<Tensor> inputs{x};
  CallFlags flags;
  if (mask.defined()) {
    inputs.push_back(mask);
    flags["mask"] = true;
  }
  inputs.insert(inputs.end(), initial_state.begin(), initial_state.end());
  std::vector<Tensor> out{(*this)(inputs, training, flags)};  // the output's activity loss added
  for (const Tensor& state : self_as<Recurrent>().last_states_) out.push_back(add_activity_loss(state));
  return out;
}

std::vector<Tensor> Recurrent::run(const Tensor& x, const Tensor& mask, std::vector<Tensor> states, bool training) const {
  const int64_t features = kernel_.shape().dim(0);
  if (x.rank() != 3 || x.dim(2) != features)
    KILN_THROW(ShapeError, "[", name(), "] expected input of shape (batch, time, ", features, "), received ",
               x.shape(), ".");
  const int64_t batch = x.dim(0), steps = x.dim(1);
  if (mask.defined() && (mask.dtype() != DType::kBool || mask.dims() != Dims{batch, steps}))
    KILN_THROW(ShapeError, "[", name(), "] expected a bool mask of dims (", batch, ", ", steps, "), received ",
               mask.shape(), ".");
  const Shape state_shape(x.dtype(), {batch, units_});
  if (states.empty())
    for (int k = 0; k < num_states(); ++k) states.push_back(zeros(state_shape));
  if (static_cast<int>(states.size()) != num_states())
    KILN_THROW(ValueError, "[", name(), "] ", class_name(), " takes ", num_states(), " initial state tensor(s), received ",
               states.size(), ".");
  for (const Tensor& s : states)
    if (s.shape() != state_shape)
      KILN_THROW(ShapeError, "[", name(), "] expected initial states of shape ", state_shape, ", received ", s.shape(), ".");

  last_dropout_masks_ = {};
  if (training && (options_.dropout > 0 || options_.recurrent_dropout > 0))
    last_dropout_masks_ = draw_dropout_masks(batch, features, x.dtype());
  const std::vector<Tensor> h_masks = last_dropout_masks_.recurrent;
  // Time-major for scan: x @ kernel for all steps in one matmul (one per gate with per-gate
  // input masks), the recurrence per step.
  Tensor x_proj = input_projection(x, last_dropout_masks_.input);
  if (options_.use_bias) x_proj = x_proj + input_bias();
  std::vector<Tensor> scanned{x_proj};
  if (mask.defined()) scanned.push_back(transpose(mask, {1, 0}));
  // Masked steps repeat the previous output, which the carry then holds after the states
  // (zeros at first: backend.rnn's zero output).
  const bool repeat_output = mask.defined() && !zero_output_for_mask_;
  std::vector<Tensor> init = states;
  if (repeat_output) init.push_back(zeros(state_shape));
  const Tensor u = recurrent_kernel_;
  const size_t n = states.size();
  // By value: scan's gradient calls the body again (recomputing each step from its saved
  // carry) after this function has returned.
  auto body = [this, n, u, h_masks, batch, repeat_output](const std::vector<Tensor>& carry,
                                                          const std::vector<Tensor>& x_t) {
    const std::vector<Tensor> prev(carry.begin(), carry.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<Tensor> next = step(x_t[0], prev, u, h_masks);
    Tensor out = next[0];
    if (x_t.size() > 1) {
      const Tensor keep = broadcast_to(expand_dims(x_t[1], 1), {batch, units_});
      for (size_t k = 0; k < n; ++k) next[k] = where(keep, next[k], prev[k]);
      out = repeat_output ? where(keep, out, carry.back()) : where(keep, out, 0.0);
      if (repeat_output) next.push_back(out);
    }
    return std::pair<std::vector<Tensor>, std::vector<Tensor>>{next, {out}};
  };
  ScanResult r = scan(body, init, scanned, options_.go_backwards);
  r.carry.resize(n);
  last_states_ = r.carry;

  Tensor seq = r.ys[0];  // (time, batch, units) in input order
  Tensor output;
  if (options_.return_sequences) {
    if (options_.go_backwards) {  // Keras returns the outputs in the order it walked
      std::vector<int32_t> reversed(static_cast<size_t>(steps));
      for (int64_t t = 0; t < steps; ++t) reversed[static_cast<size_t>(t)] = static_cast<int32_t>(steps - 1 - t);
      seq = take(seq, Tensor::from_vector<int32_t>({steps}, reversed), 0);
    }
    output = transpose(seq, {1, 0, 2});
  } else {
    const int64_t last = options_.go_backwards ? 0 : steps - 1;
    output = squeeze(slice(seq, {last, 0, 0}, {last + 1, batch, units_}), 0);
  }
  std::vector<Tensor> result{output};
  result.insert(result.end(), r.carry.begin(), r.carry.end());
  return result;
}

// ---- cells ---------------------------------------------------------------------------------

SimpleRNN::SimpleRNN(int64_t units, RecurrentOptions options) : Recurrent(units, std::move(options), 1, "simple_rnn_cell") {}

std::vector<Tensor> SimpleRNN::step(const Tensor& x_proj, const std::vector<Tensor>& states,
                                    const Tensor& recurrent_kernel, const std::vector<Tensor>& h_masks) const {
  return {activations::get(options_.activation)(x_proj + recurrent_projection(states[0], recurrent_kernel, h_masks))};
}

LSTM::LSTM(int64_t units, RecurrentOptions options) : Recurrent(units, std::move(options), 4, "lstm_cell") {}

std::vector<Tensor> LSTM::step(const Tensor& x_proj, const std::vector<Tensor>& states,
                               const Tensor& recurrent_kernel, const std::vector<Tensor>& h_masks) const {
  const auto act = activations::get(options_.activation);
  const auto rec = activations::get(options_.recurrent_activation);
  const Tensor z = x_proj + recurrent_projection(states[0], recurrent_kernel, h_masks);
  const Tensor i = rec(gate(z, 0)), f = rec(gate(z, 1)), o = rec(gate(z, 3));
  const Tensor c = f * states[1] + i * act(gate(z, 2));
  return {o * act(c), c};
}

GRU::GRU(int64_t units, RecurrentOptions options) : Recurrent(units, std::move(options), 3, "gru_cell") {}

Dims GRU::bias_dims() const { return options_.reset_after ? Dims{2, 3 * units_} : Dims{3 * units_}; }

Tensor GRU::input_bias() const {
  if (!options_.reset_after) return bias_;
  return squeeze(slice(bias_, {0, 0}, {1, 3 * units_}), 0);
}

std::vector<Tensor> GRU::step(const Tensor& x_proj, const std::vector<Tensor>& states,
                              const Tensor& recurrent_kernel, const std::vector<Tensor>& h_masks) const {
  const auto act = activations::get(options_.activation);
  const auto rec = activations::get(options_.recurrent_activation);
  const Tensor& h = states[0];
  // h as gate k sees it: through its recurrent dropout mask, if any.
  auto h_for = [&](int k) { return h_masks.empty() ? h : h * h_masks[static_cast<size_t>(k)]; };
  Tensor hh;
  Tensor z, r;
  if (options_.reset_after) {
    Tensor inner = recurrent_projection(h, recurrent_kernel, h_masks);
    if (options_.use_bias) inner = inner + squeeze(slice(bias_, {1, 0}, {2, 3 * units_}), 0);
    z = rec(gate(x_proj, 0) + gate(inner, 0));
    r = rec(gate(x_proj, 1) + gate(inner, 1));
    hh = act(gate(x_proj, 2) + r * gate(inner, 2));
  } else {
    z = rec(gate(x_proj, 0) + matmul(h_for(0), gate(recurrent_kernel, 0)));
    r = rec(gate(x_proj, 1) + matmul(h_for(1), gate(recurrent_kernel, 1)));
    hh = act(gate(x_proj, 2) + matmul(r * h_for(2), gate(recurrent_kernel, 2)));
  }
  return {z * h + (1.0 - z) * hh};
}

// ---- configs ---------------------------------------------------------------------------------

std::string Recurrent::get_config() const {
  const RecurrentOptions& o = options_;
  nlohmann::json j = internal::base_config(*this);
  j["return_sequences"] = o.return_sequences;
  j["return_state"] = o.return_state;
  j["go_backwards"] = o.go_backwards;
  j["stateful"] = false;
  j["unroll"] = o.unroll;
  j["time_major"] = false;
  j["units"] = units_;
  j["activation"] = o.activation.empty() ? "linear" : o.activation;
  if (gates_ > 1) j["recurrent_activation"] = o.recurrent_activation.empty() ? "linear" : o.recurrent_activation;
  j["use_bias"] = o.use_bias;
  internal::put_weight_fields(j, "kernel", o.kernel_initializer, o.kernel_regularizer, o.kernel_constraint);
  internal::put_weight_fields(j, "recurrent", o.recurrent_initializer, o.recurrent_regularizer, o.recurrent_constraint);
  internal::put_weight_fields(j, "bias", o.bias_initializer, o.bias_regularizer, o.bias_constraint);
  j["activity_regularizer"] = internal::regularizer_json(o.activity_regularizer);
  if (gates_ == 4) j["unit_forget_bias"] = o.unit_forget_bias;
  j["dropout"] = o.dropout;
  j["recurrent_dropout"] = o.recurrent_dropout;
  if (o.seed) j["seed"] = *o.seed;  // Keras 3's key; tf.keras 2 configs have none
  if (zero_output_for_mask_) j["zero_output_for_mask"] = true;  // as Keras 2 writes it: only when set
  // tf.keras 2.15's cells switch to implementation 1 when recurrent_dropout is set.
  if (gates_ > 1) j["implementation"] = o.recurrent_dropout > 0 ? 1 : 2;
  if (gates_ == 3) j["reset_after"] = o.reset_after;
  return j.dump();
}

namespace {

// The options every recurrent class reads; ConfigError for what Kiln does not build.
RecurrentOptions recurrent_options(const nlohmann::json& j, const char* cls) {
  RecurrentOptions o;
  o.name = j.value("name", "");
  const std::string who = o.name.empty() ? cls : o.name;
  o.activation = j.contains("activation") ? internal::activation_from_json(j["activation"]) : "tanh";
  if (j.contains("recurrent_activation"))
    o.recurrent_activation = internal::activation_from_json(j["recurrent_activation"]);
  o.use_bias = j.value("use_bias", true);
  internal::get_weight_fields(j, "kernel", &o.kernel_initializer, &o.kernel_regularizer, &o.kernel_constraint);
  internal::get_weight_fields(j, "recurrent", &o.recurrent_initializer, &o.recurrent_regularizer,
                              &o.recurrent_constraint);
  internal::get_weight_fields(j, "bias", &o.bias_initializer, &o.bias_regularizer, &o.bias_constraint);
  if (j.contains("activity_regularizer")) o.activity_regularizer = internal::regularizer_from_json(j["activity_regularizer"]);
  o.unit_forget_bias = j.value("unit_forget_bias", true);
  o.reset_after = j.value("reset_after", true);
  o.return_sequences = j.value("return_sequences", false);
  o.return_state = j.value("return_state", false);
  o.go_backwards = j.value("go_backwards", false);
  o.unroll = j.value("unroll", false);
  o.dropout = j.contains("dropout") && j["dropout"].is_number() ? j["dropout"].get<double>() : 0.0;
  o.recurrent_dropout =
      j.contains("recurrent_dropout") && j["recurrent_dropout"].is_number() ? j["recurrent_dropout"].get<double>() : 0.0;
  if (j.contains("seed") && j["seed"].is_number_integer()) o.seed = j["seed"].get<uint64_t>();
  if (j.value("stateful", false))
    KILN_THROW(ConfigError, "[", who, "] stateful=true is not built in Kiln (states do not carry across batches). ",
               "Hint: pass the states explicitly with call_with_state.");
  if (j.value("time_major", false))
    KILN_THROW(ConfigError, "[", who, "] time_major=true is not built in Kiln; inputs are (batch, time, features).");
  o.input_shape = internal::input_shape_from(j);
  return o;
}

// The keys of SimpleRNN, LSTM and GRU in every Keras release: implementation, unroll (read),
// use_cudnn and tf.keras's enable_caching_device pick kernels and devices, not results;
// stateful and time_major are refused below; num_constants (RNN with constants) loads when
// absent. Then each class's own.
constexpr internal::ConfigKey kRecurrentKeys[] = {
    {"units"},
    {"activation"},
    {"use_bias"},
    {"kernel_initializer"},
    {"recurrent_initializer"},
    {"bias_initializer"},
    {"kernel_regularizer"},
    {"recurrent_regularizer"},
    {"bias_regularizer"},
    {"activity_regularizer"},
    {"kernel_constraint"},
    {"recurrent_constraint"},
    {"bias_constraint"},
    {"dropout"},
    {"recurrent_dropout"},
    {"seed"},
    {"return_sequences"},
    {"return_state"},
    {"go_backwards"},
    {"stateful"},
    {"unroll"},
    {"time_major"},
    {"zero_output_for_mask"},
    {"implementation"},
    {"use_cudnn"},
    {"enable_caching_device"},
    {"num_constants", "null", "Kiln's recurrent layers take no constants"}};
constexpr internal::ConfigKey kSimpleRNNKeys[] = {{"units"}};
constexpr internal::ConfigKey kLSTMKeys[] = {{"recurrent_activation"}, {"unit_forget_bias"}};
constexpr internal::ConfigKey kGRUKeys[] = {{"recurrent_activation"}, {"reset_after"}};

template <typename L>
L recurrent_from_config(const std::string& config_json, const char* cls, internal::ConfigKeys keys) {
  nlohmann::json j = internal::parse(config_json, cls);
  internal::expect_layer_keys(j, {keys, kRecurrentKeys}, cls);
  L layer = internal::guarded(cls, [&] { return L(internal::int_field(j, "units", cls), recurrent_options(j, cls)); });
  layer.set_trainable(j.value("trainable", true));
  // Keras 2 writes it when set (Bidirectional sets it on its copies, whatever the config says).
  layer.set_zero_output_for_mask(internal::guarded(cls, [&] { return j.value("zero_output_for_mask", false); }));
  return layer;
}

}  // namespace

SimpleRNN SimpleRNN::from_config(const std::string& config_json) {
  return recurrent_from_config<SimpleRNN>(config_json, "SimpleRNN", kSimpleRNNKeys);
}
LSTM LSTM::from_config(const std::string& config_json) {
  return recurrent_from_config<LSTM>(config_json, "LSTM", kLSTMKeys);
}
GRU GRU::from_config(const std::string& config_json) {
  return recurrent_from_config<GRU>(config_json, "GRU", kGRUKeys);
}

}  // namespace kiln::keras
