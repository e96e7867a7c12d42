// AutocastScope: while one is open on this thread, reading a floating-point Variable gives its
// value cast to the scope's dtype (Keras 3's AutocastScope). Keras layers open one with their
// policy's compute dtype around call(), so a mixed_bfloat16 Dense multiplies bf16 by bf16
// while its kernel stays f32; the convert's VJP turns the gradient back into f32.
#pragma once

#include <optional>

#include "kiln/core/dtype.h"

namespace kiln::trace {

class AutocastScope {
 public:
  /// `dtype`: what floating variables read as; nullopt reads them as they are stored (a scope
  /// that turns autocasting off inside an outer one).
  explicit AutocastScope(std::optional<DType> dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;
  /// The innermost open scope's dtype on this thread; nullopt when none (or it is off).
  static std::optional<DType> current();
};

}  // namespace kiln::trace
