// LossScaleOptimizer: unscale, check finiteness, apply or skip, adjust the scale; all as traced
// ops (no control flow in the IR: a skipped step assigns every variable its old value).
#include "kiln/keras/optimizers/loss_scale_optimizer.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/replica_context.h"

namespace kiln::keras {

LossScaleOptimizer::LossScaleOptimizer(OptimizerHandle inner_optimizer, LossScaleOptimizerOptions options)
    : Optimizer(options.name, LearningRate(0.0)), inner_(std::move(inner_optimizer)), options_(std::move(options)) {
  if (dynamic_cast<const LossScaleOptimizer*>(inner_.get()) != nullptr)
    KILN_THROW(ValueError, "[", options_.name, "] the inner optimizer is already a LossScaleOptimizer. Hint: wrap "
               "the plain optimizer once.");
  if (!(options_.initial_scale > 0) || !std::isfinite(options_.initial_scale))
    KILN_THROW(ValueError, "[", options_.name, "] expected a finite initial_scale > 0, received initial_scale=",
               options_.initial_scale, ".");
  if (options_.dynamic_growth_steps < 1)
    KILN_THROW(ValueError, "[", options_.name, "] expected dynamic_growth_steps >= 1, received ",
               options_.dynamic_growth_steps, ".");
  dynamic_scale_ = Variable(options_.name + "/dynamic_scale",
                            HostTensor::scalar<float>(static_cast<float>(options_.initial_scale)), /*trainable=*/false);
  step_counter_ = Variable(options_.name + "/step_counter", HostTensor(Shape(DType::kI64, {})), /*trainable=*/false);
}

Tensor LossScaleOptimizer::scale_loss(const Tensor& loss) const { return loss * cast(dynamic_scale_.read(), loss.dtype()); }

void LossScaleOptimizer::apply_gradients(const std::vector<Tensor>& grads, const std::vector<Variable>& vars) {
  KILN_CHECK(grads.size() == vars.size(), "one gradient per variable");
  const Tensor scale = dynamic_scale_.read();
  // ok = 1 when every gradient element is finite (|g| < inf is false for inf and nan), else 0;
  // the minimum over the replicas, so all of them apply or skip the same step.
  std::vector<Tensor> unscaled;
  Tensor ok = Tensor::scalar(1.0);
  for (const Tensor& g : grads) {
    unscaled.push_back(g / cast(scale, g.dtype()));
    const Tensor finite = less(abs(unscaled.back()), std::numeric_limits<double>::infinity());
    ok = minimum(ok, cast(reduce_min(cast(finite, DType::kF32)), DType::kF32));
  }
  ok = all_reduce(ok, ir::ReduceKind::kMin);
  const Tensor apply = greater(ok, 0.5);
  // The inner optimizer runs on zeros where the step is skipped, so no nan reaches its
  // arithmetic; every variable it touches is then put back unless the step applies.
  for (Tensor& g : unscaled) g = where(apply, g, 0.0);
  inner_->create_slots(vars);
  std::vector<Variable> state = vars;
  for (const Variable& v : inner_->variables()) state.push_back(v);
  std::vector<Tensor> before;
  for (const Variable& v : state) before.push_back(v.read());
  inner_->apply_gradients(unscaled, vars);
  for (size_t i = 0; i < state.size(); ++i) state[i].assign(where(apply, state[i].read(), before[i]));

  // Finite: count the step, doubling the scale (and restarting the count) at
  // dynamic_growth_steps. Not finite: halve the scale and restart the count.
  const Tensor counted = step_counter_.read() + 1.0;
  if (options_.dynamic) {
    const Tensor grow = greater_equal(counted, static_cast<double>(options_.dynamic_growth_steps));
    dynamic_scale_.assign(where(apply, where(grow, scale * 2.0, scale), scale * 0.5));
    step_counter_.assign(where(apply, where(grow, zeros_like(counted), counted), zeros_like(counted)));
  } else {
    step_counter_.assign(where(apply, counted, zeros_like(counted)));
  }
}

std::vector<Variable> LossScaleOptimizer::variables() const {
  std::vector<Variable> out = inner_->variables();
  out.push_back(dynamic_scale_);
  out.push_back(step_counter_);
  return out;
}

std::string LossScaleOptimizer::get_config() const {
  nlohmann::json j = {{"name", name()},
                      {"inner_optimizer",
                       {{"class_name", inner_->class_name()}, {"config", nlohmann::json::parse(inner_->get_config())}}},
                      {"dynamic", options_.dynamic},
                      {"initial_scale", options_.initial_scale},
                      {"dynamic_growth_steps", options_.dynamic_growth_steps}};
  return j.dump();
}

void LossScaleOptimizer::update_step(const Tensor& /*grad*/, const Variable& /*var*/, size_t /*index*/,
                                     const Tensor& /*lr*/, const Tensor& /*local_step*/) {
  KILN_CHECK(false, "LossScaleOptimizer::update_step: apply_gradients delegates to the inner optimizer");
}

}  // namespace kiln::keras
