// Model: layers, weights, compile's arguments, summary and saving (keras.Model), and the
// public fit / evaluate / predict, which its Trainer runs (kiln/keras/trainer/trainer.h): the
// train step (forward, loss, gradients, optimizer update, metric updates) is one
// kiln::function, so each step is one compiled program; the host reads back only the metric
// scalars.
#pragma once

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/data/dataset.h"
#include "kiln/keras/callbacks/callback.h"
#include "kiln/keras/layers/host_layer.h"
#include "kiln/keras/layers/layer.h"
#include "kiln/keras/losses/loss.h"
#include "kiln/keras/metrics/metric.h"
#include "kiln/keras/optimizers/optimizer.h"
#include "kiln/keras/trainer/logs.h"
#include "kiln/keras/trainer/step_input.h"
#include "kiln/keras/trainer/training_state.h"
#include "kiln/trace/function.h"

namespace kiln::distribute {
class Strategy;
}

namespace kiln::keras {

class Trainer;

struct CompileOptions {
  OptimizerHandle optimizer = "rmsprop";  // the Keras default
  /// The loss; for a multi-output model, the loss of every output (Keras's loss=<one loss>).
  LossHandle loss = LossHandle();
  /// Metrics; for a multi-output model, each output gets its own copy of each.
  std::vector<MetricHandle> metrics = {};
  /// Multi-output models (Keras's loss as a list or a dict): one loss per output, in the order
  /// of the outputs, or by output name (an output left out, or given an empty handle, adds no
  /// loss). Set one of loss, losses and loss_by_output.
  std::vector<LossHandle> losses = {};
  std::map<std::string, LossHandle> loss_by_output = {};
  /// Each output's weight in the total loss (Keras's loss_weights as a list or a dict; 1 when
  /// not given): loss = sum_i w_i * loss_i + the regularization penalties.
  std::vector<double> loss_weights = {};
  std::map<std::string, double> loss_weight_by_output = {};
  /// Metrics per output (Keras's metrics as a list of lists or a dict), instead of `metrics`;
  /// logged as "<output>_<metric>".
  std::vector<std::vector<MetricHandle>> output_metrics = {};
  std::map<std::string, std::vector<MetricHandle>> metrics_by_output = {};
  /// Metrics weighed by the sample weights (Keras's weighted_metrics), in the same three forms
  /// as metrics. `metrics` never see the sample weights (only an output's mask), as in Keras.
  /// Logged as "<metric>" ("weighted_<metric>" when a metric of that name exists; for several
  /// outputs "<output>_<metric>", or "<output>_weighted_<metric>"), tf.keras 2.15's names.
  std::vector<MetricHandle> weighted_metrics = {};
  std::vector<std::vector<MetricHandle>> output_weighted_metrics = {};
  std::map<std::string, std::vector<MetricHandle>> weighted_metrics_by_output = {};
  /// Steps per host round trip (S20): fit runs k train steps as one compiled program (step 0,
  /// then one while loop over the other k-1, so its size does not grow with k) and hands
  /// callbacks the k buffered logs afterwards.
  /// An epoch's last < k batches run through the one-step program.
  int steps_per_execution = 1;
};

struct FitOptions {
  int epochs = 1;
  int64_t steps_per_epoch = -1;  // -1: until the dataset ends (a new iterator each epoch)
  std::optional<data::Dataset> validation_data = std::nullopt;
  int64_t validation_steps = -1;
  std::vector<CallbackHandle> callbacks = {};
  int verbose = 1;  // 0 silent; 1 progress bar (one line per epoch when not a terminal); 2 one line
  int initial_epoch = 0;
  /// On a device other than the host, the training batches are copied this many steps ahead
  /// (Dataset::prefetch_to_device), as Keras feeds a TPU; 0 copies each batch in its step. No
  /// effect on the host, or when the dataset already ends with prefetch_to_device.
  int device_prefetch = kDefaultDevicePrefetch;
  /// Weight of each class id (keys 0..C-1), multiplied into each example's sample weight (or
  /// its weight, when the elements carry none) by its label: sparse, or the argmax of a one-hot
  /// row. Single-output models, as in Keras; the validation data is not class-weighted.
  std::map<int64_t, double> class_weight = {};
};

/// Keras's sample_weight of fit/evaluate on arrays: one array for every output, one per output
/// in the order of the outputs, or by output name (an output left out is unweighted); set at
/// most one form. Each array holds a weight per row (rows,) or per step (rows, T). The loss of
/// an output is mean(loss * weight) over its values (Keras does not normalize by the weights);
/// weighted_metrics see them, metrics do not.
struct SampleWeights {
  HostTensor all = HostTensor();
  std::vector<HostTensor> per_output = {};
  std::map<std::string, HostTensor> by_output = {};
  bool empty() const { return !all.defined() && per_output.empty() && by_output.empty(); }
};

/// fit(x, y)'s validation_data: Keras's (x_val, y_val) or (x_val, y_val, val_sample_weight).
/// The sample weights, a weight per row (rows,) or per step (rows, T), weigh the val_ loss and
/// the val_ weighted metrics as fit's do the training ones.
struct ValidationArrays {
  HostTensor x;
  HostTensor y;
  HostTensor sample_weight = HostTensor();
};

/// Model::fit(x, y) options: Keras's fit on in-memory arrays, with its defaults.
struct ArrayFitOptions {
  int64_t batch_size = 32;
  int epochs = 1;
  /// The last fraction of the rows, taken before any shuffling, validates instead of training.
  double validation_split = 0.0;
  /// (x, y) or (x, y, sample_weight) to validate on after each epoch; overrides
  /// validation_split. Single-output models (a multi-output model validates on
  /// validation_split, or on a Dataset through fit's FitOptions, whose elements may carry
  /// weights too).
  std::optional<ValidationArrays> validation_data = std::nullopt;
  /// Reshuffles the training rows before each epoch (a full shuffle, seeded by `seed`).
  bool shuffle = true;
  uint64_t seed = 0;
  std::vector<CallbackHandle> callbacks = {};
  int verbose = 1;
  int initial_epoch = 0;
  SampleWeights sample_weight = {};
  /// Weight of each class id (keys 0..C-1), multiplied into the sample weights of each row by
  /// its label (sparse labels, or the argmax of one-hot ones); single-output models, as in Keras.
  std::map<int64_t, double> class_weight = {};
};

struct EvaluateOptions {
  int64_t steps = -1;
  std::vector<CallbackHandle> callbacks = {};
  int verbose = 1;
  /// evaluate(x, y) only: a Dataset carries its weights in its elements.
  SampleWeights sample_weight = {};
};

struct PredictOptions {
  int64_t steps = -1;
  int64_t batch_size = 32;  // predict(HostTensor) only
  /// Kiln's own: each sample's predictions have the same bits whatever batch it sits in and
  /// whatever batch_size is (contractions sum in a fixed order; docs/numerics.md). Off by
  /// default: it costs more than 10% on the convnet. A backend without batch-invariant
  /// kernels (the GPU) refuses true with a CompileError. KILN_BATCH_INVARIANT overrides it.
  std::optional<bool> batch_invariant = std::nullopt;
};

/// Model::save options (Keras model.save).
struct SaveOptions {
  bool include_optimizer = true;  // the optimizer's state and the compile arguments
};

/// Model::load_weights options (Keras load_weights(filepath, by_name, skip_mismatch)).
struct LoadWeightsOptions {
  /// Match by layer name (.h5) or variable name (safetensors) instead of by position: the
  /// model's layers the file lacks keep their values, the file's layers the model lacks are
  /// ignored (transfer learning into a model that shares some layers).
  bool by_name = false;
  /// With by_name: a layer whose weight count or shapes differ from the file's is skipped with
  /// a warning instead of failing the load. Without by_name it is a ValueError, as in Keras.
  bool skip_mismatch = false;
};

/// What the last training epoch measured (read by ProgbarLogger).
struct EpochStats {
  double train_seconds = 0;
  int64_t samples = 0;
  double input_wait_fraction = 0;  // share of step time spent inside Iterator::next()
};

/// Shared from this so that a model held by a std::shared_ptr can be called on symbolic
/// inputs as a layer of another model (operator()(KerasTensor)).
class Model : public std::enable_shared_from_this<Model> {
 public:
  virtual ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  /// Models move (`Sequential model;` declared first, assigned inside strategy.scope()): the
  /// layers, weights, compile arguments and strategy move along; the compiled step programs are
  /// traced again on the next call. Not during fit.
  Model(Model&& other) noexcept;
  Model& operator=(Model&& other) noexcept;

