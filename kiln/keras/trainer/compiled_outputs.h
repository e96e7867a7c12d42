// CompiledOutputs: compile's loss, loss_weights, metrics and weighted_metrics resolved to one
// target per model output (Keras 3's CompileLoss and CompileMetrics, trainers/compile_utils.py),
// and what the train and test steps do with them: the total loss (weighted outputs' losses plus
// the layers' regularization penalties), the metric updates and results, and their names in
// the logs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/keras/layers/layer.h"
#include "kiln/keras/metrics/metric.h"
#include "kiln/keras/models/model.h"
#include "kiln/keras/trainer/logs.h"

namespace kiln::keras {

/// The layers that compute on their own, a nested model's in its place: their weights'
/// penalties, output penalties and constraints are the outer model's too (Keras's model.losses
/// and constraints gather every sublayer's).
std::vector<Layer*> leaf_layers(const std::vector<LayerHandle>& layers);

class CompiledOutputs {
 public:
  CompiledOutputs() = default;
  /// compile's options for the outputs `names` of the model `model` (named in errors): one loss
  /// for every output, a list in output order, or a map by output name, as Keras 2 takes them;
  /// Keras's errors for lists of the wrong length and unknown names.
  CompiledOutputs(const CompileOptions& options, const std::vector<std::string>& names, const std::string& model);

  /// The total loss (weighted sum of the outputs' losses, plus regularization), each
  /// output's own loss (without its loss weight; undefined for an output without a loss), each
  /// output's mask (a masked output's loss is the mean over its kept steps) and its sample
  /// weights times its mask (what weighted_metrics take; undefined: none).
  struct StepLoss {
    Tensor total;
    std::vector<Tensor> own, masks, weights;
  };
  /// `sample_weights`: one per output, or empty (unweighted); `masks`: the masks of the
  /// model's outputs (Keras's y_pred._keras_mask; fewer, or undefined: none); `layers`: whose
  /// regularization penalties (the weights' and this step's outputs') add to the total.
  StepLoss compute_loss(const std::vector<Tensor>& ys, const std::vector<Tensor>& y_preds,
                        const std::vector<Tensor>& sample_weights, std::vector<Tensor> masks,
                        const std::vector<LayerHandle>& layers) const;
  /// Each output's metrics and loss tracker are updated: metrics weighed by the output's
  /// mask, weighted_metrics by its sample weights times the mask (from compute_loss). Returns
  /// the results: the loss, each output's loss (several outputs), then the metrics.
  std::vector<Tensor> update_metrics(const std::vector<Tensor>& ys, const std::vector<Tensor>& y_preds,
                                     const StepLoss& loss);
  /// The metric accumulators (the loss trackers', then each metric's), in update order.
  std::vector<Variable> variables() const;
  void reset();
  /// update_metrics' results by their Keras 2 names, each prefixed by `prefix` ("val_").
  Logs logs_from(const std::vector<HostTensor>& outputs, const std::string& prefix = "") const;

 private:
  /// What compile resolved for one output: its loss (may be empty: none), weight, metrics
  /// and weighted metrics, the names they log under, and the "<output>_loss" tracker of a
  /// multi-output model.
  struct OutputTarget {
    std::string name;
    LossHandle loss;
    double loss_weight = 1.0;
    std::vector<MetricHandle> metrics, weighted_metrics;
    std::vector<std::string> log_names;  // of all_metrics()
    std::unique_ptr<Mean> loss_tracker;
    /// The metrics, then the weighted ones (Keras's order of results).
    std::vector<MetricHandle> all_metrics() const;
  };
  /// Places compile's metrics (or weighted_metrics) option, in its three forms, into `slot`
  /// of each target.
  void resolve_metrics(const std::vector<MetricHandle>& flat, const std::vector<std::vector<MetricHandle>>& list,
                       const std::map<std::string, std::vector<MetricHandle>>& by_name, const char* option,
                       const std::vector<std::string>& names, std::vector<MetricHandle> OutputTarget::*slot);
  /// Each target's log_names, as Keras names the metrics; a ValueError for a name used twice.
  void name_metrics();

  std::string model_;
  std::unique_ptr<Mean> loss_tracker_;
  std::vector<OutputTarget> targets_;
};

}  // namespace kiln::keras
