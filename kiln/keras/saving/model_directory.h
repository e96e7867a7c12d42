// The directory format, in SavedModel's role (S12): <dir>/model.json (architecture, compile
// arguments, checksums) names the data directory of the current save, <dir>/data-<writer>/,
// which holds weights.safetensors and, for compiled models, optimizer.safetensors. Tensors
// are named by variable and hold plain host values, so a directory saved on any device or
// replica count loads on any other.
#pragma once

#include <memory>
#include <string>

#include "kiln/keras/models/model.h"

namespace kiln::keras {

/// File names inside a model directory.
inline constexpr const char* kModelJsonFile = "model.json";
inline constexpr const char* kWeightsFile = "weights.safetensors";
inline constexpr const char* kOptimizerFile = "optimizer.safetensors";

/// Writes the model into `dir` (created if missing), atomically as a whole: the tensor files
/// go to a new data directory, and replacing model.json (which names it and records the
/// files' CRC-32C) is the one switch from the old model to the new. A save killed at any
/// point leaves the previous model loadable. The data of the previous save is kept (readers
/// may still be reading it); older data, and that of dead writers, is deleted.
void save_model_directory(const Model& model, const std::string& dir, SaveOptions options = {});

/// Reads a model directory: the model, its weights by variable name, and (when `compile`)
/// its compile arguments and optimizer state. A save that replaces the model meanwhile makes
/// it read again, so the result is the old model or the new one. IOError naming the file and
/// the problem. Reads the directories of earlier Kilns too (tensor files beside model.json).
std::unique_ptr<Model> load_model_directory(const std::string& dir, bool compile = true);

}  // namespace kiln::keras
