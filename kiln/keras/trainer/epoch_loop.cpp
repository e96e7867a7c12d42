// Trainer::fit, evaluate and predict: the host-side loops around the compiled steps, and the
// callbacks they drive. Each step is one call of a compiled step function; the host reads back
// only the metric scalars (predict: the outputs).
#include <chrono>

#include <cstdio>
#include <cstring>
#include <optional>

#include "kiln/core/check.h"
#include "kiln/core/debug_options.h"
#include "kiln/core/logging.h"
#include "kiln/core/trace_recorder.h"
#include "kiln/keras/callbacks/progbar_logger.h"
#include "kiln/keras/trainer/class_weight.h"
#include "kiln/keras/trainer/trainer.h"

namespace kiln::keras {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Records each epoch's logs (Keras's History callback, always first in the list).
class HistoryRecorder : public Callback {
 public:
  explicit HistoryRecorder(History* history) : history_(history) {}
  void on_epoch_end(int epoch, const Logs& logs) override {
    history_->epoch.push_back(epoch);
    for (const auto& [name, value] : logs) history_->history[name].push_back(value);
  }

 private:
  History* history_;
};

// The next batch, timed as the trainer's wait for input when a TraceSession is on.
std::optional<StepBatch> next_batch(StepInput& it) {
  TraceScope scope("input", "input_wait");
  return it.next();
}

// KILN_PROFILE=<file>.json: one TraceSession over a fit, written out when the fit ends.
class FitTrace {
 public:
  explicit FitTrace(bool chief) {
    path_ = DebugOptions::global().profile_trace;
    if (!path_.empty() && chief) session_.emplace();
  }
  void finish() {
    if (!session_) return;
    session_->recorder().write_chrome_trace(path_);
    std::fprintf(stderr, "KILN_PROFILE: trace written to %s\n%s", path_.c_str(),
                 session_->recorder().kernel_summary().c_str());
    session_.reset();
  }

 private:
  std::string path_;
  std::optional<TraceSession> session_;
};

void check_batch(const StepBatch& e, const std::string& model) {
  if (e.size() < 2)
    KILN_THROW(DataError, "[", model, "] fit/evaluate expected (x, y) elements, received ", e.shapes_string(),
               ". Hint: from_tensor_slices({x, y}) keeps the labels with the inputs.");
}

}  // namespace

CallbackList::CallbackList(std::vector<CallbackHandle> callbacks, Model* model, const TrainingParams& params)
    : callbacks_(std::move(callbacks)) {
  for (auto& c : callbacks_) {
    c->set_model(model);
    c->set_params(params);
  }
}

void Trainer::check_compiled(const char* where) const {
  if (!model_->is_compiled())
    KILN_THROW(ConfigError, "[", model_->name(), "] ", where, " needs a compiled model. Hint: call "
               "model.compile({.optimizer = ..., .loss = ..., .metrics = {...}}) first.");
}

