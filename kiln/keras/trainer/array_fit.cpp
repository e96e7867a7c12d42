// Model::fit(x, y) and Model::evaluate(x, y): Keras's in-memory forms, as pipelines over the
// rows (from_tensor_slices, a full shuffle of row indices, batch) fed to the Dataset forms;
// sample_weight and class_weight become one weight array per output after the labels.
#include <algorithm>

#include "kiln/core/check.h"
#include "kiln/keras/models/model.h"
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

// x and one y per output: the components of from_tensor_slices (x, y_1, ..., y_m).
std::vector<HostTensor> components(const HostTensor& x, const std::vector<HostTensor>& ys, const Model& model,
                                   const char* what) {
  if (ys.size() != model.num_outputs()) {
    std::string names;
    for (const std::string& o : model.output_names()) names += (names.empty() ? "" : ", ") + o;
    KILN_THROW(ValueError, "[", model.name(), "] ", what, " received ", ys.size(), " y array(s) for a model with ",
               model.num_outputs(), " output(s) (", names, "). Hint: pass one y per output, in this order.");
  }
  std::vector<HostTensor> out{x};
  for (const HostTensor& y : ys) {
    check_rows(x, y, model.name(), what);
    out.push_back(y);
  }
  return out;
}

std::string output_list(const Model& model) {
  std::string names;
  for (const std::string& o : model.output_names()) names += (names.empty() ? "" : ", ") + o;
  return names;
}

HostTensor checked_weights(const HostTensor& w, int64_t rows, const Model& model, const std::string& what) {
  if (!w.defined() || w.rank() == 0 || w.dims()[0] != rows)
    KILN_THROW(ShapeError, "[", model.name(), "] ", what, " expected ", rows, " rows (one weight per example), received ",
               w.defined() ? str_cat(w.shape()) : "an empty tensor", ".");
  return w.dtype() == DType::kF32 ? w : HostTensor::from_vector<float>(w.dims(), w.to_vector<float>());
}

// The weight arrays after the labels: one per output (an output without weights gets ones),
// or none when neither sample_weight nor class_weight is given.
std::vector<HostTensor> output_weights(const SampleWeights& sw, const std::map<int64_t, double>& class_weight,
                                       const std::vector<HostTensor>& ys, const Model& model, const char* what) {
  const size_t outputs = model.num_outputs();
  const int64_t rows = ys[0].dims()[0];
  if (!class_weight.empty() && outputs > 1)
    KILN_THROW(ValueError, "[", model.name(), "] class_weight is only supported for Models with a single output (this "
               "one has ", outputs, ": ", output_list(model), "). Hint: weigh the rows of each output with sample_weight.");
  const int forms = (sw.all.defined() ? 1 : 0) + (sw.per_output.empty() ? 0 : 1) + (sw.by_output.empty() ? 0 : 1);
  if (forms > 1)
    KILN_THROW(ValueError, "[", model.name(), "] ", what, " received sample_weight in more than one form (all, "
               "per_output, by_output). Hint: set one.");
  if (forms == 0 && class_weight.empty()) return {};
  std::vector<HostTensor> out(outputs);
  if (sw.all.defined()) std::fill(out.begin(), out.end(), checked_weights(sw.all, rows, model, str_cat(what, "'s sample_weight")));
  if (!sw.per_output.empty() && sw.per_output.size() != outputs)
    KILN_THROW(ValueError, "[", model.name(), "] ", what, " received ", sw.per_output.size(), " sample_weight arrays for a "
               "model with ", outputs, " output(s) (", output_list(model), "). Hint: give one per output, in this order.");
  for (size_t i = 0; i < sw.per_output.size(); ++i)
    out[i] = checked_weights(sw.per_output[i], rows, model, str_cat(what, "'s sample_weight for output ", i));
  const std::vector<std::string> names = model.output_names();
  for (const auto& [name, w] : sw.by_output) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      KILN_THROW(ValueError, "[", model.name(), "] ", what, " received sample_weight for an output named '", name,
                 "'; the model's outputs are: ", output_list(model), ".");
    out[static_cast<size_t>(it - names.begin())] = checked_weights(w, rows, model, str_cat(what, "'s sample_weight for ", name));
  }
  if (!class_weight.empty()) out[0] = class_weighted(class_weight, ys[0], out[0], model.name());
  for (HostTensor& w : out)  // unweighted outputs: ones weigh as no weights do
    if (!w.defined()) w = HostTensor::from_vector<float>({rows}, std::vector<float>(static_cast<size_t>(rows), 1.0F));
  return out;
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

History Model::fit(const HostTensor& x, const HostTensor& y, ArrayFitOptions options) {
  return fit(x, std::vector<HostTensor>{y}, std::move(options));
}

