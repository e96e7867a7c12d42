// DataAdapter: Keras's in-memory forms of fit, evaluate and predict as pipelines over the rows
// (from_tensor_slices, a full shuffle of row indices, batch) for the Trainer's Dataset loops;
// sample_weight and class_weight become one weight array per output after the labels.
#include "kiln/keras/trainer/data_adapter.h"

#include <algorithm>

#include "kiln/core/check.h"
#include "kiln/keras/layers/host_layer.h"
#include "kiln/keras/models/model_layer.h"
#include "kiln/keras/trainer/class_weight.h"

namespace kiln::keras {
namespace {

void check_rows(const HostTensor& x, const HostTensor& y, const std::string& model, const char* what) {
  if (!x.defined() || !y.defined() || x.rank() == 0 || y.rank() == 0)
    KILN_THROW(ShapeError, "[", model, "] ", what, " needs x and y with a leading axis of rows.");
  if (x.dims()[0] != y.dims()[0])
    KILN_THROW(ShapeError, "[", model, "] ", what, " received ", x.dims()[0], " rows of x (", x.shape(), ") but ",
               y.dims()[0], " of y (", y.shape(), "). Hint: x and y need one row per example.");
}

std::vector<HostTensor> rows_of(const std::vector<HostTensor>& parts, int64_t begin, int64_t end) {
  std::vector<HostTensor> out;
  for (const HostTensor& p : parts) out.push_back(p.slice_rows(begin, end));
  return out;
}

void check_batch_size(int64_t batch_size, const std::string& model, const char* what) {
  if (batch_size <= 0) KILN_THROW(ValueError, "[", model, "] ", what, ": batch_size must be positive, received ", batch_size, ".");
}

data::Dataset batches(const std::vector<HostTensor>& parts, int64_t batch_size) {
  return data::Dataset::from_tensor_slices(parts).batch(batch_size);
}

}  // namespace

std::string DataAdapter::output_list() const {
  std::string names;
  for (const std::string& o : model_.output_names()) names += (names.empty() ? "" : ", ") + o;
  return names;
}

std::vector<HostTensor> DataAdapter::components(const HostTensor& x, const std::vector<HostTensor>& ys,
                                                const char* what) const {
  if (ys.size() != model_.num_outputs())
    KILN_THROW(ValueError, "[", model_.name(), "] ", what, " received ", ys.size(), " y array(s) for a model with ",
               model_.num_outputs(), " output(s) (", output_list(), "). Hint: pass one y per output, in this order.");
  std::vector<HostTensor> out{x};
  for (const HostTensor& y : ys) {
    check_rows(x, y, model_.name(), what);
    out.push_back(y);
  }
  return out;
}

HostTensor DataAdapter::checked_weights(const HostTensor& w, int64_t rows, const std::string& what) const {
  if (!w.defined() || w.rank() == 0 || w.dims()[0] != rows)
    KILN_THROW(ShapeError, "[", model_.name(), "] ", what, " expected ", rows, " rows (one weight per example), received ",
               w.defined() ? str_cat(w.shape()) : "an empty tensor", ".");
  return w.dtype() == DType::kF32 ? w : HostTensor::from_vector<float>(w.dims(), w.to_vector<float>());
}

std::vector<HostTensor> DataAdapter::output_weights(const SampleWeights& sw, const std::map<int64_t, double>& class_weight,
                                                    const std::vector<HostTensor>& ys, const char* what) const {
  const size_t outputs = model_.num_outputs();
  const int64_t rows = ys[0].dims()[0];
  if (!class_weight.empty() && outputs > 1)
    KILN_THROW(ValueError, "[", model_.name(), "] class_weight is only supported for Models with a single output (this "
               "one has ", outputs, ": ", output_list(), "). Hint: weigh the rows of each output with sample_weight.");
  const int forms = (sw.all.defined() ? 1 : 0) + (sw.per_output.empty() ? 0 : 1) + (sw.by_output.empty() ? 0 : 1);
  if (forms > 1)
    KILN_THROW(ValueError, "[", model_.name(), "] ", what, " received sample_weight in more than one form (all, "
               "per_output, by_output). Hint: set one.");
  if (forms == 0 && class_weight.empty()) return {};
  std::vector<HostTensor> out(outputs);
  if (sw.all.defined()) std::fill(out.begin(), out.end(), checked_weights(sw.all, rows, str_cat(what, "'s sample_weight")));
  if (!sw.per_output.empty() && sw.per_output.size() != outputs)
    KILN_THROW(ValueError, "[", model_.name(), "] ", what, " received ", sw.per_output.size(), " sample_weight arrays for a "
               "model with ", outputs, " output(s) (", output_list(), "). Hint: give one per output, in this order.");
  for (size_t i = 0; i < sw.per_output.size(); ++i)
    out[i] = checked_weights(sw.per_output[i], rows, str_cat(what, "'s sample_weight for output ", i));
  const std::vector<std::string> names = model_.output_names();
  for (const auto& [name, w] : sw.by_output) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      KILN_THROW(ValueError, "[", model_.name(), "] ", what, " received sample_weight for an output named '", name,
                 "'; the model's outputs are: ", output_list(), ".");
    out[static_cast<size_t>(it - names.begin())] = checked_weights(w, rows, str_cat(what, "'s sample_weight for ", name));
  }
  if (!class_weight.empty()) out[0] = class_weighted(class_weight, ys[0], out[0], model_.name());
  for (HostTensor& w : out)  // unweighted outputs: ones weigh as no weights do
    if (!w.defined()) w = HostTensor::from_vector<float>({rows}, std::vector<float>(static_cast<size_t>(rows), 1.0F));
  return out;
}

