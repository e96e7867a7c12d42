// ConvolutionKernel: convolution (with a fused bias + activation epilogue when it comes from an
// output fusion), conv_backward_input and conv_backward_filter on oneDNN's convolution
// primitives. Kiln's NHWC activations and HWIO filters are given to oneDNN as they are; the
// filter is reordered into the layout the primitive prefers on each run (it is small).
// bf16/f16 operands are widened to f32 around the call.
#pragma once

#include <memory>
#include <string>

#include "kiln/ir/instruction.h"
#include "kiln/runtime/cpu/onednn_matmul.h"

namespace kiln::cpu {

class ConvolutionImpl;

class ConvolutionKernel {
 public:
  /// `inst` is a convolution, conv_backward_input, conv_backward_filter, or a kOutput fusion
  /// whose body is convolution(p0, p1) [+ bias p2] [-> activation]. Returns nullptr when
  /// oneDNN cannot run it (the caller falls back to the reference kernel).
  /// bf16/f16 operands run on oneDNN's 16-bit kernel or in f32 from the 16-bit storage (a
  /// batch tile at a time), as `options` choose: by timing both once per shape (kAuto, where
  /// both exist), or forced. `scratch`: where the f32 path keeps its tiles (null: its own).
  static std::unique_ptr<ConvolutionKernel> create(const ir::Instruction& inst, const MatmulOptions& options = {},
                                                   std::shared_ptr<WidenScratch> scratch = nullptr);
  /// Whether the convolution `conv` (any of the three) only pads: oneDNN's convolutions take
  /// no negative padding (a crop of the input).
  static bool takes_padding(const ir::Instruction& conv);
  ~ConvolutionKernel();
  ConvolutionKernel(const ConvolutionKernel&) = delete;
  ConvolutionKernel& operator=(const ConvolutionKernel&) = delete;

  /// `in` are `inst`'s operands in order, `out` its result.
  void run(const void* const* in, void* out) const;
  /// "convolution+bias+relu", "conv_backward_input", ... for step dumps.
  const std::string& label() const;

 private:
  explicit ConvolutionKernel(std::unique_ptr<ConvolutionImpl> impl);
  std::unique_ptr<ConvolutionImpl> impl_;
};

}  // namespace kiln::cpu
