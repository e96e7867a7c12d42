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

void check_batch_size(int64_t batch_size, const std::string& model, const char* what) {
  if (batch_size <= 0) KILN_THROW(ValueError, "[", model, "] ", what, ": batch_size must be positive, received ", batch_size, ".");
}

data::Dataset batches(const HostTensor& x, const HostTensor& y, int64_t batch_size) {
  return data::Dataset::from_tensor_slices({x, y}).batch(batch_size);
}

}  // namespace

History Model::fit(const HostTensor& x, const HostTensor& y, ArrayFitOptions options) {
  check_rows(x, y, name_, "fit");
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
  const HostTensor x_train = x.slice_rows(0, train_rows), y_train = y.slice_rows(0, train_rows);
  data::Dataset train = data::Dataset::from_tensor_slices({x_train, y_train});
  if (options.shuffle) train = train.shuffle(train_rows, options.seed);  // reshuffled each epoch
  FitOptions fit_options{.epochs = options.epochs,
                         .callbacks = std::move(options.callbacks),
                         .verbose = options.verbose,
                         .initial_epoch = options.initial_epoch};
  if (options.validation_data) {
    const auto& [xv, yv] = *options.validation_data;
    check_rows(xv, yv, name_, "fit's validation_data");
    fit_options.validation_data = batches(xv, yv, options.batch_size);
  } else if (validation_rows > 0) {
    fit_options.validation_data = batches(x.slice_rows(train_rows, rows), y.slice_rows(train_rows, rows), options.batch_size);
  }
  return fit(train.batch(options.batch_size), std::move(fit_options));
}

Logs Model::evaluate(const HostTensor& x, const HostTensor& y, int64_t batch_size, EvaluateOptions options) {
  check_rows(x, y, name_, "evaluate");
  check_batch_size(batch_size, name_, "evaluate");
  return evaluate(batches(x, y, batch_size), std::move(options));
}

}  // namespace kiln::keras