History Model::fit(const HostTensor& x, const std::vector<HostTensor>& ys, ArrayFitOptions options) {
  const std::vector<HostTensor> parts = components(x, ys, *this, "fit");
  // Keras: the validation rows keep their sample weights; class_weight weighs training alone.
  std::vector<HostTensor> validation_parts = parts, train_parts = parts;
  const std::vector<HostTensor> weights = output_weights(options.sample_weight, {}, ys, *this, "fit");
  validation_parts.insert(validation_parts.end(), weights.begin(), weights.end());
  const std::vector<HostTensor> train_weights =
      options.class_weight.empty() ? weights : output_weights(options.sample_weight, options.class_weight, ys, *this, "fit");
  train_parts.insert(train_parts.end(), train_weights.begin(), train_weights.end());
  check_batch_size(options.batch_size, name_, "fit");
  if (!(options.validation_split >= 0.0 && options.validation_split < 1.0))
    KILN_THROW(ValueError, "[", name_, "] fit: validation_split must be in [0, 1), received ", options.validation_split, ".");
  const int64_t rows = x.dims()[0];
  // Keras: the validation rows are the last ones, cut before shuffling.
  const auto validation_rows = static_cast<int64_t>(static_cast<double>(rows) * options.validation_split);
  const int64_t train_rows = rows - validation_rows;
  if (train_rows <= 0)
    KILN_THROW(ValueError, "[", name_, "] fit: validation_split ", options.validation_split, " of ", rows,
               " rows leaves none to train on.");
  data::Dataset train = data::Dataset::from_tensor_slices(rows_of(train_parts, 0, train_rows));
  if (options.shuffle) train = train.shuffle(train_rows, options.seed);  // reshuffled each epoch
  FitOptions fit_options{.epochs = options.epochs,
                         .callbacks = std::move(options.callbacks),
                         .verbose = options.verbose,
                         .initial_epoch = options.initial_epoch};
  if (options.validation_data) {
    const ValidationArrays& v = *options.validation_data;
    std::vector<HostTensor> parts_v = components(v.x, {v.y}, *this, "fit's validation_data");
    const std::vector<HostTensor> weights_v =
        output_weights({.all = v.sample_weight}, {}, {v.y}, *this, "fit's validation_data");
    parts_v.insert(parts_v.end(), weights_v.begin(), weights_v.end());
    fit_options.validation_data = batches(parts_v, options.batch_size);
  } else if (validation_rows > 0) {
    fit_options.validation_data = batches(rows_of(validation_parts, train_rows, rows), options.batch_size);
  }
  return fit(train.batch(options.batch_size), std::move(fit_options));
}

Logs Model::evaluate(const HostTensor& x, const HostTensor& y, int64_t batch_size, EvaluateOptions options) {
  return evaluate(x, std::vector<HostTensor>{y}, batch_size, std::move(options));
}

Logs Model::evaluate(const HostTensor& x, const std::vector<HostTensor>& ys, int64_t batch_size, EvaluateOptions options) {
  std::vector<HostTensor> parts = components(x, ys, *this, "evaluate");
  const std::vector<HostTensor> weights = output_weights(options.sample_weight, {}, ys, *this, "evaluate");
  parts.insert(parts.end(), weights.begin(), weights.end());
  check_batch_size(batch_size, name_, "evaluate");
  options.sample_weight = {};  // now in the dataset's elements
  return evaluate(batches(parts, batch_size), std::move(options));
}

std::vector<HostTensor> Model::by_output_order(const std::map<std::string, HostTensor>& by_name, const char* what) const {
  const std::vector<std::string> names = output_names();
  std::vector<HostTensor> out;
  for (const std::string& name : names) {
    const auto it = by_name.find(name);
    if (it == by_name.end())
      KILN_THROW(ValueError, "[", name_, "] ", what, " received no y for the output '", name, "'; the model's outputs are: ",
                 output_list(*this), ". Hint: give one y per output, by its name.");
    out.push_back(it->second);
  }
  for (const auto& entry : by_name)
    if (std::find(names.begin(), names.end(), entry.first) == names.end())
      KILN_THROW(ValueError, "[", name_, "] ", what, " received y for an output named '", entry.first,
                 "'; the model's outputs are: ", output_list(*this), ".");
  return out;
}

History Model::fit_by_name(const HostTensor& x, const std::map<std::string, HostTensor>& ys, ArrayFitOptions options) {
  return fit(x, by_output_order(ys, "fit"), std::move(options));
}

Logs Model::evaluate_by_name(const HostTensor& x, const std::map<std::string, HostTensor>& ys, int64_t batch_size,
                             EvaluateOptions options) {
  return evaluate(x, by_output_order(ys, "evaluate"), batch_size, std::move(options));
}

}  // namespace kiln::keras
