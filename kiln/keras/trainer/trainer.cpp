// Trainer: the compiled step functions (train, k-step train, test, predict) and what they
// trace: the forward pass, the loss, gradients, the optimizer update and the metric updates,
// one kiln::function each, so each step is one compiled program.
#include "kiln/keras/trainer/trainer.h"

#include <utility>

#include "kiln/core/check.h"
#include "kiln/keras/optimizers/optimizer.h"
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

// Forgets the activity penalties of earlier traces, before a step calls the model.
void clear_activity_losses(const Model& model) {
  for (Layer* l : leaf_layers(model.layers())) l->clear_activity_losses();
}

}  // namespace

Trainer::Trainer(Model& model) : model_(&model) {}

Trainer::~Trainer() = default;

void Trainer::attach(Model& model) {
  model_ = &model;
  fit_position_ = {};
  // The step functions captured the old model: make this one's (they trace on first use).
  train_function_.reset();
  multi_step_train_function_.reset();
  test_function_.reset();
  for (auto& f : predict_functions_) f.reset();
  if (model.is_compiled()) make_step_functions();
}

void Trainer::compile(CompiledOutputs outputs) {
  outputs_ = std::move(outputs);
  make_step_functions();
}

void Trainer::make_step_functions() {
  // One compiled program per step kind; the functions trace on their first call.
  // Step inputs are x_1..x_n, y_1..y_m, then w_1..w_m when the batches carry sample weights.
  const FunctionOptions on{.backend = single_replica_backend()};
  train_function_ = std::make_unique<Function>(
      "train_step", [this](const std::vector<Tensor>& in) { return train_step(split_step_args(in)); }, on);
  multi_step_train_function_.reset();
  if (const int k = model_->compile_options().steps_per_execution; k > 1) {
    // The step's inputs stacked [k, ...]; outputs each metric's results stacked [k, ...].
    multi_step_train_function_ = std::make_unique<Function>(
        str_cat("train_step_x", k), [this, k](const std::vector<Tensor>& in) { return multi_train_step(in, k); }, on);
  }
  test_function_ = std::make_unique<Function>(
      "test_step", [this](const std::vector<Tensor>& in) { return test_step(split_step_args(in)); }, on);
}

Trainer::StepArgs Trainer::split_step_args(const std::vector<Tensor>& in) const {
  const size_t n = model_->num_inputs(), m = model_->num_outputs();
  KILN_CHECK(in.size() == n + m || in.size() == n + 2 * m, "step_args gives inputs, labels and optional weights");
  StepArgs args;
  args.x.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
  args.ys.assign(in.begin() + static_cast<std::ptrdiff_t>(n), in.begin() + static_cast<std::ptrdiff_t>(n + m));
  args.sample_weights.assign(in.begin() + static_cast<std::ptrdiff_t>(n + m), in.end());
  return args;
}

std::vector<Tensor> Trainer::train_step(const StepArgs& args) {
  Model& model = *model_;
  GradientTape tape;
  clear_activity_losses(model);
  const std::vector<Tensor> y_preds = model.call_outputs(args.x, /*training=*/true);
  const CompiledOutputs::StepLoss loss = outputs_.compute_loss(
      args.ys, y_preds, args.sample_weights, std::exchange(model.output_masks_, {}), model.layers());
  std::vector<Variable> vars = model.trainable_weights();  // after the call: layers are built
  // A LossScaleOptimizer differentiates loss * scale and unscales in apply_gradients.
  Optimizer& optimizer = *model.optimizer();
  optimizer.apply_gradients(replica_gradients(tape, optimizer.scale_loss(loss.total), args.ys[0], vars), vars);
  for (const Layer* l : leaf_layers(model.layers())) l->apply_constraints();  // Keras: after the update
  return outputs_.update_metrics(args.ys, y_preds, loss);
}

std::vector<Tensor> Trainer::multi_train_step(const std::vector<Tensor>& stacked, int k) {
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

std::vector<Tensor> Trainer::test_step(const StepArgs& args) {
  Model& model = *model_;
  clear_activity_losses(model);
  const std::vector<Tensor> y_preds = model.call_outputs(args.x, /*training=*/false);
  return outputs_.update_metrics(
      args.ys, y_preds,
      outputs_.compute_loss(args.ys, y_preds, args.sample_weights, std::exchange(model.output_masks_, {}), model.layers()));
}

Function& Trainer::predict_function(std::optional<bool> requested) {  // predict needs no compile
  std::shared_ptr<runtime::Backend> backend = single_replica_backend();
  const bool batch_invariant = requested.value_or(false);
  std::unique_ptr<Function>& f = predict_functions_[batch_invariant ? 1 : 0];
  if (f) return *f;
  f = std::make_unique<Function>(
      "predict_step",
      [this](const std::vector<Tensor>& in) {
        std::vector<Tensor> out = model_->call_outputs(in, /*training=*/false);
        model_->output_masks_.clear();  // predictions are Keras's; only the loss and metrics read the masks
        return out;
      },
      FunctionOptions{.backend = std::move(backend), .batch_invariant = batch_invariant});
  return *f;
}

TrainingState Trainer::training_state() {
  if (fit_position_.iterator == nullptr || !fit_position_.valid)
    KILN_THROW(ValueError, "[", model_->name(), "] training_state() answers inside fit, from on_train_batch_end or "
               "on_epoch_end. Hint: call it from a callback.");
  return {.epoch = fit_position_.epoch, .step_in_epoch = fit_position_.step,
          .iterator_state = fit_position_.iterator->save()};
}

}  // namespace kiln::keras