  /// The forward pass on a batch.
  virtual Tensor call(const Tensor& x, bool training) = 0;
  Tensor operator()(const Tensor& x, bool training = false) { return call(x, training); }
  /// Functional API: this model as one layer of another (Keras's `base(inputs, training=False)`),
  /// sharing its weights. The model must be held by a std::shared_ptr (ValueError otherwise).
  ///   auto base = std::make_shared<Functional>(applications::MobileNetV2({.include_top = false}));
  ///   KerasTensor features = (*base)(inputs, {.training = false});
  KerasTensor operator()(const KerasTensor& x, const CallOptions& options = {});
  /// The forward pass on one tensor per model input (default: exactly one, to call()).
  virtual Tensor call_multi(const std::vector<Tensor>& inputs, bool training);
  /// The forward pass returning one tensor per model output (default: call_multi's one).
  virtual std::vector<Tensor> call_outputs(const std::vector<Tensor>& inputs, bool training);
  /// Number of model inputs: fit/evaluate elements are (x_1, ..., x_n, y_1, ..., y_m), then
  /// optionally the sample weights: one array w for every output, or one per output (w_1, ..., w_m);
  /// predict's are (x_1, ..., x_n).
  virtual size_t num_inputs() const { return 1; }
  /// The host layers (StringLookup, IntegerLookup, TextVectorization) at the front of the
  /// model, one list per input in input order (empty lists, or none, when there are none): fit,
  /// evaluate and predict run them on each batch as a map over the input pipeline, and a traced
  /// call (the compiled steps) takes their outputs in place of the inputs. CompileError when a
  /// host layer's input also feeds a compiled layer.
  virtual std::vector<std::vector<const HostLayer*>> host_layers() const { return {}; }
  /// The outputs' names (Keras's output_names: the layers that make them); one per output.
  virtual std::vector<std::string> output_names() const { return {layers_.empty() ? name_ : layers_.back()->name()}; }
  size_t num_outputs() const { return output_names().size(); }
  /// Keras config JSON {"class_name": ..., "config": {...}}.
  virtual std::string to_json() const = 0;

