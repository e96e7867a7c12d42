// Nadam update as trace ops; the momentum-schedule product is updated once per step, before
// the variables (Keras 3's _backend_update_step, optimizer_v2's _prepare_local, Keras 2.3's
// get_updates: all three read the product once and multiply it by u_t for every variable).
#include "kiln/keras/optimizers/nadam.h"

#include <cmath>

#include "kiln/core/check.h"
#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {

namespace {
constexpr double kMomentumScheduleBase = 0.96;
double f32(double x) { return static_cast<float>(x); }
}  // namespace

// Keras's Nadam casts beta_1 and beta_2 to the variable's dtype before every use, so that
// (1 - beta_2) and beta_2^t agree; with an exact 1 - 0.999 beside f32 0.999^t the step is off
// by 1.3e-5 of itself. The config keeps the values as given.
Nadam::Nadam(NadamOptions options)
    : Optimizer(options.name, options.learning_rate, clipping_of(options)),
      beta_1_(options.beta_1), beta_2_(options.beta_2), epsilon_(options.epsilon),
      schedule_decay_(options.schedule_decay) {
  // optimizer_v2's Nadam raises the same; Keras 2.0-2.3's had no schedules.
  if (schedule_decay_ && options.learning_rate.schedule)
    KILN_THROW(ValueError, "[", name(), "] the legacy Nadam (schedule_decay=", *schedule_decay_,
               ") does not support a LearningRateSchedule as the learning rate, as in Keras. Hint: use Nadam "
               "without schedule_decay (Keras 2.11+/3's Nadam) for a schedule.");
}

std::string Nadam::get_config() const {
  std::string config =
      config_with(Optimizer::get_config(), {{"beta_1", beta_1_}, {"beta_2", beta_2_}, {"epsilon", epsilon_}});
  // optimizer_v2's Nadam keeps schedule_decay as its "decay" (and reads Keras 2.0-2.3's key).
  if (schedule_decay_) config = config_with(config, {{"decay", *schedule_decay_}});
  return config;
}

void Nadam::build(const std::vector<Variable>& vars) {
  for (const Variable& var : vars) {
    m_.push_back(add_slot(var, "m"));
    v_.push_back(add_slot(var, "v"));
  }
  u_product_ = add_variable("u_product", HostTensor::scalar<float>(1.0f));
}

float Nadam::u_product_after(int64_t steps) const {
  const float beta_1 = static_cast<float>(beta_1_), base = static_cast<float>(kMomentumScheduleBase);
  const float s = static_cast<float>(schedule_decay_.value_or(1.0));
  float product = 1.0f;
  // Each u_t < 1, so the product decays to where multiplying by u_t leaves it unchanged (0, or
  // the smallest denormal when u_t rounds it back up), long before a large step count: stop there.
  for (int64_t t = 1; t <= steps; ++t) {
    const float next = product * (beta_1 * (1.0f - 0.5f * std::pow(base, static_cast<float>(t) * s)));
    if (next == product) break;
    product = next;
  }
  return product;
}

// The exponent is s * step in f32, as Keras 2 computes t * schedule_decay.
Tensor Nadam::momentum_at(const Tensor& step) const {
  const Tensor exponent = schedule_decay_ ? step * f32(*schedule_decay_) : step;
  return f32(beta_1_) * (1.0 - 0.5 * pow(full(Shape(DType::kF32, {}), kMomentumScheduleBase), exponent));
}

void Nadam::begin_update(const Tensor& local_step) {
  u_product_.assign(u_product_.read() * momentum_at(local_step));
}

void Nadam::update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                        const Tensor& local_step) {
  Tensor u_t = momentum_at(local_step);
  Tensor u_t_1 = momentum_at(local_step + 1.0);
  Tensor u_product_t = u_product_.read();  // already times u_t (begin_update)
  Tensor u_product_t_1 = u_product_t * u_t_1;
  const double beta_1 = f32(beta_1_), beta_2 = f32(beta_2_);
  Tensor beta_2_power = pow(full(Shape(DType::kF32, {}), beta_2), local_step);
  Tensor m = beta_1 * m_[index].read() + (1.0 - beta_1) * grad;
  Tensor v = beta_2 * v_[index].read() + (1.0 - beta_2) * grad * grad;
  m_[index].assign(m);
  v_[index].assign(v);
  Tensor m_hat = u_t_1 * m / (1.0 - u_product_t_1) + (1.0 - u_t) * grad / (1.0 - u_product_t);
  Tensor v_hat = v / (1.0 - beta_2_power);
  var.assign(var.read() - lr * m_hat / (sqrt(v_hat) + epsilon_));
}

}  // namespace kiln::keras
