// Keras's class_weight: each example's weight is the weight of its class (its sparse label, or
// the argmax of a one-hot label), multiplied into its sample weight when it has one. Shared by
// fit(x, y), which weighs its arrays, and fit(Dataset), which maps each batch.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kiln/core/host_tensor.h"
#include "kiln/data/dataset.h"

namespace kiln::keras {

/// ValueError unless the keys are 0..C-1 (Keras: "expected class_weight to be a dict with keys
/// from 0 to one less than the number of classes"). `model` names the error.
void check_class_weight(const std::map<int64_t, double>& class_weight, const std::string& model);

/// The weight of each row of the labels `y` (rows, 1) or (rows,) sparse, or (rows, C) one-hot,
/// times `sample_weight` (rows,) or (rows, T) when defined; f32 of the sample weight's dims,
/// else (rows,). ValueError for a label without a weight.
HostTensor class_weighted(const std::map<int64_t, double>& class_weight, const HostTensor& y,
                          const HostTensor& sample_weight, const std::string& model);

/// `dataset`'s batches (x_1..x_n, y) or (x_1..x_n, y, w) as (x_1..x_n, y, w * class weight of
/// y), tf.keras 2.15's DataHandler map for fit(dataset, class_weight=...); `inputs` is n.
data::Dataset with_class_weight(const data::Dataset& dataset, const std::map<int64_t, double>& class_weight,
                                size_t inputs, const std::string& model);

}  // namespace kiln::keras
