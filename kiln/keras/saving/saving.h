// Whole-model loading (keras.models.load_model) for both of Model::save's formats, and the
// architecture readers model_from_json / model_from_config / read_model_config. The writers
// are Model::save, save_weights and the format headers beside this one.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "kiln/keras/models/model.h"

namespace kiln::keras {

/// Builds a layer of a class Kiln does not have from its Keras config JSON (the "config"
/// object of the layer's entry in model_config): Keras's custom_objects, for layers.
///   {.custom_objects = {{"MyDense", [](const std::string& c) { return LayerHandle(MyDense::from_config(c)); }}}}
using LayerFactory = std::function<LayerHandle(const std::string& config_json)>;
/// Class name -> factory. A name here wins over Kiln's own class of that name.
using CustomObjects = std::map<std::string, LayerFactory>;

struct LoadOptions {
  /// Compile the model from the saved compile arguments and restore the optimizer state.
  /// false loads the architecture and weights only (for inference, or to compile anew).
  bool compile = true;
  /// Factories for layer classes Kiln does not know, by Keras class name.
  CustomObjects custom_objects = {};
};

/// True when the file at `path` starts with HDF5's signature. tf.keras 2.x before 2.12 saved
/// model.save("m.keras") as HDF5; load_model (as tf.keras 2) and `kiln inspect` read such a
/// .keras file as .h5.
bool has_hdf5_signature(const std::string& path);

/// Loads a model saved by Model::save or by Keras 2.0-2.15's model.save("m.h5"): a directory
/// is the directory format, a file the Keras 2 HDF5 format. Every model_config form those
/// Keras versions wrote is read (Sequential as a bare layer list or with build_input_shape,
/// Functional/Model, initializers/regularizers/constraints as names or class dicts). Saved
/// optimizer state is restored when its layout maps onto the optimizer; otherwise a one-line
/// warning names the file and what was skipped, and the optimizer starts fresh (as Keras
/// does). IOError naming the path, the Keras version that wrote it and the problem for a
/// missing, corrupt, truncated or unreadable file.
std::unique_ptr<Model> load_model(const std::string& path, LoadOptions options = {});

/// The model a Keras architecture JSON describes (model.to_json(), or an .h5 file's
/// model_config): Sequential, Functional or Model by its class_name, in every form Keras
/// 2.0-2.15 wrote; unbuilt weights are initialized fresh (load them with load_weights).
/// ConfigError naming the layer and key Kiln does not know.
std::unique_ptr<Model> model_from_json(const std::string& json, const CustomObjects& custom_objects = {});
/// Keras's model_from_config: the same from the {"class_name": ..., "config": ...} text.
std::unique_ptr<Model> model_from_config(const std::string& config_json, const CustomObjects& custom_objects = {});

/// The model_config JSON text of a Keras .h5 model file (its architecture), without loading
/// anything else. IOError when the file has none (a weights-only file).
std::string read_model_config(const std::string& path);

}  // namespace kiln::keras