  const std::string& name() const { return name_; }
  /// The global dtype policy when the model was made (Keras's model.dtype_policy). compile
  /// wraps the optimizer in a LossScaleOptimizer when it is mixed_float16.
  const mixed_precision::Policy& dtype_policy() const { return policy_; }
  const std::vector<LayerHandle>& layers() const { return layers_; }
  /// The layer named `name`; ValueError listing the names otherwise.
  Layer& get_layer(const std::string& name) const;
  std::vector<Variable> weights() const;
  std::vector<Variable> trainable_weights() const;
  std::vector<Variable> non_trainable_weights() const;
  /// Keras's model.trainable: false freezes every layer (nested models included) and leaves
  /// trainable_weights() empty; true unfreezes them all. Recompile after changing it.
  bool trainable() const { return trainable_; }
  void set_trainable(bool trainable);
  /// Copies of every weight's value, in weights() order; and back.
  std::vector<HostTensor> get_weights() const;
  void set_weights(const std::vector<HostTensor>& values);
  int64_t count_params() const;
  /// The weights alone, by file extension: .h5/.hdf5/.keras-h5 in the Keras 2 HDF5 layout
  /// (matched layer by layer, as Keras's topological load), otherwise safetensors by variable
  /// name; and back into the same architecture, built (or by name, LoadWeightsOptions). The
  /// load is all or nothing: on an error no weight has changed. See docs/saving.md.
  void save_weights(const std::string& path) const;
  void load_weights(const std::string& path, LoadWeightsOptions options = {});
  /// The whole model (architecture, weights, compile arguments and optimizer state):
  /// .h5/.hdf5/.keras-h5 in the Keras 2 HDF5 format, any other path as the directory format
  /// (model.json + weights.safetensors + optimizer.safetensors). load_model reads both.
  void save(const std::string& path, SaveOptions options = {}) const;

  void compile(CompileOptions options);
  /// Trains on (x, y) batches of a fixed shape (batch with drop_remainder=true).
  History fit(const data::Dataset& dataset, FitOptions options = {});
  /// Trains on in-memory rows, as Keras's fit(x, y, batch_size, epochs, validation_split, ...):
  /// every row once per epoch, the last batch short when batch_size does not divide them (one
  /// more compiled program for its shape).
  History fit(const HostTensor& x, const HostTensor& y, ArrayFitOptions options = {});
  /// Loss and metrics over the dataset (or `steps` batches of it).
  Logs evaluate(const data::Dataset& dataset, EvaluateOptions options = {});
  /// The same over in-memory rows in batches of `batch_size` (Keras's default 32).
  Logs evaluate(const HostTensor& x, const HostTensor& y, int64_t batch_size = 32, EvaluateOptions options = {});
  /// Multi-output models: fit and evaluate with one y per output, in the order of the outputs
  /// (Keras's fit(x, [y_1, y_2])).
  History fit(const HostTensor& x, const std::vector<HostTensor>& ys, ArrayFitOptions options = {});
  Logs evaluate(const HostTensor& x, const std::vector<HostTensor>& ys, int64_t batch_size = 32,
                EvaluateOptions options = {});
  /// The same with y by output name (Keras's fit(x, {"a": y_a, "b": y_b}); a dict-output
  /// model's keys). Named apart: a braced {y_1, y_2} would also match a map's iterator pair.
  History fit_by_name(const HostTensor& x, const std::map<std::string, HostTensor>& ys, ArrayFitOptions options = {});
  Logs evaluate_by_name(const HostTensor& x, const std::map<std::string, HostTensor>& ys, int64_t batch_size = 32,
                        EvaluateOptions options = {});
  /// Model outputs for every batch (elements (x) or (x, y)), concatenated along the batch.
  HostTensor predict(const data::Dataset& dataset, PredictOptions options = {});
  HostTensor predict(const HostTensor& x, PredictOptions options = {});
  /// The same for every output of the model, in the order of the outputs.
  std::vector<HostTensor> predict_outputs(const data::Dataset& dataset, PredictOptions options = {});
  std::vector<HostTensor> predict_outputs(const HostTensor& x, PredictOptions options = {});
  /// The same by output name (Keras's predict of a dict-output model).
  std::map<std::string, HostTensor> predict_by_name(const data::Dataset& dataset, PredictOptions options = {});
  std::map<std::string, HostTensor> predict_by_name(const HostTensor& x, PredictOptions options = {});

