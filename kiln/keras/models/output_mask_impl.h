// Internal to keras/models: what a model does with a mask its output still carries.
#pragma once

#include <atomic>
#include <string>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/trace/tensor.h"

namespace kiln::keras::internal {

/// Keras weights the loss and metrics by the output's mask (a model ending in a masked
/// sequence); Kiln's losses do not read masks, so training such a model is an error, and
/// inference warns once that evaluate's loss would not be weighted.
inline void check_output_mask(const Tensor& mask, const std::string& model, bool training) {
  if (!mask.defined()) return;
  if (training)
    KILN_THROW(ValueError, "[", model, "] the model's output carries a mask (from Embedding(mask_zero=true) or ",
               "Masking through return_sequences=true layers); Keras weights the loss by it, which Kiln does not ",
               "build yet. Hint: end the model with a layer that consumes the mask (an RNN with ",
               "return_sequences=false), or drop mask_zero/Masking and weight the loss yourself.");
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    log(LogLevel::kWarning, str_cat("Model '", model, "' outputs a masked sequence: predictions are Keras's, but ",
                                    "evaluate's loss and metrics count the masked steps (Keras weights them by ",
                                    "the mask)."));
}

}  // namespace kiln::keras::internal
