// Keras's layer_test for Kiln (issue 34 item 6): one call puts a layer through everything a
// layer owes the catalogue: built again from its config (and the config a fixed point), the
// output shape compute_output_shape promises, save and load in .h5 and .keras with the same
// predictions, its training-mode behaviour against inference mode, the mixed_bfloat16 policy,
// and finite-difference gradients in f64. A case states each exemption and why, so an exemption
// reads as a decision, not a gap.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/keras/layers/layer.h"

namespace kiln::keras::testing {

/// What training=true does to the layer's output, against inference mode on the same input.
enum class TrainingMode {
  kSame,      // bit for bit the inference output (most layers)
  kRandom,    // random in training (Dropout, noise, Random*): differs from inference mode
  kDiffers,   // deterministic but different (BatchNormalization's batch statistics)
};

struct LayerCase {
  /// A fresh, unbuilt layer under the global policy (the harness sets each check's policy).
  std::function<LayerHandle()> make;
  /// The inputs' dims, batch first; several for merge and attention layers.
  std::vector<Dims> inputs;
  /// Integer inputs (ids, tokens, categories) are drawn in [0, int_high); float ones in [-1, 1]
  /// (or [float_low, float_high]).
  DType input_dtype = DType::kF32;
  int64_t int_high = 0;
  double float_low = -1.0;
  double float_high = 1.0;
  TrainingMode training = TrainingMode::kSame;
  /// Inference mode returns the input unchanged (Dropout and the random augmentations).
  bool identity_at_inference = false;
  /// The output dtype under mixed_bfloat16; bf16 for layers that compute in the compute dtype.
  DType mixed_output = DType::kBF16;
  /// |mixed - f32| <= mixed_tolerance * (1 + |f32|).
  double mixed_tolerance = 0.03;
  /// Why gradients are not checked (integer inputs, a non-differentiable output); empty: they are.
  std::string no_gradients_because = "";
  /// Why the layer is not saved in a model (empty: it is).
  std::string no_saving_because = "";
  /// Why the layer runs on the host only, outside models and traced calls (its config is all
  /// the harness checks; its own tests check its values). Empty: it is an ordinary layer.
  std::string host_only_because = "";
  /// The Keras weight names the .h5 file lists for the layer ("dense/kernel:0"); empty: not checked.
  std::vector<std::string> h5_weight_names = {};
};

/// Runs every check on `c`'s layer; failures are gtest failures naming the check.
void layer_test(const LayerCase& c);

}  // namespace kiln::keras::testing
