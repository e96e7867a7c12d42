// Model <-> the Keras 2 HDF5 format (tf.keras model.save("m.h5") / load_model, and the .h5
// form of save_weights / load_weights), over io::Hdf5File. Layout and encodings follow
// tf.keras 2.x's hdf5_format.py (ANCHORS.md section 4); docs/saving.md summarizes them.
#pragma once

#include <memory>
#include <string>

#include "kiln/keras/models/model.h"
#include "kiln/keras/saving/saving.h"

namespace kiln::keras {

/// The Keras version Kiln writes: tf.keras 2.15's layout, which every tf.keras 2.x reads.
inline constexpr const char* kKerasVersion = "2.15.0";

/// Writes the whole model: root attributes keras_version, backend, model_config and (compiled,
/// include_optimizer) training_config; model_weights/<layer>/<layer>/<weight>:0; and
/// optimizer_weights/<optimizer>/... once the optimizer has state. Replaces `path` atomically.
void save_model_h5(const Model& model, const std::string& path, SaveOptions options = {});

/// Reads a Keras 2 .h5 model (written by Kiln or Keras 2.0-2.15): the Sequential or Functional
/// model of its model_config, compiled from training_config when options.compile and it is
/// present, with the optimizer state restored when its layout maps (a warning and a fresh
/// optimizer otherwise). IOError naming the file, the Keras version and the problem for
/// anything missing, malformed or mismatched (an unknown layer class or key is named).
std::unique_ptr<Model> load_model_h5(const std::string& path, const LoadOptions& options = {});

/// Weights only, in the layout of Keras's save_weights("w.h5"): layer_names, backend and
/// keras_version at the root, one group per layer.
void save_weights_h5(const Model& model, const std::string& path);
/// Loads .h5 weights layer by layer (the k-th layer with weights in the file into the k-th
/// in the model), or by layer name (options.by_name), from the root or from a whole-model
/// file's model_weights group.
void load_weights_h5(Model& model, const std::string& path, LoadWeightsOptions options = {});

}  // namespace kiln::keras
