// Model::fit(x, y) and Model::evaluate(x, y): Keras's in-memory forms, as pipelines over the
// rows (from_tensor_slices, a full shuffle of row indices, batch) fed to the Dataset forms.
#include "kiln/core/check.h"
#include "kiln/keras/models/model.h"

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
  data::Dataset train = data::Dataset::from_tensor_slices(rows_of(parts, 0, train_rows));
  if (options.shuffle) train = train.shuffle(train_rows, options.seed);  // reshuffled each epoch
  FitOptions fit_options{.epochs = options.epochs,
                         .callbacks = std::move(options.callbacks),
                         .verbose = options.verbose,
                         .initial_epoch = options.initial_epoch};
  if (options.validation_data) {
    const auto& [xv, yv] = *options.validation_data;
    fit_options.validation_data = batches(components(xv, {yv}, *this, "fit's validation_data"), options.batch_size);
  } else if (validation_rows > 0) {
    fit_options.validation_data = batches(rows_of(parts, train_rows, rows), options.batch_size);
  }
  return fit(train.batch(options.batch_size), std::move(fit_options));
}

Logs Model::evaluate(const HostTensor& x, const HostTensor& y, int64_t batch_size, EvaluateOptions options) {
  return evaluate(x, std::vector<HostTensor>{y}, batch_size, std::move(options));
}

Logs Model::evaluate(const HostTensor& x, const std::vector<HostTensor>& ys, int64_t batch_size, EvaluateOptions options) {
  const std::vector<HostTensor> parts = components(x, ys, *this, "evaluate");
  check_batch_size(batch_size, name_, "evaluate");
  return evaluate(batches(parts, batch_size), std::move(options));
}

}  // namespace kiln::keras
