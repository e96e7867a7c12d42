// HostLayer: what a layer that runs on the host, before the compiled step, offers the model
// and the savers (StringLookup, IntegerLookup, TextVectorization).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/dtype.h"
#include "kiln/core/host_tensor.h"

namespace kiln::keras {

class Layer;

/// A model's host layers at its front (Model::host_layers) run on each batch in fit, evaluate
/// and predict (as a map over the input pipeline) and are skipped when the model is traced.
class HostLayer {
 public:
  virtual ~HostLayer() = default;
  /// The layer on a concrete batch.
  virtual HostTensor host_call(const HostTensor& inputs) const = 0;
  /// Keras's compute_output_spec dtype, which a functional graph's KerasTensor carries (and a
  /// .keras config's __keras_tensor__): int64 ids for output_mode "int", float32 otherwise.
  virtual DType output_dtype() const = 0;
  /// A heap copy sharing this layer's tables: what a functional graph holds when the user's
  /// object joins it (a copy made from the config would lose an adapted vocabulary).
  virtual std::shared_ptr<Layer> shared_copy() const = 0;
  /// What Keras 3 keeps in the .keras archive's assets (assets/<layer path>/vocabulary.txt):
  /// the vocabulary, special tokens first, joined by "\n"; nullopt when the config holds it.
  virtual std::optional<std::string> vocabulary_asset() const = 0;
  virtual void load_vocabulary_asset(const std::string& text) = 0;
  /// The config with the vocabulary (and idf_weights) written in, for formats without assets
  /// (.h5): Keras reads it back as a given vocabulary.
  virtual std::string get_config_with_vocabulary() const = 0;
  /// The idf weights Keras 3 saves as the variable "idf_weights" (tf_idf), empty otherwise.
  virtual std::vector<float> saved_idf_weights() const = 0;
  virtual void load_idf_weights(std::vector<float> weights) = 0;
};

}  // namespace kiln::keras