History Trainer::fit(AdaptedInput<FitOptions> input) {
  Model& model = *model_;
  input.dataset = with_host_layers(model, std::move(input.dataset));
  const data::Dataset& given = input.dataset;
  FitOptions& options = input.options;
  check_compiled("fit");
  if (!options.class_weight.empty() && model.num_outputs() > 1) {
    std::string names;
    for (const std::string& o : model.output_names()) names += (names.empty() ? "" : ", ") + o;
    KILN_THROW(ValueError, "[", model.name(), "] class_weight is only supported for Models with a single output (this one has ",
               model.num_outputs(), ": ", names, "). Hint: weigh the examples of each output with sample weights in the "
               "elements.");
  }
  // Keras maps each batch's labels to their class weights (times the batch's sample weights).
  const data::Dataset dataset =
      options.class_weight.empty() ? given : with_class_weight(given, options.class_weight, model.num_inputs(), model.name());
  FitTrace fit_trace(model.is_chief());  // before the compile, so its passes are in the trace
  compile_for_spec(dataset, /*train=*/true);
  History history;
  StepInput it =
      step_input(dataset, static_cast<uint64_t>(options.initial_epoch), StepKind::kTrain, options.device_prefetch);
  std::optional<StepBatch> pending = next_batch(it);  // the first batch tells the batch size
  if (!pending) KILN_THROW(DataError, "[", model.name(), "] fit received an empty dataset.");
  check_batch(*pending, model.name());

  std::vector<CallbackHandle> list{std::make_shared<HistoryRecorder>(&history)};
  list.insert(list.end(), options.callbacks.begin(), options.callbacks.end());
  if (options.verbose > 0 && model.is_chief()) list.push_back(std::make_shared<ProgbarLogger>());  // rank 0 prints
  // The steps of an epoch as far as known: steps_per_epoch, else the dataset's cardinality
  // (fit(x, y)'s batches), else counted in the first epoch (Keras's inferred steps).
  const int64_t cardinality = dataset.cardinality();
  TrainingParams params{.epochs = options.epochs,
                        .steps = options.steps_per_epoch >= 0 ? options.steps_per_epoch
                                 : cardinality >= 0           ? cardinality
                                                              : -1,
                        .batch_size = pending->rows(), .verbose = options.verbose};
  CallbackList callbacks(std::move(list), &model, params);
  const int k = model.compile_options().steps_per_execution;
  std::vector<Logs> buffered;
  std::vector<StepBatch> batches;

  model.stop_training = false;
  struct ClearPosition {  // training_state() answers only inside fit
    FitPosition* p;
    ~ClearPosition() { *p = FitPosition(); }
  } clear_position{&fit_position_};
  fit_position_ = {.iterator = &it};
  resume_.reset();
  callbacks.call(&Callback::on_train_begin, Logs{});
  int first_epoch = options.initial_epoch;
  int64_t first_step = 0;
  if (resume_) {  // a callback restored the variables; continue at its position
    first_epoch = resume_->epoch;
    first_step = resume_->step_in_epoch;
    it = step_input(dataset, static_cast<uint64_t>(options.steps_per_epoch < 0 ? first_epoch : options.initial_epoch),
                    StepKind::kTrain, options.device_prefetch);
    if (options.steps_per_epoch >= 0 || first_step > 0) {
      if (resume_->iterator_state.empty())
        KILN_THROW(DataError, "[", model.name(), "] cannot resume at step ", first_step, " of epoch ", first_epoch + 1,
                   ": the training state holds no input position.");
      it.restore(resume_->iterator_state);
    }
    pending = it.next();
    resume_.reset();
  }
  Logs epoch_logs;
  for (int epoch = first_epoch; epoch < options.epochs && !model.stop_training; ++epoch) {
    // A resumed epoch goes on with the accumulators its checkpoint restored.
    if (epoch != first_epoch || first_step == 0) outputs_.reset();
    callbacks.call(&Callback::on_epoch_begin, epoch, Logs{});
    if (options.steps_per_epoch < 0 && epoch > first_epoch) {
      // One pass of the dataset per epoch.
      it = step_input(dataset, static_cast<uint64_t>(epoch), StepKind::kTrain, options.device_prefetch);
      pending = it.next();
    }
    const double wait_before = it.stats().consumer_wait_seconds;
    const auto epoch_start = std::chrono::steady_clock::now();
    int64_t step = epoch == first_epoch ? first_step : 0, samples = 0;
    bool exhausted = false;
    Logs step_logs;
    while ((options.steps_per_epoch < 0 || step < options.steps_per_epoch) && !exhausted && !model.stop_training) {
      // One execution: k batches through the k-step program (fewer at the end of the data or
      // epoch: one-step calls), then the k buffered logs go to the callbacks in order.
      batches.clear();
      while (static_cast<int>(batches.size()) < k &&
             (options.steps_per_epoch < 0 || step + static_cast<int64_t>(batches.size()) < options.steps_per_epoch)) {
        std::optional<StepBatch> e = pending ? std::move(pending) : next_batch(it);
        pending.reset();
        if (!e) {
          exhausted = true;
          break;
        }
        check_batch(*e, model.name());
        batches.push_back(std::move(*e));
      }
      for (size_t j = 0; j < batches.size(); ++j)
        callbacks.call(&Callback::on_train_batch_begin, step + static_cast<int64_t>(j), Logs{});
      const int traces = train_function_->trace_count();
      {
        TraceScope scope("step", "fit_step", str_cat("epoch ", epoch, " step ", step));
        buffered = run_train_steps(batches);
      }
      // A short last batch (no drop_remainder) is a new shape: its program compiles once and is
      // cached for later epochs. Say so once, since it costs a whole compile.
      if (train_function_->trace_count() > traces && batches.back().rows() < params.batch_size)
        log(LogLevel::kWarning, str_cat("[", model.name(), "] the last batch has ", batches.back().rows(), " rows, not ",
                                        params.batch_size, ": the train step compiled once more for its shape (cached "
                                        "for later epochs). Hint: batch with drop_remainder=true to train on full "
                                        "batches only."));
      for (const StepBatch& b : batches) samples += b.rows();
      fit_position_ = {.iterator = &it, .epoch = epoch, .step = step + static_cast<int64_t>(batches.size()),
                       .valid = !pending};
      for (size_t j = 0; j < batches.size(); ++j) {
        callbacks.call(&Callback::on_train_batch_end, step, buffered[j]);
        step_logs = buffered[j];
        ++step;
      }
    }
    if (options.steps_per_epoch < 0 && params.steps < 0 && exhausted && !model.stop_training) {
      params.steps = step;  // an epoch is one pass: later epochs show N/N, not N/Unknown
      callbacks.set_params(params);
    }
    if (exhausted && options.steps_per_epoch >= 0) {
      log(LogLevel::kWarning, str_cat("[", model.name(), "] the input ran out of data after ", step, " steps of epoch ", epoch + 1,
                  "; training stops. Hint: add repeat() to the dataset or lower steps_per_epoch."));
      model.stop_training = true;
    }
    epoch_stats_.train_seconds = seconds_since(epoch_start);
    epoch_stats_.samples = samples;
    epoch_stats_.input_wait_fraction =
        epoch_stats_.train_seconds > 0 ? (it.stats().consumer_wait_seconds - wait_before) / epoch_stats_.train_seconds : 0;
    epoch_logs = step_logs;
    if (options.validation_data) {
      Logs val = run_test_loop(with_host_layers(model, *options.validation_data), options.validation_steps, &callbacks);
      for (const auto& [key, value] : val) epoch_logs.set("val_" + key, value);
    }
    callbacks.call(&Callback::on_epoch_end, epoch, epoch_logs);
  }
  callbacks.call(&Callback::on_train_end, epoch_logs);
  fit_trace.finish();
  return history;
}

