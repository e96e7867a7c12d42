// The options shared by the layers that take nothing beyond Keras's common keyword arguments
// (and, for image layers, data_format), so each small layer need not repeat the struct.
#pragma once

#include <optional>
#include <string>

#include "kiln/core/shape.h"
#include "kiln/keras/mixed_precision/policy.h"

namespace kiln::keras {

/// input_shape, name and dtype: the keyword arguments every Keras layer takes.
struct LayerOptions {
  Dims input_shape = {};  // Keras input_shape= (first layer of a Sequential)
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// The same with Keras's data_format ("channels_last" for data_format=None).
struct ImageLayerOptions {
  std::string data_format = "channels_last";  // or "channels_first" (NCHW / NCL)
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

}  // namespace kiln::keras
