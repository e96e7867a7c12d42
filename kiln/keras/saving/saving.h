// Whole-model loading (keras.models.load_model) for both of Model::save's formats; the
// writers are Model::save, save_weights and the format headers beside this one.
#pragma once

#include <memory>
#include <string>

#include "kiln/keras/models/model.h"

namespace kiln::keras {

struct LoadOptions {
  /// Compile the model from the saved compile arguments and restore the optimizer state.
  /// false loads the architecture and weights only (for inference, or to compile anew).
  bool compile = true;
};

/// Loads a model saved by Model::save (or tf.keras 2.x's model.save("m.h5")): a directory is
/// the directory format, a file the Keras 2 HDF5 format. IOError naming the path and the
/// problem for a missing, corrupt, truncated or mismatched file.
std::unique_ptr<Model> load_model(const std::string& path, LoadOptions options = {});

}  // namespace kiln::keras