Logs Trainer::evaluate(AdaptedInput<EvaluateOptions> input) {
  Model& model = *model_;
  input.dataset = with_host_layers(model, std::move(input.dataset));
  const EvaluateOptions& options = input.options;
  check_compiled("evaluate");
  if (!options.sample_weight.empty())
    KILN_THROW(ValueError, "[", model.name(), "] evaluate received sample_weight with a Dataset, whose elements carry their "
               "weights. Hint: from_tensor_slices({x..., y..., w}) puts them after the labels.");
  std::vector<CallbackHandle> list = options.callbacks;
  if (options.verbose > 0 && model.is_chief()) list.push_back(std::make_shared<ProgbarLogger>());  // rank 0 prints
  CallbackList callbacks(std::move(list), &model, {.epochs = 1, .steps = options.steps, .verbose = options.verbose});
  return run_test_loop(input.dataset, options.steps, &callbacks);
}

Logs Trainer::run_test_loop(const data::Dataset& dataset, int64_t steps, CallbackList* callbacks) {
  const Model& model = *model_;
  compile_for_spec(dataset, /*train=*/false);
  outputs_.reset();
  callbacks->call(&Callback::on_test_begin, Logs{});
  StepInput it = step_input(dataset, 0, StepKind::kTest);
  Logs logs;
  for (int64_t step = 0; steps < 0 || step < steps; ++step) {
    std::optional<StepBatch> e = next_batch(it);
    if (!e) break;
    check_batch(*e, model.name());
    callbacks->call(&Callback::on_test_batch_begin, step, Logs{});
    logs = outputs_.logs_from(call_step(*test_function_, *e));
    callbacks->call(&Callback::on_test_batch_end, step, logs);
  }
  callbacks->call(&Callback::on_test_end, logs);
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

std::vector<HostTensor> Trainer::predict(AdaptedInput<PredictOptions> input) {
  input.dataset = with_host_layers(*model_, std::move(input.dataset));
  const PredictOptions& options = input.options;
  Function& predict = predict_function(options.batch_invariant);
  std::vector<std::vector<HostTensor>> parts;
  StepInput it = step_input(input.dataset, 0, StepKind::kPredict);
  for (int64_t step = 0; options.steps < 0 || step < options.steps; ++step) {
    std::optional<StepBatch> batch = it.next();
    if (!batch) break;
    parts.push_back(batch->device ? predict.call_on_device(batch->device->replicas[0])
                                  : predict(DataAdapter(*model_).predict_args(batch->host)));
  }
  return concat_outputs(parts, model_->num_outputs());
}

}  // namespace kiln::keras
