// Internal to keras/: the keys a Keras config may hold, one table per class (layer, loss,
// metric, optimizer, initializer, ...), and the check every reader runs first. Keras's
// from_config passes a config's keys to the class's constructor, which raises on one it does
// not take; Kiln does the same, so a damaged or foreign key is an error naming it, never a
// silent default. A table lists every key any Keras release (2.0-2.15, 3.0-3.15) writes for
// the class, plus Kiln's own; to extend a reader, add the key to its table and read it.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::keras::internal {

/// One key a Keras config may hold, and the values Kiln honours in it.
struct ConfigKey {
  std::string_view name;
  /// Empty: Kiln reads the key, or no value of it changes what Kiln computes (an
  /// implementation choice such as `unroll` or `use_cudnn`). Otherwise the JSON text of the
  /// only value Kiln honours, Keras's default ("null", "false", "1"): another value is a
  /// ConfigError naming the key and the value.
  std::string_view only = {};
  /// Why another value is refused, for the message ("" for the generic reason).
  std::string_view why = {};
};

using ConfigKeys = std::span<const ConfigKey>;

/// ConfigError "[where] <what> config has an unexpected key 'k' (= v) ..." for a key of
/// `config` (an object) that is in none of `tables`, and "[where] <what> config key 'k' = v is
/// not supported ..." for a key whose value Kiln does not honour. An earlier table's entry
/// for a name wins over a later one's (so a class's table overrides a shared base table).
void expect_only_keys(const nlohmann::json& config, const std::vector<ConfigKeys>& tables, std::string_view what,
                      std::string_view where);

/// The keys every layer config may hold (Keras's base Layer.get_config): name, trainable,
/// dtype, batch_input_shape, dynamic, and activity_regularizer (null unless the layer's own
/// table reads it).
ConfigKeys layer_base_keys();

/// expect_only_keys for a layer of class `cls` (or "<cls>.from_config"): its own `tables`,
/// then layer_base_keys(); the message names the layer by its config's "name" (or the class).
void expect_layer_keys(const nlohmann::json& config, std::vector<ConfigKeys> tables, std::string_view cls);

/// The keys of a serialized Keras object ({"class_name", "config"} and Keras 2.13+/3's
/// "module", "registered_name", "build_config", "compile_config", 3.0-3.4's "shared_object_id").
ConfigKeys serialized_object_keys();

/// The keys of layers with a kernel that get_kernel_fields reads (Dense, Conv1D, Conv2D,
/// Conv2DTranspose): activation, use_bias, the kernel's and bias's initializer, regularizer
/// and constraint, and activity_regularizer.
ConfigKeys kernel_field_keys();
/// Keras 3's low-rank adaptation and quantization keys (Dense, Embedding, convolutions):
/// accepted at their defaults (lora_rank absent or null, quantization_config null).
ConfigKeys lora_and_quantization_keys();

/// The reason used when a setting Kiln reads nowhere holds another value than its default.
inline constexpr std::string_view kNotBuiltInKiln =
    "Kiln does not build it; remove it from the model in Keras, or build the model in C++ and call load_weights";
/// The same for a regularizer or constraint Kiln does not build on this layer's weights.
inline constexpr std::string_view kNoRegularizerHere =
    "Kiln builds regularizers and constraints on Dense, convolution and recurrent weights only; remove it from the "
    "config (it changes training, not predictions) to load the model";

}  // namespace kiln::keras::internal
