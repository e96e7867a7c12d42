// DataAdapter: fit, evaluate and predict's inputs in every form Kiln takes them (a Dataset of
// batches, or in-memory rows: x with y as one array, a list in output order or a dict by output
// name, sample_weight and class_weight) turned into the one form the Trainer's loops read, a
// Dataset of batches with the call's options (Keras 3's trainers/data_adapters/). The steps'
// arguments are taken from each element here too.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/data/dataset.h"
#include "kiln/keras/models/model.h"

namespace kiln::keras {

/// One call's input as the Trainer reads it: batches of (x_1..x_n, y_1..y_m[, weights]), or
/// predict's (x_1..x_n[, ...]), and the options of the Dataset form of the call.
template <typename Options>
struct AdaptedInput {
  data::Dataset dataset;
  Options options;
};

class DataAdapter {
 public:
  explicit DataAdapter(const Model& model) : model_(model) {}

  /// fit(x, ys) (one y per output, in output order) as fit(Dataset): the training rows shuffled
  /// each epoch and batched, their weights (sample_weight times class_weight) after the labels,
  /// and the validation batches (validation_data, or the last validation_split of the rows,
  /// taken before shuffling, keeping their sample weights) in FitOptions.
  AdaptedInput<FitOptions> fit(const HostTensor& x, const std::vector<HostTensor>& ys, ArrayFitOptions options) const;
  /// evaluate(x, ys) as evaluate(Dataset): the rows in batches of `batch_size`, their sample
  /// weights in the elements.
  AdaptedInput<EvaluateOptions> evaluate(const HostTensor& x, const std::vector<HostTensor>& ys, int64_t batch_size,
                                         EvaluateOptions options) const;
  /// predict(x) as predict(Dataset): the rows in batches of options.batch_size.
  AdaptedInput<PredictOptions> predict(const HostTensor& x, PredictOptions options) const;
  /// y given by output name (Keras's dict), in output order; ValueError for a missing or
  /// unknown name. `what` names the call.
  std::vector<HostTensor> in_output_order(const std::map<std::string, HostTensor>& ys, const char* what) const;

  /// The components of a batch the train and test steps take: the inputs, the y's, then the
  /// sample weights when the batch has them, one per output (a single weight array is
  /// repeated for each). DataError naming the expected components otherwise.
  std::vector<HostTensor> step_args(const data::Element& batch) const;
  /// The first num_inputs() components of a predict element.
  std::vector<HostTensor> predict_args(const data::Element& element) const;

 private:
  /// x and one y per output: the components of from_tensor_slices (x, y_1, ..., y_m).
  std::vector<HostTensor> components(const HostTensor& x, const std::vector<HostTensor>& ys, const char* what) const;
  /// The weight arrays after the labels: one per output (an output without weights gets
  /// ones), or none when neither sample_weight nor class_weight is given.
  std::vector<HostTensor> output_weights(const SampleWeights& sw, const std::map<int64_t, double>& class_weight,
                                         const std::vector<HostTensor>& ys, const char* what) const;
  HostTensor checked_weights(const HostTensor& w, int64_t rows, const std::string& what) const;
  std::string output_list() const;

  const Model& model_;
};

/// `dataset` with the model's host layers (Model::host_layers) applied to each element's input
/// components, input i through its own list, by a parallel map; `dataset` itself when there
/// are none. fit, evaluate and predict run their steps on this.
data::Dataset with_host_layers(const Model& model, data::Dataset dataset);

}  // namespace kiln::keras
