// Model: layers, weights, compile's arguments; fit, evaluate and predict as one-line wrappers
// over the Trainer's one body each, their in-memory forms adapted by a DataAdapter.
#include "kiln/keras/models/model.h"

#include <utility>

#include "kiln/core/check.h"
#include "kiln/distribute/strategy.h"
#include "kiln/keras/optimizers/loss_scale_optimizer.h"
#include "kiln/keras/trainer/trainer.h"

namespace kiln::keras {

Model::Model(std::string name) : name_(std::move(name)), trainer_(std::make_unique<Trainer>(*this)) {
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
  strategy_ = std::move(other.strategy_);
  // The trainer keeps what compile resolved, with the metrics' state, and makes step functions
  // of its own for this model; `other` gets a new one.
  trainer_ = std::move(other.trainer_);
  trainer_->attach(*this);
  other.trainer_ = std::make_unique<Trainer>(other);
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
  CompiledOutputs outputs(options, output_names(), name_);
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
  trainer_->compile(std::move(outputs));
  is_compiled_ = true;
}

bool Model::is_chief() const { return strategy_ == nullptr || strategy_->is_chief(); }

Tensor Model::call_multi(const std::vector<Tensor>& inputs, bool training) {
  if (inputs.size() != 1)
    KILN_THROW(ValueError, "[", name_, "] expected one input, received ", inputs.size(), ".");
  return call(inputs[0], training);
}

std::vector<Tensor> Model::call_outputs(const std::vector<Tensor>& inputs, bool training) {
  return {call_multi(inputs, training)};
}

// fit, evaluate and predict: the Dataset forms go to the Trainer as they are, the in-memory
// ones through a DataAdapter.

History Model::fit(const data::Dataset& dataset, FitOptions options) { return trainer().fit({dataset, std::move(options)}); }

History Model::fit(const HostTensor& x, const HostTensor& y, ArrayFitOptions options) {
  return trainer().fit(DataAdapter(*this).fit(x, {y}, std::move(options)));
}

History Model::fit(const HostTensor& x, const std::vector<HostTensor>& ys, ArrayFitOptions options) {
  return trainer().fit(DataAdapter(*this).fit(x, ys, std::move(options)));
}

History Model::fit_by_name(const HostTensor& x, const std::map<std::string, HostTensor>& ys, ArrayFitOptions options) {
  const DataAdapter adapter(*this);
  return trainer().fit(adapter.fit(x, adapter.in_output_order(ys, "fit"), std::move(options)));
}

Logs Model::evaluate(const data::Dataset& dataset, EvaluateOptions options) {
  return trainer().evaluate({dataset, std::move(options)});
}

Logs Model::evaluate(const HostTensor& x, const HostTensor& y, int64_t batch_size, EvaluateOptions options) {
  return trainer().evaluate(DataAdapter(*this).evaluate(x, {y}, batch_size, std::move(options)));
}

Logs Model::evaluate(const HostTensor& x, const std::vector<HostTensor>& ys, int64_t batch_size, EvaluateOptions options) {
  return trainer().evaluate(DataAdapter(*this).evaluate(x, ys, batch_size, std::move(options)));
}

Logs Model::evaluate_by_name(const HostTensor& x, const std::map<std::string, HostTensor>& ys, int64_t batch_size,
                             EvaluateOptions options) {
  const DataAdapter adapter(*this);
  return trainer().evaluate(adapter.evaluate(x, adapter.in_output_order(ys, "evaluate"), batch_size, std::move(options)));
}

namespace {

// ValueError naming `where`'s _outputs form when the model has several outputs.
void check_single_output(const Model& model, const char* where) {
  if (model.num_outputs() != 1)
    KILN_THROW(ValueError, "[", model.name(), "] ", where, " returns one tensor, and the model has ", model.num_outputs(),
               " outputs. Hint: ", where, "_outputs returns one tensor per output.");
}

std::map<std::string, HostTensor> by_name(const Model& model, std::vector<HostTensor> outputs) {
  const std::vector<std::string> names = model.output_names();
  std::map<std::string, HostTensor> out;
  for (size_t i = 0; i < names.size(); ++i) out[names[i]] = std::move(outputs[i]);
  return out;
}

}  // namespace

HostTensor Model::predict(const data::Dataset& dataset, PredictOptions options) {
  check_single_output(*this, "predict");
  return trainer().predict({dataset, options})[0];
}

HostTensor Model::predict(const HostTensor& x, PredictOptions options) {
  check_single_output(*this, "predict");
  return trainer().predict(DataAdapter(*this).predict(x, options))[0];
}

std::vector<HostTensor> Model::predict_outputs(const data::Dataset& dataset, PredictOptions options) {
  return trainer().predict({dataset, options});
}

std::vector<HostTensor> Model::predict_outputs(const HostTensor& x, PredictOptions options) {
  return trainer().predict(DataAdapter(*this).predict(x, options));
}

std::map<std::string, HostTensor> Model::predict_by_name(const data::Dataset& dataset, PredictOptions options) {
  return by_name(*this, trainer().predict({dataset, options}));
}

std::map<std::string, HostTensor> Model::predict_by_name(const HostTensor& x, PredictOptions options) {
  return by_name(*this, trainer().predict(DataAdapter(*this).predict(x, options)));
}

// Where fit stands, and what it compiled: the Trainer's.

TrainingState Model::training_state() { return trainer().training_state(); }
void Model::resume_training_from(TrainingState state) { trainer().resume_from(std::move(state)); }
std::vector<Variable> Model::metric_variables() const { return trainer_->metric_variables(); }
const Function* Model::train_function() const { return trainer_->train_function(); }
const Function* Model::multi_step_train_function() const { return trainer_->multi_step_train_function(); }
const EpochStats& Model::last_epoch_stats() const { return trainer_->last_epoch_stats(); }

}  // namespace kiln::keras
