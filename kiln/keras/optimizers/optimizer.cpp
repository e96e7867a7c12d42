// Optimizer base: learning rate, iterations, lazily built slots, and the name lookup.
#include "kiln/keras/optimizers/optimizer.h"

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/optimizers/deserialize.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/replica_context.h"

namespace kiln::keras {

Optimizer::Optimizer(std::string name, const LearningRate& learning_rate, GradientClipping clipping)
    : name_(std::move(name)), schedule_(learning_rate.schedule), clipping_(clipping) {
  clipping_.validate(name_);
  learning_rate_ = Variable(name_ + "/learning_rate", HostTensor::scalar<float>(static_cast<float>(learning_rate.constant)),
                            /*trainable=*/false);
  iterations_ = Variable(name_ + "/iterations", HostTensor(Shape(DType::kI64, {})), /*trainable=*/false);
}

void Optimizer::apply_gradients(const std::vector<Tensor>& grads, const std::vector<Variable>& vars) {
  KILN_CHECK(grads.size() == vars.size(), "one gradient per variable");
  create_slots(vars);
  Tensor step = cast(iterations_.read(), DType::kF32);
  Tensor lr = schedule_ ? (*schedule_)(step) : learning_rate_.read();
  Tensor local_step = step + 1.0;
  begin_update(local_step);
  // Under a strategy with several replicas each replica's gradient (of its shard's mean loss)
  // is averaged over the replicas by an all_reduce in the compiled step, so every replica
  // applies the global batch's gradient; with one replica all_reduce is the gradient itself.
  // Clipping follows the averaging, as in Keras, so every replica clips the same gradient.
  std::vector<Tensor> reduced;
  for (const Tensor& g : grads) reduced.push_back(all_reduce(g, ir::ReduceKind::kMean));
  reduced = clipping_.apply(std::move(reduced));
  for (size_t i = 0; i < vars.size(); ++i) update_step(reduced[i], vars[i], i, lr, local_step);
  iterations_.assign(iterations_.read() + 1.0);
}

double Optimizer::learning_rate() const {
  if (!schedule_) return learning_rate_.host_value().to_vector<double>()[0];
  return schedule_->at(iterations_.host_value().to_vector<int64_t>()[0]);
}

void Optimizer::set_learning_rate(double value) {
  if (schedule_)
    KILN_THROW(ValueError, "[", name_, "] cannot set the learning rate of an optimizer that uses a "
               "LearningRateSchedule. Hint: pass a constant learning_rate to use LearningRateScheduler.");
  learning_rate_.assign(Tensor::scalar(value));
}

std::vector<Variable> Optimizer::variables() const {
  std::vector<Variable> out{iterations_, learning_rate_};
  out.insert(out.end(), slots_.begin(), slots_.end());
  return out;
}

void Optimizer::create_slots(const std::vector<Variable>& vars) {
  if (built_) return;
  build(vars);
  built_ = true;
}

std::string Optimizer::get_config() const {
  // A schedule is saved as its config (not evaluated); a constant as its current value.
  LearningRate lr = schedule_ ? LearningRate(0.0) : LearningRate(learning_rate());
  lr.schedule = schedule_;
  nlohmann::json j = {{"name", name_}, {"learning_rate", nlohmann::json::parse(learning_rate_to_config(lr))}};
  if (has_keras2_legacy_form()) j["decay"] = 0.0;
  else j["is_legacy_optimizer"] = false;
  // Written only when set, as tf.keras does (Keras 3's null keys are added by its writer).
  for (const auto& [key, value] : {std::pair{"clipnorm", clipping_.clipnorm}, std::pair{"clipvalue", clipping_.clipvalue},
                                   std::pair{"global_clipnorm", clipping_.global_clipnorm}})
    if (value) j[key] = *value;
  return j.dump();
}

std::string Optimizer::config_with(const std::string& base_config,
                                   const std::vector<std::pair<std::string, double>>& fields) {
  nlohmann::json j = nlohmann::json::parse(base_config);
  for (const auto& [key, value] : fields) j[key] = value;
  return j.dump();
}

Variable Optimizer::add_slot(const Variable& var, const std::string& slot, double initial_value) {
  const std::vector<float> values(static_cast<size_t>(var.shape().num_elements()), static_cast<float>(initial_value));
  const HostTensor initial = HostTensor::from_vector<float>(var.shape().dims(), values).astype(var.dtype());
  slots_.emplace_back(name_ + "/" + var.name() + "/" + slot, initial, /*trainable=*/false);
  return slots_.back();
}

Variable Optimizer::add_variable(const std::string& name, const HostTensor& initial) {
  slots_.emplace_back(name_ + "/" + name, initial, /*trainable=*/false);
  return slots_.back();
}

OptimizerHandle::OptimizerHandle(const char* name) : OptimizerHandle(optimizer_from_config(name, "{}")) {}

}  // namespace kiln::keras
