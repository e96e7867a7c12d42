// Model: weights, compile, and the compiled step functions (train, test, predict).
#include "kiln/keras/models/model.h"

#include <cstring>
#include <utility>

#include "kiln/core/check.h"
#include "kiln/distribute/strategy.h"
#include "kiln/keras/losses/sample_weight.h"
#include "kiln/keras/models/model_layer.h"
#include "kiln/keras/optimizers/loss_scale_optimizer.h"
#include "kiln/runtime/backend.h"
#include "kiln/trace/eager.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/scan.h"
#include "kiln/trace/ops/shape.h"
#include "kiln/trace/replica_context.h"
#include "kiln/trace/trace_context.h"

namespace kiln::keras {
namespace {

// This replica's gradients of the global batch's mean loss, for apply_gradients to average over
// the replicas. Each replica's loss is its shard's mean; weighing it by rows * R / global rows
// makes the average exact also when the shards differ (a partial batch split unevenly); the
// weight is 1 for equal shards.
std::vector<Tensor> replica_gradients(GradientTape& tape, const Tensor& loss, const Tensor& y,
                                      const std::vector<Variable>& vars) {  // y: any one output's labels
  const trace::ReplicaContext* rc = trace::current_replica_context();
  if (rc == nullptr || rc->num_replicas_in_sync() <= 1) return tape.gradient(loss, vars);
  const int64_t rows = y.rank() > 0 ? y.dims()[0] : 1;
  const Tensor global_rows =
      all_reduce(Tensor(HostTensor::scalar<float>(static_cast<float>(rows))), ir::ReduceKind::kSum);
  if (rows > 0) return tape.gradient(loss * static_cast<double>(rows * rc->num_replicas_in_sync()) / global_rows, vars);
  // A replica without rows (a partial batch smaller than the replica count) adds zeros. They
  // use global_rows so this program keeps the all_reduce the other replicas' programs have.
  std::vector<Tensor> zero;
  for (const Variable& v : vars) zero.push_back(zeros(v.shape()) * global_rows);
  return zero;
}

}  // namespace

Model::Model(std::string name) : name_(std::move(name)) {
  if (distribute::has_strategy()) strategy_ = distribute::current_strategy();
}

Model::~Model() = default;

Model::Model(Model&& other) noexcept { *this = std::move(other); }

Model& Model::operator=(Model&& other) noexcept {
  if (this == &other) return *this;
  stop_training = other.stop_training;
  name_ = std::move(other.name_);
  policy_ = other.policy_;
  layers_ = std::move(other.layers_);
  trainable_ = other.trainable_;
  name_scope_ = std::move(other.name_scope_);
  compiled_ = std::move(other.compiled_);
  is_compiled_ = std::exchange(other.is_compiled_, false);
  loss_tracker_ = std::move(other.loss_tracker_);
  targets_ = std::move(other.targets_);
  epoch_stats_ = other.epoch_stats_;
  strategy_ = std::move(other.strategy_);
  fit_position_ = {};
  resume_ = std::move(other.resume_);
  // The step functions captured `other`: make this model's own (they trace on first use).
  other.train_function_.reset();
  other.multi_step_train_function_.reset();
  other.test_function_.reset();
  for (auto& f : other.predict_functions_) f.reset();
  train_function_.reset();
  multi_step_train_function_.reset();
  test_function_.reset();
  for (auto& f : predict_functions_) f.reset();
  if (is_compiled_) make_step_functions();
  return *this;
}

Layer& Model::get_layer(const std::string& name) const {
  std::string names;
  for (const LayerHandle& l : layers_) {
    if (l->name() == name) return *l;
    names += (names.empty() ? "" : ", ") + l->name();
  }
  KILN_THROW(ValueError, "[", name_, "] no layer named '", name, "'; the layers are: ", names, ".");
}

namespace {

// The layers that compute on their own, a nested model's in its place: their weights'
// penalties, output penalties and constraints are the outer model's too (Keras's model.losses
// and constraints gather every sublayer's).
std::vector<Layer*> leaf_layers(const std::vector<LayerHandle>& layers) {
  std::vector<Layer*> out;
  for (const LayerHandle& l : layers) {
    if (const auto* nested = dynamic_cast<const ModelLayer*>(l.get())) {
      for (Layer* inner : leaf_layers(nested->model().layers())) out.push_back(inner);
    } else {
      out.push_back(l.get());
    }
  }
  return out;
}

// The concatenation of `pick(layer)` over the layers, in order.
template <typename Pick>
std::vector<Variable> collect(const std::vector<LayerHandle>& layers, Pick pick) {
  std::vector<Variable> out;
  for (const LayerHandle& l : layers) {
    std::vector<Variable> w = pick(*l);
    out.insert(out.end(), w.begin(), w.end());
  }
  return out;
}

}  // namespace

std::vector<Variable> Model::weights() const {
  return collect(layers_, [](const Layer& l) { return l.weights(); });
}
void Model::set_trainable(bool trainable) {
  trainable_ = trainable;
  for (LayerHandle& l : layers_) l->set_trainable(trainable);
}

std::vector<Variable> Model::trainable_weights() const {
  if (!trainable_) return {};
  return collect(layers_, [](const Layer& l) { return l.trainable_weights(); });
}
std::vector<Variable> Model::non_trainable_weights() const {
  if (!trainable_) return weights();
  return collect(layers_, [](const Layer& l) { return l.non_trainable_weights(); });
}

std::vector<HostTensor> Model::get_weights() const {
  std::vector<HostTensor> out;
  for (const Variable& v : weights()) out.push_back(v.host_value().clone());
  return out;
}

void Model::set_weights(const std::vector<HostTensor>& values) {
  std::vector<Variable> vars = weights();
  if (values.size() != vars.size())
    KILN_THROW(ValueError, "[", name_, "] set_weights expected ", vars.size(), " tensors, received ",
               values.size(), ". Hint: pass the list get_weights() returns for the same architecture.");
  for (size_t i = 0; i < vars.size(); ++i) {
    if (values[i].shape() != vars[i].shape())
      KILN_THROW(ShapeError, "[", name_, "] set_weights: ", vars[i].name(), " expected ", vars[i].shape(),
                 ", received ", values[i].shape(), ".");
    vars[i].assign(Tensor(values[i]));
  }
}

int64_t Model::count_params() const {
  int64_t n = 0;
  for (const LayerHandle& l : layers_) n += l->count_params();
  return n;
}

void Model::compile(CompileOptions options) {
  std::vector<OutputTarget> targets = resolve_outputs(options);
  if (options.steps_per_execution < 1)
    KILN_THROW(ValueError, "[", name_, "] expected steps_per_execution >= 1, received ",
               options.steps_per_execution, ".");
  // The model keeps the strategy it was made in; compiling it in another one's scope would
  // split its steps over replicas its variables were not made for.
  const std::shared_ptr<distribute::Strategy> current = distribute::current_strategy();
  if (distribute::has_strategy()) {
    if (strategy_ && strategy_ != current)
      KILN_THROW(ValueError, "[", name_, "] was made in the scope of one strategy and is compiled in the scope "
                 "of another. Hint: make and compile the model inside the same strategy.scope().");
    strategy_ = current;
  } else if (!strategy_) {
    strategy_ = current;  // the default strategy
  }
  // Keras's compile under mixed_float16: float16 gradients underflow without loss scaling, so a
  // plain optimizer is wrapped. As in Keras the model's policy decides (a model loaded from a
  // file gets back the LossScaleOptimizer its training_config names).
  if (policy_.name() == "mixed_float16" && dynamic_cast<const LossScaleOptimizer*>(options.optimizer.get()) == nullptr)
    options.optimizer = LossScaleOptimizer(options.optimizer);
  compiled_ = std::move(options);
  targets_ = std::move(targets);
  loss_tracker_ = std::make_unique<Mean>("loss");
  make_step_functions();
  is_compiled_ = true;
}

void Model::make_step_functions() {
  // One compiled program per step kind; the functions trace on their first call.
  // Step inputs are x_1..x_n, y_1..y_m, then w_1..w_m when the batches carry sample weights.
  const FunctionOptions on{.backend = single_replica_backend()};
  train_function_ = std::make_unique<Function>(
      "train_step", [this](const std::vector<Tensor>& in) { return train_step(split_step_args(in)); }, on);
  multi_step_train_function_.reset();
  if (const int k = compiled_.steps_per_execution; k > 1) {
    // The step's inputs stacked [k, ...]; outputs each metric's results stacked [k, ...].
    multi_step_train_function_ = std::make_unique<Function>(
        str_cat("train_step_x", k), [this, k](const std::vector<Tensor>& in) { return multi_train_step(in, k); }, on);
  }
  test_function_ = std::make_unique<Function>(
      "test_step", [this](const std::vector<Tensor>& in) { return test_step(split_step_args(in)); }, on);
}

Model::StepArgs Model::split_step_args(const std::vector<Tensor>& in) const {
  const size_t n = num_inputs(), m = num_outputs();
  KILN_CHECK(in.size() == n + m || in.size() == n + 2 * m, "step_args gives inputs, labels and optional weights");
  StepArgs args;
  args.x.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
  args.ys.assign(in.begin() + static_cast<std::ptrdiff_t>(n), in.begin() + static_cast<std::ptrdiff_t>(n + m));
  args.sample_weights.assign(in.begin() + static_cast<std::ptrdiff_t>(n + m), in.end());
  return args;
}

void Model::check_compiled(const char* where) const {
  if (!is_compiled_)
    KILN_THROW(ConfigError, "[", name_, "] ", where, " needs a compiled model. Hint: call "
               "model.compile({.optimizer = ..., .loss = ..., .metrics = {...}}) first.");
}

Tensor Model::call_multi(const std::vector<Tensor>& inputs, bool training) {
  if (inputs.size() != 1)
    KILN_THROW(ValueError, "[", name_, "] expected one input, received ", inputs.size(), ".");
  return call(inputs[0], training);
}

std::vector<Tensor> Model::call_outputs(const std::vector<Tensor>& inputs, bool training) {
  return {call_multi(inputs, training)};
}

std::vector<HostTensor> Model::step_args(const data::Element& batch) const {
  const size_t inputs = num_inputs(), outputs = num_outputs(), n = inputs + outputs;
  // Keras's (x, y, sample_weight): after the labels one weight array for every output, or one per output.
  const bool one_weight = batch.size() == n + 1, per_output = batch.size() == n + outputs;
  if (batch.size() < n || (batch.size() > n && !one_weight && !per_output)) {
    std::string names;
    for (const std::string& o : output_names()) names += (names.empty() ? "" : ", ") + o;
    KILN_THROW(DataError, "[", name_, "] expected elements with ", inputs, " input(s), ", outputs,
               " label array(s) (one per output: ", names, ") and optionally the sample weights (one array, or one per "
               "output), received ", batch.size(), " components ", batch.shapes_string(),
               ". Hint: from_tensor_slices({x_1, ..., x_n, y_1, ..., y_m}) or, weighted, ({x..., y..., w}) or "
               "({x..., y..., w_1, ..., w_m}).");
  }
  std::vector<HostTensor> args(batch.begin(), batch.end());
  if (one_weight && outputs > 1) args.insert(args.end(), outputs - 1, args.back());
  return args;
}

std::vector<Tensor> Model::train_step(const StepArgs& args) {
  GradientTape tape;
  clear_activity_losses();
  const std::vector<Tensor> y_preds = call_outputs(args.x, /*training=*/true);
  const StepLoss loss = compute_loss(args.ys, y_preds, args.sample_weights);
  std::vector<Variable> vars = trainable_weights();  // after the call: layers are built
  // A LossScaleOptimizer differentiates loss * scale and unscales in apply_gradients.
  compiled_.optimizer->apply_gradients(
      replica_gradients(tape, compiled_.optimizer->scale_loss(loss.total), args.ys[0], vars), vars);
  for (const Layer* l : leaf_layers(layers_)) l->apply_constraints();  // Keras: after the update
  return update_metrics(args.ys, y_preds, loss);
}

std::vector<Tensor> Model::multi_train_step(const std::vector<Tensor>& stacked, int k) {
  // Step j's inputs: row j of each stacked tensor. The loop reads its rows in place (the
  // stacked tensors are captures and the loop walks the step numbers): slicing rows 1..k-1
  // into a tensor of its own would copy k - 1 batches into the arena, which compile time
  // zeroes and every run fills (compile time and memory growing with k).
  auto step_inputs = [&](const Tensor& j) {
    std::vector<Tensor> out;
    for (const Tensor& t : stacked) {
      std::vector<Tensor> starts(static_cast<size_t>(t.rank()), Tensor::scalar(0, DType::kI32));
      starts[0] = j;
      Dims sizes = t.dims();
      sizes[0] = 1;
      out.push_back(squeeze(dynamic_slice(t, starts, sizes), 0));
    }
    return out;
  };
  // Step 0 runs as itself: it creates the optimizer's slots, and names every variable a step
  // reads or assigns. Steps 1..k-1 are one loop carrying those variables.
  std::vector<Tensor> first = step_inputs(Tensor::scalar(0, DType::kI32));
  std::vector<Tensor> first_logs = train_step(split_step_args(first));
  trace::TraceContext& ctx = *trace::TraceContext::current();
  const std::vector<std::shared_ptr<trace::VariableState>> vars = ctx.captured_variables();
  std::vector<Tensor> values;
  for (const auto& v : vars) values.push_back(ctx.read_variable(v));
  ScanResult rest = scan(
      [&](const std::vector<Tensor>& carry, const std::vector<Tensor>& step) -> std::pair<std::vector<Tensor>, std::vector<Tensor>> {
        for (size_t i = 0; i < vars.size(); ++i) ctx.carry_variable(vars[i].get(), carry[i]);
        std::vector<Tensor> logs = train_step(split_step_args(step_inputs(step[0])));
        std::vector<Tensor> next;
        for (const auto& v : vars) next.push_back(ctx.read_variable(v));
        return {next, logs};
      },
      values, {iota(Shape(DType::kI32, {k - 1}), 0) + 1.0});
  for (size_t i = 0; i < vars.size(); ++i) ctx.assign_variable(vars[i], rest.carry[i]);
  std::vector<Tensor> out;
  for (size_t m = 0; m < first_logs.size(); ++m) out.push_back(concat({expand_dims(first_logs[m], 0), rest.ys[m]}, 0));
  return out;
}

std::vector<std::vector<HostTensor>> Model::call_multi_step(const std::vector<StepBatch>& batches) {
  // Each replica's shard of every batch, stacked: [k, rows per replica, ...].
  std::vector<std::vector<HostTensor>> shards;  // [batch][replica * components + c]
  const bool split = strategy_ != nullptr && strategy_->num_replicas_in_sync() > 1;
  size_t replicas = 1;  // local replicas
  for (const StepBatch& b : batches) {
    KILN_CHECK(!b.device, "the k-step program stacks host batches (step_input keeps them on the host)");
    std::vector<HostTensor> args = step_args(b.host);
    if (!split) {
      shards.push_back(args);
      continue;
    }
    distribute::PerReplica<data::Element> parts = strategy_->split_batch(data::Element(args));
    replicas = parts.size();
    std::vector<HostTensor> flat;
    for (size_t r = 0; r < replicas; ++r) flat.insert(flat.end(), parts[r].begin(), parts[r].end());
    shards.push_back(flat);
  }
  const size_t components = shards[0].size() / replicas;
  distribute::PerReplica<std::vector<HostTensor>> stacked;
  for (size_t r = 0; r < replicas; ++r) {
    std::vector<HostTensor> args;
    for (size_t c = 0; c < components; ++c) {
      const HostTensor& row0 = shards[0][r * components + c];
      Dims dims = row0.dims();
      dims.insert(dims.begin(), static_cast<int64_t>(batches.size()));
      HostTensor t = HostTensor::uninitialized(row0.shape().with_dims(dims));
      for (size_t j = 0; j < batches.size(); ++j)
        std::memcpy(static_cast<std::byte*>(t.raw_data()) + j * static_cast<size_t>(row0.byte_size()),
                    shards[j][r * components + c].raw_data(), static_cast<size_t>(row0.byte_size()));
      args.push_back(std::move(t));
    }
    stacked.values.push_back(std::move(args));
  }
  std::vector<HostTensor> out = split ? std::move(strategy_->run(
                                            [&](const std::vector<HostTensor>& a) { return (*multi_step_train_function_)(a); },
                                            stacked)[0])
                                      : (*multi_step_train_function_)(stacked[0]);
  // Output m is [k, ...]: step j's logs take row j of each.
  std::vector<std::vector<HostTensor>> per_step(batches.size());
  for (const HostTensor& o : out) {
    const Shape row(o.dtype(), Dims(o.dims().begin() + 1, o.dims().end()));
    for (size_t j = 0; j < batches.size(); ++j) {
      HostTensor r = HostTensor::uninitialized(row);
      std::memcpy(r.raw_data(), static_cast<const std::byte*>(o.raw_data()) + j * static_cast<size_t>(row.byte_size()),
                  static_cast<size_t>(row.byte_size()));
      per_step[j].push_back(std::move(r));
    }
  }
  return per_step;
}

std::vector<Logs> Model::run_train_steps(const std::vector<StepBatch>& batches) {
  std::vector<Logs> logs;
  // The k-step program takes k batches of one shape (a short last batch runs on its own).
  bool stackable = multi_step_train_function_ && static_cast<int>(batches.size()) == compiled_.steps_per_execution;
  for (const StepBatch& b : batches) stackable = stackable && b.shapes_string() == batches[0].shapes_string();
  if (stackable) {
    for (const std::vector<HostTensor>& step : call_multi_step(batches)) logs.push_back(logs_from(step));
    return logs;
  }
  for (const StepBatch& b : batches) logs.push_back(logs_from(call_step(*train_function_, b)));
  return logs;
}

std::vector<Tensor> Model::test_step(const StepArgs& args) {
  clear_activity_losses();
  const std::vector<Tensor> y_preds = call_outputs(args.x, /*training=*/false);
  return update_metrics(args.ys, y_preds, compute_loss(args.ys, y_preds, args.sample_weights));
}

Model::StepLoss Model::compute_loss(const std::vector<Tensor>& ys, const std::vector<Tensor>& y_preds,
                                    const std::vector<Tensor>& sample_weights) {
  KILN_CHECK(ys.size() == targets_.size() && y_preds.size() == targets_.size(), "one label and one prediction per output");
  std::vector<Tensor> masks = std::exchange(output_masks_, {});
  masks.resize(targets_.size());
  std::vector<Tensor> weights = sample_weights;
  weights.resize(targets_.size());
  // Keras's LossesContainer: sum_i w_i * loss_i, then the regularization losses; each output's
  // loss weighted by its sample weights times its mask (Keras's apply_mask).
  Tensor total;
  std::vector<Tensor> own(targets_.size());
  for (size_t i = 0; i < targets_.size(); ++i) {
    if (masks[i].defined() && weights[i].defined())
      weights[i] = broadcast_weights(weights[i], masks[i].shape(), targets_[i].name) * cast(masks[i], DType::kF32);
    else if (masks[i].defined())
      weights[i] = masks[i];
    if (!targets_[i].loss) continue;
    own[i] = targets_[i].loss->weighted(ys[i], y_preds[i], sample_weights.empty() ? Tensor() : sample_weights[i], masks[i]);
    const Tensor weighted = targets_[i].loss_weight == 1.0 ? own[i] : own[i] * targets_[i].loss_weight;
    total = total.defined() ? total + weighted : weighted;
  }
  return {with_regularization(total), std::move(own), std::move(masks), std::move(weights)};
}

Tensor Model::with_regularization(Tensor loss) const {
  // Keras's compiled_loss(..., regularization_losses=self.losses), in train and test steps:
  // the weights' penalties and those of this step's layer outputs.
  for (const Layer* l : leaf_layers(layers_)) {
    for (const Tensor& penalty : l->regularization_losses()) loss = loss + penalty;
    for (const Tensor& penalty : l->activity_losses()) loss = loss + penalty;
  }
  return loss;
}

void Model::clear_activity_losses() {
  for (Layer* l : leaf_layers(layers_)) l->clear_activity_losses();
}

std::vector<Tensor> Model::update_metrics(const std::vector<Tensor>& ys, const std::vector<Tensor>& y_preds,
                                          const StepLoss& loss) {
  // Keras weighs each batch's mean loss by its rows, so a short last batch counts for what it
  // holds and the epoch's loss is the mean over samples, as the other metrics are. A replica
  // with no rows (a partial batch smaller than the replica count) has nothing to add.
  const int64_t rows = ys[0].rank() > 0 ? ys[0].dims()[0] : 1;
  if (rows > 0) {
    loss_tracker_->update(loss.total, static_cast<double>(rows));
    for (size_t i = 0; i < targets_.size(); ++i)
      if (targets_[i].loss_tracker) targets_[i].loss_tracker->update(loss.own[i], static_cast<double>(rows));
    for (size_t i = 0; i < targets_.size(); ++i) {
      // Metrics compute in float32 as Keras's do (their dtype), whatever the model's policy.
      const Tensor& p = y_preds[i];
      const Tensor y_pred = size_of(p.dtype()) == 2 && is_floating(p.dtype()) ? cast(p, DType::kF32) : p;
      // Keras's compiled metrics take the output's mask as their sample weights, the weighted
      // ones the sample weights times the mask.
      auto update = [&](const std::vector<MetricHandle>& metrics, const Tensor& weights) {
        for (const MetricHandle& m : metrics)
          if (weights.defined()) m->update_state_weighted(ys[i], y_pred, weights);
          else m->update_state(ys[i], y_pred);
      };
      update(targets_[i].metrics, loss.masks[i]);
      update(targets_[i].weighted_metrics, loss.weights[i]);
    }
  }
  // Keras computes results in cross-replica context, from the accumulators summed over the
  // replicas: exact when the shards differ in size. Plain reads without a strategy.
  trace::SummedReads summed(metric_variables());
  std::vector<Tensor> results{loss_tracker_->result()};
  for (const OutputTarget& t : targets_)
    if (t.loss_tracker) results.push_back(t.loss_tracker->result());
  for (const OutputTarget& t : targets_)
    for (const MetricHandle& m : t.all_metrics()) results.push_back(m->result());
  return results;
}

std::vector<Variable> Model::metric_variables() const {
  if (!loss_tracker_) return {};
  std::vector<Variable> out = loss_tracker_->variables();
  auto append = [&](const Metric& m) { out.insert(out.end(), m.variables().begin(), m.variables().end()); };
  for (const OutputTarget& t : targets_)
    if (t.loss_tracker) append(*t.loss_tracker);
  for (const OutputTarget& t : targets_)
    for (const MetricHandle& m : t.all_metrics()) append(*m);
  return out;
}

void Model::reset_metrics() {
  loss_tracker_->reset_state();
  for (const OutputTarget& t : targets_) {
    if (t.loss_tracker) t.loss_tracker->reset_state();
    for (const MetricHandle& m : t.all_metrics()) m->reset_state();
  }
}

Logs Model::logs_from(const std::vector<HostTensor>& outputs, const std::string& prefix) const {
  // Keras 2's names: "loss", then for several outputs "<output>_loss" each, then the metrics
  // under the names compile gave them, in the order update_metrics returns them.
  Logs logs;
  size_t next = 0;
  logs.set(prefix + "loss", outputs[next++].to_vector<double>()[0]);
  for (const OutputTarget& t : targets_)
    if (t.loss_tracker) logs.set(prefix + t.loss_tracker->name(), outputs[next++].to_vector<double>()[0]);
  for (const OutputTarget& t : targets_)
    for (const std::string& log_name : t.log_names) {
      // A vector result (Precision at several thresholds) logs one scalar per element.
      const std::vector<double> values = outputs[next++].to_vector<double>();
      const std::string name = prefix + log_name;
      if (values.size() == 1) logs.set(name, values[0]);
      else
        for (size_t k = 0; k < values.size(); ++k) logs.set(name + "_" + std::to_string(k), values[k]);
    }
  return logs;
}

namespace {

// Concatenates batch outputs along axis 0 on the host.
HostTensor concat_rows(const std::vector<HostTensor>& parts) {
  if (parts.empty()) return HostTensor();
  Dims dims = parts[0].dims();
  int64_t rows = 0;
  for (const HostTensor& p : parts) rows += p.dims()[0];
  dims[0] = rows;
  HostTensor out(Shape(parts[0].dtype(), dims));
  auto* dst = static_cast<char*>(out.raw_data());
  for (const HostTensor& p : parts) {
    std::memcpy(dst, p.raw_data(), static_cast<size_t>(p.byte_size()));
    dst += p.byte_size();
  }
  return out;
}

}  // namespace

Function& Model::predict_function(std::optional<bool> requested) {  // predict needs no compile
  std::shared_ptr<runtime::Backend> backend = single_replica_backend();
  const bool batch_invariant = requested.value_or(false);
  std::unique_ptr<Function>& f = predict_functions_[batch_invariant ? 1 : 0];
  if (f) return *f;
  f = std::make_unique<Function>(
      "predict_step",
      [this](const std::vector<Tensor>& in) {
        std::vector<Tensor> out = call_outputs(in, /*training=*/false);
        output_masks_.clear();  // predictions are Keras's; only the loss and metrics read the masks
        return out;
      },
      FunctionOptions{.backend = std::move(backend), .batch_invariant = batch_invariant});
  return *f;
}

std::vector<HostTensor> Model::predict_args(const data::Element& element) const {
  if (element.size() < num_inputs())
    KILN_THROW(DataError, "[", name_, "] predict expected elements with ", num_inputs(), " input(s), received ",
               element.shapes_string(), ".");
  return {element.begin(), element.begin() + static_cast<std::ptrdiff_t>(num_inputs())};
}

namespace {

// Each output's batches, concatenated: parts[batch][output].
std::vector<HostTensor> concat_outputs(const std::vector<std::vector<HostTensor>>& parts, size_t outputs) {
  std::vector<HostTensor> out;
  for (size_t o = 0; o < outputs; ++o) {
    std::vector<HostTensor> column;
    for (const std::vector<HostTensor>& p : parts) column.push_back(p[o]);
    out.push_back(concat_rows(column));
  }
  return out;
}

}  // namespace

void Model::check_single_output(const char* where) const {
  if (num_outputs() != 1)
    KILN_THROW(ValueError, "[", name_, "] ", where, " returns one tensor, and the model has ", num_outputs(),
               " outputs. Hint: ", where, "_outputs returns one tensor per output.");
}

HostTensor Model::predict(const data::Dataset& dataset, PredictOptions options) {
  check_single_output("predict");
  return predict_outputs(dataset, options)[0];
}

HostTensor Model::predict(const HostTensor& x, PredictOptions options) {
  check_single_output("predict");
  return predict_outputs(x, options)[0];
}

std::vector<HostTensor> Model::predict_outputs(const data::Dataset& dataset, PredictOptions options) {
  Function& predict = predict_function(options.batch_invariant);
  std::vector<std::vector<HostTensor>> parts;
  StepInput it = step_input(dataset, 0, StepKind::kPredict);
  for (int64_t step = 0; options.steps < 0 || step < options.steps; ++step) {
    std::optional<StepBatch> batch = it.next();
    if (!batch) break;
    parts.push_back(batch->device ? predict.call_on_device(batch->device->replicas[0])
                                  : predict(predict_args(batch->host)));
  }
  return concat_outputs(parts, num_outputs());
}

std::vector<HostTensor> Model::predict_outputs(const HostTensor& x, PredictOptions options) {
  Function& predict = predict_function(options.batch_invariant);
  std::vector<std::vector<HostTensor>> parts;
  const int64_t n = x.dims()[0];
  for (int64_t start = 0; start < n; start += options.batch_size)
    parts.push_back(predict({x.slice_rows(start, std::min(n, start + options.batch_size))}));
  return concat_outputs(parts, num_outputs());
}

std::map<std::string, HostTensor> Model::named(std::vector<HostTensor> outputs) const {
  const std::vector<std::string> names = output_names();
  std::map<std::string, HostTensor> out;
  for (size_t i = 0; i < names.size(); ++i) out[names[i]] = std::move(outputs[i]);
  return out;
}

std::map<std::string, HostTensor> Model::predict_by_name(const data::Dataset& dataset, PredictOptions options) {
  return named(predict_outputs(dataset, options));
}

std::map<std::string, HostTensor> Model::predict_by_name(const HostTensor& x, PredictOptions options) {
  return named(predict_outputs(x, options));
}

}  // namespace kiln::keras
