// Internal to keras/saving: Keras 3's config.json forms (serialize_keras_object: "module",
// "class_name", "config", "registered_name", "build_config", "compile_config", DTypePolicy
// dicts, Functional nodes as {"args", "kwargs"} of __keras_tensor__ objects) both ways, onto
// the Keras 2 form that Kiln's models and training_config readers take.
#pragma once

#include <string>
#include <vector>

#include "kiln/keras/models/model.h"
#include "kiln/keras/saving/saving.h"

namespace kiln::keras::internal {

/// config.json of `model` as Keras 3's saving_lib writes it; with its compile_config when
/// `include_compile` and the model is compiled.
std::string keras3_config_json(const Model& model, bool include_compile);

/// A Keras 3 config.json turned into Kiln's (Keras 2) forms.
struct Keras2Configs {
  std::string model_config;     ///< {"class_name": "Sequential"|"Functional", "config": ...}
  std::string training_config;  ///< "" when the file has no (or a null) compile_config
};

/// Reads a Keras 3 config.json (its compile_config only when options.compile; layer classes of
/// options.custom_objects pass unchecked). A class, layer, key or value Kiln cannot honor is
/// an IOError "[path] ... (written by Keras <keras_version>) ..." naming the layer and key,
/// with a hint.
Keras2Configs keras2_configs_from_keras3(const std::string& config_json, const std::string& path,
                                         const std::string& keras_version, const LoadOptions& options);

/// The weight-store path of each of model.layers() in Keras 3's _save_container_state naming:
/// "layers/" + the snake_case class name, numbered from the second of a class ("layers/dense",
/// "layers/dense_1"). Functional models list their InputLayers ("layers/input_layer").
std::vector<std::string> keras3_layer_paths(const Model& model);

/// optimizer.variables as Keras 3 orders them: iterations, the learning rate (unless a
/// schedule drives it), then the slots as Keras 3's build creates them. Only RMSprop differs
/// from Kiln's creation order (every velocity, then every momentum, then every
/// average_gradient); the others create theirs per variable in Keras 3's order (Adam: momentum
/// and velocity; Adadelta, Adamax, Ftrl: their two kinds; Nadam's u_product after the slots).
std::vector<Variable> keras3_optimizer_variables(const Optimizer& optimizer);

}  // namespace kiln::keras::internal
