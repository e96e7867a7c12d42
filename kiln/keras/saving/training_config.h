// Keras training_config JSON <-> CompileOptions: the loss, the metrics and the optimizer
// (class name + config) of a compiled model, as the root attribute of a Keras 2 .h5 file and
// in the directory format's model.json.
#pragma once

#include <string>

#include "kiln/keras/models/model.h"
#include "kiln/keras/optimizers/deserialize.h"  // optimizer_from_config

namespace kiln::keras {

/// {"loss": ..., "metrics": [...], "weighted_metrics": null, "loss_weights": null,
///  "optimizer_config": {"class_name": "Adam", "config": {...}}} of compiled options.
/// The optimizer config uses Keras 2's optimizer_v2 keys without "is_legacy_optimizer", so
/// tf.keras 2.11-2.15 rebuild the legacy optimizer whose weight layout optimizer_weights
/// follows (AdamW, Lion and Keras 2.11+'s Nadam, written in tf.keras's new-optimizer form, say so; the
/// legacy Nadam is optimizer_v2's, with its schedule decay as "decay").
std::string training_config_json(const CompileOptions& options);

/// The options a training_config describes. Accepts what tf.keras 2.x writes: a loss name or
/// object, metrics as names or nested MeanMetricWrapper objects, reduction "auto".
/// ConfigError naming the unknown loss, metric or optimizer class otherwise.
CompileOptions compile_options_from_training_config(const std::string& json);

/// A new metric of `metric`'s class and options, with fresh state (compile's copy of a metric
/// that applies to every output). ConfigError when its config cannot rebuild it.
MetricHandle copy_metric(const Metric& metric);

}  // namespace kiln::keras
