// Trainer: what fit, evaluate and predict run (Keras 3's trainers/trainer.py), apart from the
// Model it trains. It owns the compiled step functions (train, the k-step train of
// steps_per_execution, test, predict), the epoch and test loops, the driving of callbacks, fit's
// position (training_state, resume) and what compile resolved for each output (its losses and
// metrics, compiled_outputs.h). Its loops read one Dataset of batches: the in-memory forms are
// adapted to it first (data_adapter.h), so each of fit, evaluate and predict has one body.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "kiln/keras/callbacks/callback.h"
#include "kiln/keras/models/model.h"
#include "kiln/keras/trainer/compiled_outputs.h"
#include "kiln/keras/trainer/data_adapter.h"
#include "kiln/keras/trainer/step_input.h"
#include "kiln/trace/function.h"

namespace kiln::runtime {
class Backend;
}

namespace kiln::keras {

class Trainer {
 public:
  explicit Trainer(Model& model);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// The model moved (Model's move): the step functions, which captured the old one, are made
  /// again for `model` (they trace on their next call); fit's position is forgotten.
  void attach(Model& model);
  /// compile's last part, after the model checked and kept its arguments: the outputs'
  /// losses and metrics, and new step functions.
  void compile(CompiledOutputs outputs);

  /// The one body of fit, evaluate and predict; Model's overloads adapt their input to these.
  History fit(AdaptedInput<FitOptions> input);
  Logs evaluate(AdaptedInput<EvaluateOptions> input);
  /// Every output's predictions, in the order of the outputs.
  std::vector<HostTensor> predict(AdaptedInput<PredictOptions> input);

  /// See Model::training_state, resume_training_from, metric_variables.
  TrainingState training_state();
  void resume_from(TrainingState state) { resume_ = std::move(state); }
  std::vector<Variable> metric_variables() const { return outputs_.variables(); }
  const Function* train_function() const { return train_function_.get(); }
  const Function* multi_step_train_function() const { return multi_step_train_function_.get(); }
  const EpochStats& last_epoch_stats() const { return epoch_stats_; }

 private:
  /// A step's inputs split into the model inputs, the labels and the sample weights (empty,
  /// or one per output).
  struct StepArgs {
    std::vector<Tensor> x, ys, sample_weights;
  };
  StepArgs split_step_args(const std::vector<Tensor>& in) const;
  std::vector<Tensor> train_step(const StepArgs& args);
  /// steps_per_execution = k steps over inputs stacked [k, ...]: step 0 as itself, steps
  /// 1..k-1 as one scan carrying every variable step 0 touched; each metric output stacked
  /// [k, ...].
  std::vector<Tensor> multi_train_step(const std::vector<Tensor>& stacked, int k);
  std::vector<Tensor> test_step(const StepArgs& args);
  /// The train/test step functions of compile(), which call back into the model.
  void make_step_functions();
  /// The predict step, batch-invariant or not (PredictOptions::batch_invariant).
  Function& predict_function(std::optional<bool> batch_invariant);

  // trainer_distribute.cpp: where the steps run, one replica or several.
  /// Where the steps compile and run when the strategy has one replica in sync: its device's
  /// backend (a lone GPU's), or the default backend (null: trace::default_backend()). With
  /// several replicas each replica's context says.
  std::shared_ptr<runtime::Backend> single_replica_backend() const;
  /// Runs a compiled step on a global batch: directly, or split over the strategy's replicas;
  /// returns replica 0's outputs (the metrics are all-reduced).
  std::vector<HostTensor> call_step(Function& step, const StepBatch& batch);
  /// Runs the k-step program on `batches`: inputs stacked per replica, outputs split per step.
  std::vector<std::vector<HostTensor>> call_multi_step(const std::vector<StepBatch>& batches);
  /// Runs the compiled train steps on `batches` (one program when there are k of them) and
  /// returns one Logs per batch.
  std::vector<Logs> run_train_steps(const std::vector<StepBatch>& batches);
  enum class StepKind { kTrain, kTest, kPredict };
  /// The input of fit (kTrain), evaluate or predict over `dataset`. On a device other than the
  /// host it is prefetched there (`device_prefetch` ahead; 0: not) unless it already is (not for
  /// fit's k-step program, which stacks its batches on the host). A device batch holds the step
  /// args (predict: the inputs) split over the replicas on the host, each replica's rows then
  /// copied to the device.
  StepInput step_input(const data::Dataset& dataset, uint64_t epoch, StepKind kind,
                       int device_prefetch = kDefaultDevicePrefetch);
  /// Compiles the train (or test) step for the largest batch of `dataset`'s element_spec on
  /// every replica, before its pipeline makes a batch: a step too large for memory fails
  /// first, with the planner's largest-batch hint (S25). Nothing when the spec is unknown.
  void compile_for_spec(const data::Dataset& dataset, bool train);

  // epoch_loop.cpp
  Logs run_test_loop(const data::Dataset& dataset, int64_t steps, CallbackList* callbacks);
  void check_compiled(const char* where) const;

  Model* model_;
  CompiledOutputs outputs_;
  /// train_function_ runs one step; multi_step_train_function_ runs steps_per_execution
  /// steps in one program (null when k = 1).
  std::unique_ptr<Function> train_function_, multi_step_train_function_, test_function_;
  std::unique_ptr<Function> predict_functions_[2];  // [batch_invariant]
  EpochStats epoch_stats_;
  // fit's position for training_state(); iterator is null outside fit.
  struct FitPosition {
    StepInput* iterator = nullptr;
    int epoch = 0;
    int64_t step = 0;
    bool valid = false;  // false while the iterator is ahead of the applied steps
  };
  FitPosition fit_position_;
  std::optional<TrainingState> resume_;
};

}  // namespace kiln::keras
