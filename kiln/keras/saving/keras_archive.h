// Model <-> Keras 3's native formats: the .keras zip archive (config.json, metadata.json,
// model.weights.h5) that keras.saving.save_model / load_model write and read, and the
// .weights.h5 files of Keras 3's save_weights / load_weights. Layout from Keras 3's
// saving_lib.py (H5IOStore, _save_state); docs/saving.md summarizes it.
#pragma once

#include <memory>
#include <string>

#include "kiln/keras/models/model.h"
#include "kiln/keras/saving/saving.h"

namespace kiln::keras {

/// The Keras version Kiln's .keras files say wrote them (metadata.json): the saving_lib layout
/// Kiln follows, which every Keras 3 reads.
inline constexpr const char* kKeras3Version = "3.15.0";

/// Member names inside a .keras archive.
inline constexpr const char* kKerasConfigMember = "config.json";
inline constexpr const char* kKerasMetadataMember = "metadata.json";
inline constexpr const char* kKerasWeightsMember = "model.weights.h5";

/// True for paths Keras 3 saves as a .keras archive (case-insensitive ".keras").
bool is_keras_archive_path(const std::string& path);
/// True for paths Keras 3's save_weights uses (".weights.h5", case-insensitive).
bool is_keras3_weights_path(const std::string& path);

/// True when `path` is an HDF5 file in Keras 3's weights layout (no Keras 2 layer_names or
/// model_weights at its root). False for other files, including unreadable ones.
bool is_keras3_weights_file(const std::string& path);

/// Writes the archive: config.json (Keras 3's serialize_keras_object form, with the
/// compile_config of a compiled model saved with include_optimizer), metadata.json
/// (keras_version, date_saved) and model.weights.h5 (layers/<layer>/vars/<i>, vars, and
/// optimizer/vars/<i> when the optimizer is saved). Replaces `path` atomically.
void save_model_keras(const Model& model, const std::string& path, SaveOptions options = {});

/// True for a directory that Keras 3.6+'s save_model(model, path, zipped=False) wrote: the
/// archive's members as files (config.json, ...), no model.json (Kiln's model directory).
bool is_keras_directory(const std::string& path);

/// Reads a .keras archive written by Kiln or Keras 3 (or such a directory: is_keras_directory):
/// the Sequential or Functional model (layer
/// classes Kiln lacks from options.custom_objects), its weights, and (when options.compile and
/// the file has a compile_config) its compile arguments and optimizer state. IOError naming
/// the file, the member and the problem otherwise.
std::unique_ptr<Model> load_model_keras(const std::string& path, const LoadOptions& options = {});

/// Keras 3's save_weights: model.weights.h5's layout as a plain HDF5 file (the optimizer's
/// variables included once it is compiled, as Keras 3 writes them).
void save_weights_keras3(const Model& model, const std::string& path);
/// Keras 3's load_weights from a .weights.h5 file, a .keras archive or directory: layer by layer, by
/// position (Keras 3 has no by_name). The optimizer's variables in the file are not read.
void load_weights_keras3(Model& model, const std::string& path, LoadWeightsOptions options = {});

}  // namespace kiln::keras
