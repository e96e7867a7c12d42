// class_weight on labels: the per-row lookup and the Dataset map that applies it per batch.
#include "kiln/keras/trainer/class_weight.h"

#include <algorithm>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/data/transforms/prefetch_to_device.h"

namespace kiln::keras {

void check_class_weight(const std::map<int64_t, double>& class_weight, const std::string& model) {
  int64_t expected = 0;
  for (const auto& entry : class_weight)
    if (entry.first != expected++)
      KILN_THROW(ValueError, "[", model, "] expected class_weight to have the keys 0 to ", class_weight.size() - 1,
                 " (one per class), received key ", entry.first, ".");
}

HostTensor class_weighted(const std::map<int64_t, double>& class_weight, const HostTensor& y,
                          const HostTensor& sample_weight, const std::string& model) {
  check_class_weight(class_weight, model);
  const int64_t rows = y.rank() == 0 ? 0 : y.dims()[0], per_row = y.num_elements() / std::max<int64_t>(rows, 1);
  const bool one_hot = y.rank() >= 2 && y.dims().back() > 1;
  if (y.rank() == 0 || (!one_hot && per_row != 1))
    KILN_THROW(ShapeError, "[", model, "] class_weight needs one label per row (sparse, or one-hot rows), received y ",
               y.shape(), ".");
  const std::vector<double> labels = y.to_vector<double>();
  const std::vector<float> given = sample_weight.defined() ? sample_weight.to_vector<float>() : std::vector<float>();
  const int64_t steps = sample_weight.defined() ? sample_weight.num_elements() / std::max<int64_t>(rows, 1) : 1;
  std::vector<float> out(static_cast<size_t>(rows * steps));
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = labels.begin() + r * per_row;
    const double label = one_hot ? static_cast<double>(std::max_element(row, row + per_row) - row) : *row;
    const auto it = class_weight.find(static_cast<int64_t>(label));
    if (it == class_weight.end() || label != static_cast<double>(it->first))
      KILN_THROW(ValueError, "[", model, "] class_weight has no weight for the label ", label, " of row ", r,
                 ". Hint: give every class 0..C-1 a weight.");
    for (int64_t t = 0; t < steps; ++t) {
      const auto k = static_cast<size_t>(r * steps + t);
      out[k] = static_cast<float>(it->second) * (given.empty() ? 1.0F : given[k]);
    }
  }
  return HostTensor::from_vector<float>(sample_weight.defined() ? sample_weight.dims() : Dims{rows}, out);
}

data::Dataset with_class_weight(const data::Dataset& dataset, const std::map<int64_t, double>& class_weight,
                                size_t inputs, const std::string& model) {
  check_class_weight(class_weight, model);
  if (data::device_prefetch_of(dataset))
    KILN_THROW(ValueError, "[", model, "] fit with class_weight over a prefetch_to_device dataset is not built: the "
               "class weights are looked up on the host, per batch. Hint: leave prefetch_to_device out (fit copies "
               "the batches to the device itself).");
  auto weigh = [class_weight, inputs, model](data::Element e) {
    if (e.size() != inputs + 1 && e.size() != inputs + 2)
      KILN_THROW(DataError, "[", model, "] class_weight expected elements (x..., y) or (x..., y, sample_weight) of a "
                 "single-output model with ", inputs, " input(s), received ", e.size(), " components ",
                 e.shapes_string(), ".");
    const bool weighted = e.size() == inputs + 2;
    HostTensor w = class_weighted(class_weight, e[inputs], weighted ? e[inputs + 1] : HostTensor(), model);
    if (weighted) e[inputs + 1] = std::move(w);
    else e.push_back(std::move(w));
    return e;
  };
  return dataset.map(data::MapFn(weigh), data::MapOptions{.stateless = true, .name = "class_weight"});
}

}  // namespace kiln::keras
