// CompiledOutputs: compile's loss, loss_weights and metrics options (one for every output, a
// list in output order, or a map by output name, as Keras 2 takes them) turned into one target
// per output, with Keras's errors for lists of the wrong length and unknown names; and the
// steps' loss, regularization and metric updates over those targets.
#include "kiln/keras/trainer/compiled_outputs.h"

#include <algorithm>
#include <set>
#include <utility>

#include "kiln/core/check.h"
#include "kiln/keras/losses/sample_weight.h"
#include "kiln/keras/models/model_layer.h"
#include "kiln/keras/saving/training_config.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/replica_context.h"

namespace kiln::keras {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Places the entries of an option given as a list (in output order) or a map (by output name)
// into `slot(i)`; a list of the wrong length or an unknown name is a ValueError naming the outputs.
template <typename T, typename Slot>
void distribute(const std::vector<T>& list, const std::map<std::string, T>& by_name, const char* option,
                const std::vector<std::string>& names, const std::string& model, Slot slot) {
  if (!list.empty() && !by_name.empty())
    KILN_THROW(ValueError, "[", model, "] compile received ", option, " both as a list and by output name. Hint: set one.");
  if (!list.empty() && list.size() != names.size())
    KILN_THROW(ValueError, "[", model, "] compile received ", list.size(), " entries in ", option, " for a model with ",
               names.size(), " output(s) (", joined(names), "). Hint: give one per output, in this order.");
  for (size_t i = 0; i < list.size(); ++i) slot(i) = list[i];
  for (const auto& [name, value] : by_name) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      KILN_THROW(ValueError, "[", model, "] compile received ", option, " for an output named '", name,
                 "'; the model's outputs are: ", joined(names), ". Hint: outputs are named after the layers that make them.");
    slot(static_cast<size_t>(it - names.begin())) = value;
  }
}

}  // namespace

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

std::vector<MetricHandle> CompiledOutputs::OutputTarget::all_metrics() const {
  std::vector<MetricHandle> out = metrics;
  out.insert(out.end(), weighted_metrics.begin(), weighted_metrics.end());
  return out;
}

void CompiledOutputs::resolve_metrics(const std::vector<MetricHandle>& flat,
                                      const std::vector<std::vector<MetricHandle>>& list,
                                      const std::map<std::string, std::vector<MetricHandle>>& by_name, const char* option,
                                      const std::vector<std::string>& names,
                                      std::vector<MetricHandle> OutputTarget::*slot) {
  if (!flat.empty() && (!list.empty() || !by_name.empty()))
    KILN_THROW(ValueError, "[", model_, "] compile received ", option, " both for every output and per output. Hint: set one.");
  distribute(list, by_name, (std::string("output_") + option).c_str(), names, model_,
             [&](size_t i) -> std::vector<MetricHandle>& { return targets_[i].*slot; });
  if (targets_.size() == 1) {
    if (!flat.empty()) targets_[0].*slot = flat;
    return;
  }
  // Keras broadcasts a flat list to every output, a copy of each metric per output (a metric's
  // state belongs to one output).
  for (OutputTarget& t : targets_)
    for (const MetricHandle& m : flat) {
      try {
        (t.*slot).push_back(copy_metric(*m));
      } catch (const ConfigError& e) {
        KILN_THROW(ConfigError, "[", model_, "] metric '", m->name(), "' of ", option, " applies to every output, so "
                   "each output gets a copy made from its config, which this metric cannot make (", e.what(),
                   "). Hint: pass one metric object per output with output_", option, ".");
      }
    }
}

void CompiledOutputs::name_metrics() {
  // tf.keras 2.15's MetricsContainer._set_metric_names: several outputs prefix "<output>_"; a
  // weighted metric whose name is taken gets "weighted_" (after the output's prefix).
  std::set<std::string> taken;
  const bool several = targets_.size() > 1;
  auto add = [&](const std::string& name) {
    if (!taken.insert(name).second)
      KILN_THROW(ValueError, "[", model_, "] found two metrics with the same name: ", name, ". Hint: all the metrics "
                 "of a model need unique names (give one another: metrics::MeanAbsoluteError(\"mae_2\")).");
    return name;
  };
  for (OutputTarget& t : targets_) {
    t.log_names.clear();
    const std::string prefix = several ? t.name + "_" : "";
    for (const MetricHandle& m : t.metrics) t.log_names.push_back(add(prefix + m->name()));
    for (const MetricHandle& m : t.weighted_metrics)
      t.log_names.push_back(add(taken.count(prefix + m->name()) ? prefix + "weighted_" + m->name() : prefix + m->name()));
  }
}

