// training_config JSON both ways. Readers are strict: every key of the config, of each
// serialized object and of each metric's config is one some Keras release writes (tables
// below), and a value Kiln cannot honour is a ConfigError naming it, never a default.
#include "kiln/keras/saving/training_config.h"

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/losses/losses.h"
#include "kiln/keras/metrics/accuracy.h"
#include "kiln/keras/metrics/confusion.h"
#include "kiln/keras/metrics/regression.h"

namespace kiln::keras {
namespace {

using nlohmann::json;

json loss_json(const Loss& loss) {
  if (loss.class_name().empty()) return loss.name();
  return {{"class_name", loss.class_name()}, {"config", json::parse(loss.get_config())}};
}

// The keys of training_config itself: tf.keras 2.x's (Model._get_compile_args and
// optimizer_config) and Keras 2.0-2.3's sample_weight_mode.
constexpr internal::ConfigKey kTrainingConfigKeys[] = {
    {"loss"},
    {"metrics"},
    {"weighted_metrics"},
    {"loss_weights"},
    {"optimizer_config"},
    {"sample_weight_mode", "null", "Kiln weights samples per example only (sample_weight_mode=None)"}};

// The class name of a serialized object ({"class_name", "config", ...}) after checking its
// keys; its config (an object, {} when absent or null) goes to `config`.
std::string serialized_class(const json& j, const char* what, json* config) {
  internal::expect_only_keys(j, {internal::serialized_object_keys()}, str_cat("serialized ", what), "training_config");
  if (!j.contains("class_name") || !j["class_name"].is_string())
    KILN_THROW(ConfigError, "[training_config] the ", what, " ", j.dump().substr(0, 200), " has no class_name.");
  *config = j.contains("config") && !j["config"].is_null() ? j["config"] : json::object();
  if (!config->is_object())
    KILN_THROW(ConfigError, "[training_config] the ", what, " config is ", config->dump().substr(0, 200),
               "; expected an object.");
  return j["class_name"].get<std::string>();
}

LossHandle loss_from_json(const json& j) {
  if (j.is_null()) return LossHandle();  // an output without a loss
  if (j.is_string()) return LossHandle(j.get<std::string>());
  if (!j.is_object())
    KILN_THROW(ConfigError, "[training_config] expected the loss as a name or {\"class_name\", \"config\"}, received ",
               j.dump(), ".");
  json config;
  const std::string cls = serialized_class(j, "loss", &config);
  return loss_from_config(cls, config.dump());
}

// A serialized object ({"class_name", "config"}) rather than a dict by output name.
bool is_serialized_object(const json& j) { return j.is_object() && j.contains("class_name"); }

MetricHandle metric_named(const std::string& fn, const std::string& name) {
  if (fn == "sparse_categorical_accuracy") return SparseCategoricalAccuracy(name);
  if (fn == "categorical_accuracy") return CategoricalAccuracy(name);
  if (fn == "binary_accuracy") return BinaryAccuracy(name);
  if (fn == "accuracy" || fn == "acc") return Accuracy(name);
  return MetricHandle(fn);  // ConfigError naming it when unknown
}

// Metrics arrive as names, per-output lists, or serialized objects (MeanMetricWrapper with
// its fn, or a metric class).
std::string or_default(const std::string& name, const char* fallback) { return name.empty() ? fallback : name; }

// Precision and Recall's thresholds (Keras: null means 0.5, a number or a list).
std::vector<double> thresholds_of(const std::string& cls, const json& config) {
  const json t = config.value("thresholds", json());
  if (t.is_null()) return {0.5};
  if (t.is_number()) return {t.get<double>()};
  std::vector<double> out;
  if (t.is_array())
    for (const json& e : t)
      if (e.is_number()) out.push_back(e.get<double>());
  if (out.empty() || out.size() != t.size())
    KILN_THROW(ConfigError, "[training_config] ", cls, " thresholds ", t.dump(),
               ": expected a number or a list of numbers.");
  return out;
}

// The keys of each metric class's config in tf.keras 2.x and Keras 3, beyond kMetricKeys
// (Metric's name and dtype, MeanMetricWrapper's fn): options Kiln does not implement load at
// their off values only.
constexpr std::string_view kRecompile = "load with compile=false and compile yourself";
constexpr internal::ConfigKey kMetricKeys[] = {{"name"}, {"dtype"}, {"fn"}};
constexpr internal::ConfigKey kNoOwnKeys[] = {{"name"}};  // kMetricKeys' name again: no C++ array is empty
constexpr internal::ConfigKey kBinaryAccuracyKeys[] = {{"threshold"}};
constexpr internal::ConfigKey kTopKKeys[] = {{"k"}};
constexpr internal::ConfigKey kSparseTopKKeys[] = {
    {"k"}, {"from_sorted_ids", "false", "Kiln's SparseTopKCategoricalAccuracy takes scores, not sorted ids"}};
constexpr internal::ConfigKey kThresholdedKeys[] = {
    {"thresholds"},
    {"top_k", "null", "Kiln's Precision and Recall do not implement top_k; load with compile=false"},
    {"class_id", "null", "Kiln's Precision and Recall do not implement class_id; load with compile=false"}};
// Keras writes AUC's thresholds only when the user gave them; Kiln spaces num_thresholds evenly.
constexpr internal::ConfigKey kAucKeys[] = {
    {"num_thresholds"},
    {"curve"},
    {"summation_method", "\"interpolation\"", kRecompile},
    {"thresholds", "null", "Kiln's AUC spaces num_thresholds thresholds evenly; load with compile=false"},
    {"multi_label", "false", kRecompile},
    {"num_labels"},  // used only with multi_label
    {"label_weights", "null", kRecompile},
    {"from_logits", "false", kRecompile}};

struct MetricClass {
  std::string_view class_name;
  internal::ConfigKeys keys;
};
constexpr MetricClass kMetricClasses[] = {
    {"MeanMetricWrapper", kNoOwnKeys},          {"SparseCategoricalAccuracy", kNoOwnKeys},
    {"CategoricalAccuracy", kNoOwnKeys},        {"BinaryAccuracy", kBinaryAccuracyKeys},
    {"Accuracy", kNoOwnKeys},                   {"MeanAbsoluteError", kNoOwnKeys},
    {"MeanSquaredError", kNoOwnKeys},           {"RootMeanSquaredError", kNoOwnKeys},
    {"TopKCategoricalAccuracy", kTopKKeys},  {"SparseTopKCategoricalAccuracy", kSparseTopKKeys},
    {"Precision", kThresholdedKeys},         {"Recall", kThresholdedKeys},
    {"AUC", kAucKeys},
};

void metrics_from_json(const json& j, std::vector<MetricHandle>* out) {
  if (j.is_null()) return;
  if (j.is_string()) {
    out->push_back(MetricHandle(j.get<std::string>()));
  } else if (j.is_array()) {
    for (const json& e : j) metrics_from_json(e, out);
  } else if (j.is_object()) {
    json config;
    const std::string cls = serialized_class(j, "metric", &config);
    for (const MetricClass& m : kMetricClasses)
      if (m.class_name == cls) internal::expect_only_keys(config, {m.keys, kMetricKeys}, cls, "training_config");
    const std::string name = config.value("name", "");
    if (cls == "MeanMetricWrapper") out->push_back(metric_named(config.value("fn", name), name));
    else if (cls == "SparseCategoricalAccuracy") out->push_back(SparseCategoricalAccuracy(name));
    else if (cls == "CategoricalAccuracy") out->push_back(CategoricalAccuracy(name));
    else if (cls == "BinaryAccuracy")
      out->push_back(BinaryAccuracy(or_default(name, "binary_accuracy"), config.value("threshold", 0.5)));
    else if (cls == "Accuracy") out->push_back(Accuracy(name));
    else if (cls == "MeanAbsoluteError") out->push_back(metrics::MeanAbsoluteError(or_default(name, "mean_absolute_error")));
    else if (cls == "MeanSquaredError") out->push_back(metrics::MeanSquaredError(or_default(name, "mean_squared_error")));
    else if (cls == "RootMeanSquaredError")
      out->push_back(metrics::RootMeanSquaredError(or_default(name, "root_mean_squared_error")));
    else if (cls == "TopKCategoricalAccuracy")
      out->push_back(metrics::TopKCategoricalAccuracy(config.value("k", 5), or_default(name, "top_k_categorical_accuracy")));
    else if (cls == "SparseTopKCategoricalAccuracy")
      out->push_back(metrics::SparseTopKCategoricalAccuracy(config.value("k", 5),
                                                            or_default(name, "sparse_top_k_categorical_accuracy")));
    else if (cls == "Precision" || cls == "Recall") {
      if (cls == "Precision") out->push_back(metrics::Precision(thresholds_of(cls, config), or_default(name, "precision")));
      else out->push_back(metrics::Recall(thresholds_of(cls, config), or_default(name, "recall")));
    } else if (cls == "AUC") {
      out->push_back(metrics::AUC({.num_thresholds = config.value("num_thresholds", 200),
                                   .curve = config.value("curve", "ROC"),
                                   .name = or_default(name, "auc")}));
    }
    else
      KILN_THROW(ConfigError, "[training_config] unknown metric class '", cls,
                 "'. Hint: load with compile=false and compile yourself.");
  } else {
    KILN_THROW(ConfigError, "[training_config] unexpected metrics entry ", j.dump(), ".");
  }
}

// By name, or as Keras 2 saves a metric object: {"class_name", "config"} with its options.
json metric_json(const Metric& m) {
  return m.class_name().empty() ? json(m.name()) : json{{"class_name", m.class_name()}, {"config", json::parse(m.get_config())}};
}

json metric_list_json(const std::vector<MetricHandle>& metrics) {
  json out = json::array();
  for (const MetricHandle& m : metrics) out.push_back(metric_json(*m));
  return out;
}

// Keras 2 writes the loss, loss_weights and metrics as compile received them: one value, a
// list in output order, or a dict by output name.
template <typename T, typename ToJson>
json list_or_dict(const std::vector<T>& list, const std::map<std::string, T>& by_name, ToJson to_json) {
  if (!by_name.empty()) {
    json out = json::object();
    for (const auto& [name, value] : by_name) out[name] = to_json(value);
    return out;
  }
  if (list.empty()) return nullptr;
  json out = json::array();
  for (const T& value : list) out.push_back(to_json(value));
  return out;
}

// The inverse: `j` as a list or a dict of per-output values.
template <typename T, typename FromJson>
void read_list_or_dict(const json& j, std::vector<T>* list, std::map<std::string, T>* by_name, FromJson from_json) {
  if (j.is_array())
    for (const json& e : j) list->push_back(from_json(e));
  else
    for (const auto& [name, e] : j.items()) (*by_name)[name] = from_json(e);
}

std::vector<MetricHandle> metrics_of(const json& j) {
  std::vector<MetricHandle> out;
  metrics_from_json(j, &out);
  return out;
}

// compile's metrics or weighted_metrics as Keras 2 writes them: as compile received them.
json metrics_json(const std::vector<MetricHandle>& flat, const std::vector<std::vector<MetricHandle>>& list,
                  const std::map<std::string, std::vector<MetricHandle>>& by_name) {
  json out = list_or_dict(list, by_name, metric_list_json);
  return out.is_null() ? metric_list_json(flat) : out;
}

// The inverse. A list of lists or a dict of lists: metrics per output; a flat list applies to
// every output. tf.keras 2 writes a trained single-output model's metrics as [[...]]: one output's.
void read_metrics(const json& metrics, std::vector<MetricHandle>* flat, std::vector<std::vector<MetricHandle>>* list,
                  std::map<std::string, std::vector<MetricHandle>>* by_name) {
  const bool per_output = (metrics.is_array() && metrics.size() > 1 && metrics[0].is_array()) ||
                          (metrics.is_object() && !is_serialized_object(metrics));
  if (per_output) read_list_or_dict(metrics, list, by_name, metrics_of);
  else metrics_from_json(metrics, flat);
}

}  // namespace

MetricHandle copy_metric(const Metric& metric) {
  if (metric.class_name().empty()) return metric_named(metric.name(), metric.name());
  return metrics_of(metric_json(metric)).at(0);
}

std::string training_config_json(const CompileOptions& options) {
  auto loss_or_null = [](const LossHandle& l) { return l ? loss_json(*l) : json(); };
  json loss = options.loss ? loss_json(*options.loss) : list_or_dict(options.losses, options.loss_by_output, loss_or_null);
  json weighted = metrics_json(options.weighted_metrics, options.output_weighted_metrics, options.weighted_metrics_by_output);
  json j = {{"loss", loss},
            {"metrics", metrics_json(options.metrics, options.output_metrics, options.metrics_by_output)},
            {"weighted_metrics", weighted.empty() ? json() : weighted},
            {"loss_weights", list_or_dict(options.loss_weights, options.loss_weight_by_output, [](double w) { return w; })},
            {"optimizer_config",
             {{"class_name", options.optimizer->class_name()}, {"config", json::parse(options.optimizer->get_config())}}}};
  return j.dump();
}

CompileOptions compile_options_from_training_config(const std::string& text) {
  return internal::guarded("training_config", [&] {
  const json j = internal::parse(text, "training_config");
  if (!j.is_object() || !j.contains("loss") || !j.contains("optimizer_config"))
    KILN_THROW(ConfigError, "[training_config] expected an object with loss and optimizer_config, received ",
               j.dump().substr(0, 200), ".");
  internal::expect_only_keys(j, {kTrainingConfigKeys}, "training_config", "training_config");
  CompileOptions options;
  // A multi-output model's loss is a list or a dict by output name (Keras 2 writes what compile received).
  const json& loss = j["loss"];
  if (loss.is_array() || (loss.is_object() && !is_serialized_object(loss)))
    read_list_or_dict(loss, &options.losses, &options.loss_by_output, loss_from_json);
  else
    options.loss = loss_from_json(loss);
  const json weights = j.value("loss_weights", json());
  if (weights.is_array() || weights.is_object())
    read_list_or_dict(weights, &options.loss_weights, &options.loss_weight_by_output, [](const json& w) {
      if (!w.is_number()) KILN_THROW(ConfigError, "[training_config] a loss weight is ", w.dump(), ", not a number.");
      return w.get<double>();
    });
  read_metrics(j.value("metrics", json()), &options.metrics, &options.output_metrics, &options.metrics_by_output);
  read_metrics(j.value("weighted_metrics", json()), &options.weighted_metrics, &options.output_weighted_metrics,
               &options.weighted_metrics_by_output);
  const json& opt = j["optimizer_config"];
  if (!opt.is_object() || !opt.contains("class_name"))
    KILN_THROW(ConfigError, "[training_config] optimizer_config lacks class_name: ", opt.dump().substr(0, 200), ".");
  json opt_config;
  const std::string opt_class = serialized_class(opt, "optimizer", &opt_config);
  options.optimizer = optimizer_from_config(opt_class, opt_config.dump());
  return options;
  });
}

}  // namespace kiln::keras
