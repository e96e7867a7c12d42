// Model::resolve_outputs: compile's loss, loss_weights and metrics options (one for every
// output, a list in output order, or a map by output name, as Keras 2 takes them) turned into
// one target per output, with Keras's errors for lists of the wrong length and unknown names.
#include <algorithm>
#include <set>

#include "kiln/core/check.h"
#include "kiln/keras/models/model.h"
#include "kiln/keras/saving/training_config.h"

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

std::vector<MetricHandle> Model::OutputTarget::all_metrics() const {
  std::vector<MetricHandle> out = metrics;
  out.insert(out.end(), weighted_metrics.begin(), weighted_metrics.end());
  return out;
}

void Model::resolve_metrics(const std::vector<MetricHandle>& flat, const std::vector<std::vector<MetricHandle>>& list,
                            const std::map<std::string, std::vector<MetricHandle>>& by_name, const char* option,
                            const std::vector<std::string>& names, std::vector<OutputTarget>& targets,
                            std::vector<MetricHandle> OutputTarget::*slot) const {
  if (!flat.empty() && (!list.empty() || !by_name.empty()))
    KILN_THROW(ValueError, "[", name_, "] compile received ", option, " both for every output and per output. Hint: set one.");
  distribute(list, by_name, (std::string("output_") + option).c_str(), names, name_,
             [&](size_t i) -> std::vector<MetricHandle>& { return targets[i].*slot; });
  if (targets.size() == 1) {
    if (!flat.empty()) targets[0].*slot = flat;
    return;
  }
  // Keras broadcasts a flat list to every output, a copy of each metric per output (a metric's
  // state belongs to one output).
  for (OutputTarget& t : targets)
    for (const MetricHandle& m : flat) {
      try {
        (t.*slot).push_back(copy_metric(*m));
      } catch (const ConfigError& e) {
        KILN_THROW(ConfigError, "[", name_, "] metric '", m->name(), "' of ", option, " applies to every output, so "
                   "each output gets a copy made from its config, which this metric cannot make (", e.what(),
                   "). Hint: pass one metric object per output with output_", option, ".");
      }
    }
}

void Model::name_metrics(std::vector<OutputTarget>& targets, const std::string& model) {
  // tf.keras 2.15's MetricsContainer._set_metric_names: several outputs prefix "<output>_"; a
  // weighted metric whose name is taken gets "weighted_" (after the output's prefix).
  std::set<std::string> taken;
  const bool several = targets.size() > 1;
  auto add = [&](const std::string& name) {
    if (!taken.insert(name).second)
      KILN_THROW(ValueError, "[", model, "] found two metrics with the same name: ", name, ". Hint: all the metrics "
                 "of a model need unique names (give one another: metrics::MeanAbsoluteError(\"mae_2\")).");
    return name;
  };
  for (OutputTarget& t : targets) {
    t.log_names.clear();
    const std::string prefix = several ? t.name + "_" : "";
    for (const MetricHandle& m : t.metrics) t.log_names.push_back(add(prefix + m->name()));
    for (const MetricHandle& m : t.weighted_metrics)
      t.log_names.push_back(add(taken.count(prefix + m->name()) ? prefix + "weighted_" + m->name() : prefix + m->name()));
  }
}

std::vector<Model::OutputTarget> Model::resolve_outputs(const CompileOptions& options) const {
  const std::vector<std::string> names = output_names();
  if (std::set<std::string>(names.begin(), names.end()).size() != names.size())
    KILN_THROW(ValueError, "[", name_, "] two outputs share a name (", joined(names), "). Hint: each output "
               "must come from a layer of its own (add an Activation(\"linear\", {.name = ...}) to one).");
  std::vector<OutputTarget> targets(names.size());
  for (size_t i = 0; i < names.size(); ++i) targets[i].name = names[i];

  const int loss_forms = (options.loss ? 1 : 0) + (options.losses.empty() ? 0 : 1) + (options.loss_by_output.empty() ? 0 : 1);
  if (loss_forms == 0)
    KILN_THROW(ConfigError, "[", name_, "] compile needs a loss. Hint: "
               "compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true})}).");
  if (loss_forms > 1)
    KILN_THROW(ValueError, "[", name_, "] compile received more than one of loss, losses and loss_by_output. Hint: set one.");
  if (options.loss)
    for (OutputTarget& t : targets) t.loss = options.loss;  // Keras: one loss applies to every output
  distribute(options.losses, options.loss_by_output, "losses", names, name_,
             [&](size_t i) -> LossHandle& { return targets[i].loss; });
  if (std::none_of(targets.begin(), targets.end(), [](const OutputTarget& t) { return bool(t.loss); }))
    KILN_THROW(ValueError, "[", name_, "] compile received no loss for any output. Hint: give at least one output a loss.");
  distribute(options.loss_weights, options.loss_weight_by_output, "loss_weights", names, name_,
             [&](size_t i) -> double& { return targets[i].loss_weight; });

  resolve_metrics(options.metrics, options.output_metrics, options.metrics_by_output, "metrics", names, targets,
                  &OutputTarget::metrics);
  resolve_metrics(options.weighted_metrics, options.output_weighted_metrics, options.weighted_metrics_by_output,
                  "weighted_metrics", names, targets, &OutputTarget::weighted_metrics);
  name_metrics(targets, name_);
  if (targets.size() > 1)  // Keras logs each output's own loss as "<output>_loss"
    for (OutputTarget& t : targets)
      if (t.loss) t.loss_tracker = std::make_unique<Mean>(t.name + "_loss");
  return targets;
}

}  // namespace kiln::keras