CompiledOutputs::CompiledOutputs(const CompileOptions& options, const std::vector<std::string>& names,
                                 const std::string& model)
    : model_(model), loss_tracker_(std::make_unique<Mean>("loss")), targets_(names.size()) {
  if (std::set<std::string>(names.begin(), names.end()).size() != names.size())
    KILN_THROW(ValueError, "[", model_, "] two outputs share a name (", joined(names), "). Hint: each output "
               "must come from a layer of its own (add an Activation(\"linear\", {.name = ...}) to one).");
  for (size_t i = 0; i < names.size(); ++i) targets_[i].name = names[i];

  const int loss_forms = (options.loss ? 1 : 0) + (options.losses.empty() ? 0 : 1) + (options.loss_by_output.empty() ? 0 : 1);
  if (loss_forms == 0)
    KILN_THROW(ConfigError, "[", model_, "] compile needs a loss. Hint: "
               "compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true})}).");
  if (loss_forms > 1)
    KILN_THROW(ValueError, "[", model_, "] compile received more than one of loss, losses and loss_by_output. Hint: set one.");
  if (options.loss)
    for (OutputTarget& t : targets_) t.loss = options.loss;  // Keras: one loss applies to every output
  distribute(options.losses, options.loss_by_output, "losses", names, model_,
             [&](size_t i) -> LossHandle& { return targets_[i].loss; });
  if (std::none_of(targets_.begin(), targets_.end(), [](const OutputTarget& t) { return bool(t.loss); }))
    KILN_THROW(ValueError, "[", model_, "] compile received no loss for any output. Hint: give at least one output a loss.");
  distribute(options.loss_weights, options.loss_weight_by_output, "loss_weights", names, model_,
             [&](size_t i) -> double& { return targets_[i].loss_weight; });

  resolve_metrics(options.metrics, options.output_metrics, options.metrics_by_output, "metrics", names,
                  &OutputTarget::metrics);
  resolve_metrics(options.weighted_metrics, options.output_weighted_metrics, options.weighted_metrics_by_output,
                  "weighted_metrics", names, &OutputTarget::weighted_metrics);
  name_metrics();
  if (targets_.size() > 1)  // Keras logs each output's own loss as "<output>_loss"
    for (OutputTarget& t : targets_)
      if (t.loss) t.loss_tracker = std::make_unique<Mean>(t.name + "_loss");
}

CompiledOutputs::StepLoss CompiledOutputs::compute_loss(const std::vector<Tensor>& ys, const std::vector<Tensor>& y_preds,
                                                        const std::vector<Tensor>& sample_weights, std::vector<Tensor> masks,
                                                        const std::vector<LayerHandle>& layers) const {
  KILN_CHECK(ys.size() == targets_.size() && y_preds.size() == targets_.size(), "one label and one prediction per output");
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
  // Keras's compiled_loss(..., regularization_losses=self.losses), in train and test steps:
  // the weights' penalties and those of this step's layer outputs.
  for (const Layer* l : leaf_layers(layers)) {
    for (const Tensor& penalty : l->regularization_losses()) total = total + penalty;
    for (const Tensor& penalty : l->activity_losses()) total = total + penalty;
  }
  return {std::move(total), std::move(own), std::move(masks), std::move(weights)};
}

std::vector<Tensor> CompiledOutputs::update_metrics(const std::vector<Tensor>& ys, const std::vector<Tensor>& y_preds,
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
      const Tensor y = label_like(ys[i], y_pred);
      // Keras's compiled metrics take the output's mask as their sample weights, the weighted
      // ones the sample weights times the mask.
      auto update = [&](const std::vector<MetricHandle>& metrics, const Tensor& weights) {
        for (const MetricHandle& m : metrics)
          if (weights.defined()) m->update_state_weighted(y, y_pred, weights);
          else m->update_state(y, y_pred);
      };
      update(targets_[i].metrics, loss.masks[i]);
      update(targets_[i].weighted_metrics, loss.weights[i]);
    }
  }
  // Keras computes results in cross-replica context, from the accumulators summed over the
  // replicas: exact when the shards differ in size. Plain reads without a strategy.
  trace::SummedReads summed(variables());
  std::vector<Tensor> results{loss_tracker_->result()};
  for (const OutputTarget& t : targets_)
    if (t.loss_tracker) results.push_back(t.loss_tracker->result());
  for (const OutputTarget& t : targets_)
    for (const MetricHandle& m : t.all_metrics()) results.push_back(m->result());
  return results;
}

std::vector<Variable> CompiledOutputs::variables() const {
  if (!loss_tracker_) return {};
  std::vector<Variable> out = loss_tracker_->variables();
  auto append = [&](const Metric& m) { out.insert(out.end(), m.variables().begin(), m.variables().end()); };
  for (const OutputTarget& t : targets_)
    if (t.loss_tracker) append(*t.loss_tracker);
  for (const OutputTarget& t : targets_)
    for (const MetricHandle& m : t.all_metrics()) append(*m);
  return out;
}

void CompiledOutputs::reset() {
  loss_tracker_->reset_state();
  for (const OutputTarget& t : targets_) {
    if (t.loss_tracker) t.loss_tracker->reset_state();
    for (const MetricHandle& m : t.all_metrics()) m->reset_state();
  }
}

Logs CompiledOutputs::logs_from(const std::vector<HostTensor>& outputs, const std::string& prefix) const {
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

}  // namespace kiln::keras