AdaptedInput<FitOptions> DataAdapter::fit(const HostTensor& x, const std::vector<HostTensor>& ys,
                                          ArrayFitOptions options) const {
  const std::string& name = model_.name();
  const std::vector<HostTensor> parts = components(x, ys, "fit");
  // Keras: the validation rows keep their sample weights; class_weight weighs training alone.
  std::vector<HostTensor> validation_parts = parts, train_parts = parts;
  const std::vector<HostTensor> weights = output_weights(options.sample_weight, {}, ys, "fit");
  validation_parts.insert(validation_parts.end(), weights.begin(), weights.end());
  const std::vector<HostTensor> train_weights =
      options.class_weight.empty() ? weights : output_weights(options.sample_weight, options.class_weight, ys, "fit");
  train_parts.insert(train_parts.end(), train_weights.begin(), train_weights.end());
  check_batch_size(options.batch_size, name, "fit");
  if (!(options.validation_split >= 0.0 && options.validation_split < 1.0))
    KILN_THROW(ValueError, "[", name, "] fit: validation_split must be in [0, 1), received ", options.validation_split, ".");
  const int64_t rows = x.dims()[0];
  // Keras: the validation rows are the last ones, cut before shuffling.
  const auto validation_rows = static_cast<int64_t>(static_cast<double>(rows) * options.validation_split);
  const int64_t train_rows = rows - validation_rows;
  if (train_rows <= 0)
    KILN_THROW(ValueError, "[", name, "] fit: validation_split ", options.validation_split, " of ", rows,
               " rows leaves none to train on.");
  data::Dataset train = data::Dataset::from_tensor_slices(rows_of(train_parts, 0, train_rows));
  if (options.shuffle) train = train.shuffle(train_rows, options.seed);  // reshuffled each epoch
  FitOptions fit_options{.epochs = options.epochs,
                         .callbacks = std::move(options.callbacks),
                         .verbose = options.verbose,
                         .initial_epoch = options.initial_epoch};
  if (options.validation_data) {
    const ValidationArrays& v = *options.validation_data;
    std::vector<HostTensor> parts_v = components(v.x, {v.y}, "fit's validation_data");
    const std::vector<HostTensor> weights_v = output_weights({.all = v.sample_weight}, {}, {v.y}, "fit's validation_data");
    parts_v.insert(parts_v.end(), weights_v.begin(), weights_v.end());
    fit_options.validation_data = batches(parts_v, options.batch_size);
  } else if (validation_rows > 0) {
    fit_options.validation_data = batches(rows_of(validation_parts, train_rows, rows), options.batch_size);
  }
  return {train.batch(options.batch_size), std::move(fit_options)};
}

AdaptedInput<EvaluateOptions> DataAdapter::evaluate(const HostTensor& x, const std::vector<HostTensor>& ys,
                                                    int64_t batch_size, EvaluateOptions options) const {
  std::vector<HostTensor> parts = components(x, ys, "evaluate");
  const std::vector<HostTensor> weights = output_weights(options.sample_weight, {}, ys, "evaluate");
  parts.insert(parts.end(), weights.begin(), weights.end());
  check_batch_size(batch_size, model_.name(), "evaluate");
  options.sample_weight = {};  // now in the dataset's elements
  return {batches(parts, batch_size), std::move(options)};
}

AdaptedInput<PredictOptions> DataAdapter::predict(const HostTensor& x, PredictOptions options) const {
  if (!x.defined() || x.rank() == 0)
    KILN_THROW(ShapeError, "[", model_.name(), "] predict needs x with a leading axis of rows, received ",
               x.defined() ? str_cat(x.shape()) : "an empty tensor", ".");
  // One array is one input: a model of several says so before a pipeline is made, as its call would.
  if (model_.num_inputs() != 1)
    KILN_THROW(ValueError, "[", model_.name(), "] expected ", model_.num_inputs(), " inputs, received 1. Hint: predict "
               "a Dataset of (x_1, ..., x_n) elements.");
  check_batch_size(options.batch_size, model_.name(), "predict");
  return {batches({x}, options.batch_size), options};
}

