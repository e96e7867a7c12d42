// Internal to keras/saving: the weight lists every format shares (layer weights in Keras's
// order, optimizer state under Keras 2 names) and the file-kind test.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/models/model.h"
#include "kiln/keras/saving/saving.h"

namespace kiln::keras::internal {

/// Keras's _legacy_weights order: trainable then non-trainable (BatchNormalization: gamma,
/// beta, moving_mean, moving_variance).
std::vector<Variable> saved_weights(const Layer& layer);

/// An optimizer variable and the name tf.keras 2.x gives it ("Adam/iter", "Adam/dense/kernel/m").
struct NamedVariable {
  std::string name;
  Variable variable;
};

/// optimizer.weights as tf.keras 2.x's optimizer_v2 lists them: iterations first, then the
/// slots kind by kind (Adam: every m, then every v; RMSprop: rms, momentum, mg), each kind in
/// trainable-variable order. The learning rate is a hyperparameter (in the config), not here.
std::vector<NamedVariable> keras_optimizer_weights(const Optimizer& optimizer);

/// Assigns optimizer state saved by Keras 2.0-2.15 or Kiln (`names` from optimizer_weights'
/// weight_names, `values` their datasets) to `optimizer`, whose slots exist for `trainable`:
/// by the variable names the entries carry, else by Keras 2.0-2.3's positional groups
/// (keras2_optimizer_weights.cpp). Returns "" when all of it was assigned; otherwise assigns
/// nothing and returns why the layout does not map, for the caller's warning.
std::string restore_keras2_optimizer_weights(Optimizer& optimizer, const std::vector<Variable>& trainable,
                                             const std::vector<std::string>& names,
                                             const std::vector<HostTensor>& values);

/// True for paths saved in the Keras HDF5 format: .h5, .hdf5, .keras-h5 (case-insensitive).
bool is_h5_path(const std::string& path);

/// "f32[3,4]" of a variable-less shape, for messages.
std::string shape_text(const Shape& shape);

}  // namespace kiln::keras::internal

namespace kiln::keras::internal {

/// The keys of a Sequential's and a Functional's config in every Keras release (2.2.3+'s
/// build_input_shape, Keras 3's trainable and dtype), and of a Functional's layer entries
/// beyond the serialized layer's (name, inbound_nodes); model_config.cpp.
ConfigKeys sequential_config_keys();
ConfigKeys functional_config_keys();
ConfigKeys functional_layer_entry_keys();

/// Where a model_config comes from, for messages and custom layers.
struct ConfigSource {
  std::string path;           // "" for model_from_json (errors are then ConfigError, not IOError)
  std::string keras_version;  // the file's keras_version attribute; "" when unknown
  const CustomObjects* custom_objects = nullptr;
};

/// The model a Keras model_config JSON describes, in every form Keras 2.0-2.15 wrote
/// (model_config.cpp). IOError "[path] (written by Keras V) model_config: ..." naming the
/// layer and the problem for malformed JSON, other model classes and unknown layers or keys.
std::unique_ptr<Model> model_from_config(const std::string& config_json, const ConfigSource& source);
std::unique_ptr<Model> model_from_config(const std::string& config_json, const std::string& path);

/// Compiles `model` with the options a training_config JSON describes; IOError naming `path`
/// (and `keras_version` when known) when the config is malformed or names an unknown loss,
/// metric or optimizer.
void compile_from_training_config(Model& model, const std::string& config_json, const std::string& path,
                                  const std::string& keras_version = "");

/// Assigns `values[i]` to `vars[i]` after checking every shape (nothing is assigned when one
/// differs): IOError "[path] <where(i)> has f32[2], expected f32[3]".
void assign_checked(const std::vector<Variable>& vars, const std::vector<HostTensor>& values,
                    const std::string& path, const std::vector<std::string>& where);

}  // namespace kiln::keras::internal