  /// Prints the Keras table: Layer (type), Output Shape, Param #, and the totals.
  void summary(std::ostream& out = std::cout) const;
  std::string summary_text() const;

  /// Set by a callback to end fit after the current step/epoch (Keras model.stop_training).
  bool stop_training = false;
  /// The strategy of the scope() the model was made in (distribute/strategy.h), else of the one
  /// it was compiled in, else the default: fit and evaluate split each global batch over its
  /// replicas. Null until the model is made in a scope or compiled.
  const std::shared_ptr<distribute::Strategy>& distribute_strategy() const { return strategy_; }
  /// False on MPI workers other than 0: they neither print progress nor write files.
  bool is_chief() const;
  Optimizer* optimizer() const { return compiled_.optimizer.get(); }
  bool is_compiled() const { return is_compiled_; }
  /// Inside fit, from on_train_batch_end or on_epoch_end: the epoch, the steps of it applied
  /// and the input iterator's position after the last completed execution (what
  /// BackupAndRestore saves). ValueError elsewhere.
  TrainingState training_state();
  /// The metric accumulators fit updates (the loss trackers', then each metric's), which
  /// checkpoints carry so a resumed epoch reports the averages an uninterrupted one would.
  std::vector<Variable> metric_variables() const;
  /// From on_train_begin: continue this fit at `state` (the variables already restored)
  /// instead of its start: epoch, step in epoch and the input's position (BackupAndRestore).
  void resume_training_from(TrainingState state);
  /// The arguments of the last compile (saving records them as Keras's training_config).
  const CompileOptions& compile_options() const { return compiled_; }
  const Function* train_function() const;
  /// The k-step program of steps_per_execution = k > 1; null otherwise.
  const Function* multi_step_train_function() const;
  const EpochStats& last_epoch_stats() const;

 protected:
  /// Keeps the strategy of the scope() it is made in, if any (Keras: a model belongs to the
  /// strategy whose scope created its variables).
  explicit Model(std::string name);
  /// Per-example output dims of each layer for summary(); empty when unknown (not built).
  virtual std::vector<Dims> layer_output_shapes() const = 0;
  /// One summary() row: the layer, its per-example output dims (empty: "multiple"), whether
  /// Keras prints them as a list (an InputLayer's "[(None, 16)]"), and its "Connected to" list.
  struct SummaryRow {
    const Layer* layer = nullptr;
    Dims output_shape;
    bool list_shape = false;
    std::vector<std::string> connected_to;
  };
  /// The rows summary() prints (default: layers() with layer_output_shapes()).
  virtual std::vector<SummaryRow> summary_rows() const;
  /// True when summary() adds Keras's "Connected to" column (non-sequential functional models).
  virtual bool summary_shows_connections() const { return false; }

  std::string name_;
  mixed_precision::Policy policy_ = mixed_precision::global_policy();
  /// The masks the last call's outputs carry, one per output (Keras's y_pred._keras_mask;
  /// undefined when none): set by call, read (and cleared) by the train and test steps,
  /// which weigh each output's loss and metrics by its mask as Keras does.
  std::vector<Tensor> output_masks_;
  std::vector<LayerHandle> layers_;
  bool trainable_ = true;
  NameScope name_scope_;

 private:
  friend class Trainer;  // its steps take the masks of the call's outputs (output_masks_)
  Trainer& trainer() { return *trainer_; }

  CompileOptions compiled_;
  bool is_compiled_ = false;
  std::shared_ptr<distribute::Strategy> strategy_;
  /// What runs fit, evaluate and predict: the compiled steps, the loops, what compile resolved
  /// for each output (kiln/keras/trainer/trainer.h). Never null.
  std::unique_ptr<Trainer> trainer_;
};

}  // namespace kiln::keras