std::vector<HostTensor> DataAdapter::in_output_order(const std::map<std::string, HostTensor>& ys, const char* what) const {
  const std::vector<std::string> names = model_.output_names();
  std::vector<HostTensor> out;
  for (const std::string& name : names) {
    const auto it = ys.find(name);
    if (it == ys.end())
      KILN_THROW(ValueError, "[", model_.name(), "] ", what, " received no y for the output '", name,
                 "'; the model's outputs are: ", output_list(), ". Hint: give one y per output, by its name.");
    out.push_back(it->second);
  }
  for (const auto& entry : ys)
    if (std::find(names.begin(), names.end(), entry.first) == names.end())
      KILN_THROW(ValueError, "[", model_.name(), "] ", what, " received y for an output named '", entry.first,
                 "'; the model's outputs are: ", output_list(), ".");
  return out;
}

std::vector<HostTensor> DataAdapter::step_args(const data::Element& batch) const {
  const size_t inputs = model_.num_inputs(), outputs = model_.num_outputs(), n = inputs + outputs;
  // Keras's (x, y, sample_weight): after the labels one weight array for every output, or one per output.
  const bool one_weight = batch.size() == n + 1, per_output = batch.size() == n + outputs;
  if (batch.size() < n || (batch.size() > n && !one_weight && !per_output))
    KILN_THROW(DataError, "[", model_.name(), "] expected elements with ", inputs, " input(s), ", outputs,
               " label array(s) (one per output: ", output_list(), ") and optionally the sample weights (one array, or "
               "one per output), received ", batch.size(), " components ", batch.shapes_string(),
               ". Hint: from_tensor_slices({x_1, ..., x_n, y_1, ..., y_m}) or, weighted, ({x..., y..., w}) or "
               "({x..., y..., w_1, ..., w_m}).");
  std::vector<HostTensor> args(batch.begin(), batch.end());
  if (one_weight && outputs > 1) args.insert(args.end(), outputs - 1, args.back());
  return args;
}

std::vector<HostTensor> DataAdapter::predict_args(const data::Element& element) const {
  if (element.size() < model_.num_inputs())
    KILN_THROW(DataError, "[", model_.name(), "] predict expected elements with ", model_.num_inputs(),
               " input(s), received ", element.shapes_string(), ".");
  return {element.begin(), element.begin() + static_cast<std::ptrdiff_t>(model_.num_inputs())};
}

namespace {

// The first host layer `model` holds, in its nested models too; null when none.
const Layer* first_host_layer(const Model& model) {
  for (const LayerHandle& l : model.layers()) {
    if (dynamic_cast<const HostLayer*>(&*l) != nullptr) return &*l;
    if (const auto* nested = dynamic_cast<const ModelLayer*>(&*l))
      if (const Layer* host = first_host_layer(nested->model())) return host;
  }
  return nullptr;
}

}  // namespace

data::Dataset with_host_layers(const Model& model, data::Dataset dataset) {
  // Only the front of the model fit, evaluate or predict runs is mapped over the pipeline; a
  // nested model's host layers would meet raw strings inside the compiled step.
  for (const LayerHandle& l : model.layers())
    if (const auto* nested = dynamic_cast<const ModelLayer*>(&*l))
      if (const Layer* host = first_host_layer(nested->model()))
        KILN_THROW(CompileError, "[", model.name(), "] the model '", nested->name(), "' (", nested->class_name(),
                   "), used here as a layer, holds the host layer '", host->name(), "' (", host->class_name(),
                   "); host layers run before the compiled step only at the front of the model that fit, evaluate "
                   "or predict is called on. Hint: call the host layer on this model's input (or map it over the "
                   "Dataset) and nest '", nested->name(), "' without it.");
  std::vector<std::vector<const HostLayer*>> per_input = model.host_layers();
  if (std::all_of(per_input.begin(), per_input.end(), [](const auto& layers) { return layers.empty(); }))
    return dataset;
  // The layers' tables are shared with the model's copies, so a later adapt shows here too.
  data::MapFn apply = [per_input](data::Element e) {
    for (size_t i = 0; i < per_input.size() && i < e.size(); ++i)
      for (const HostLayer* l : per_input[i]) e[i] = l->host_call(e[i]);
    return e;
  };
  return dataset.map(std::move(apply), {.num_parallel_calls = data::kAutotune, .stateless = true,
                                        .name = model.name() + " host layers"});
}

}  // namespace kiln::keras
