// The directory format, in SavedModel's role (S12): <dir>/model.json (architecture, compile
// arguments, checksums), weights.safetensors and, for compiled models, optimizer.safetensors.
// Tensors are named by variable and hold plain host values, so a directory saved on any
// device or replica count loads on any other.
#pragma once

#include <memory>
#include <string>

#include "kiln/keras/models/model.h"

namespace kiln::keras {

/// File names inside a model directory.
inline constexpr const char* kModelJsonFile = "model.json";
inline constexpr const char* kWeightsFile = "weights.safetensors";
inline constexpr const char* kOptimizerFile = "optimizer.safetensors";

/// Writes the model into `dir` (created if missing). Each file is replaced atomically and
/// model.json, written last, records the CRC-32C of the others: a save interrupted midway
/// is then an IOError on load, never a silent mix of two saves.
void save_model_directory(const Model& model, const std::string& dir, SaveOptions options = {});

/// Reads a model directory: the model, its weights by variable name, and (when `compile`)
/// its compile arguments and optimizer state. IOError naming the file and the problem.
std::unique_ptr<Model> load_model_directory(const std::string& dir, bool compile = true);

}  // namespace kiln::keras
