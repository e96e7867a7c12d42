// OutputFusionPass: folds bias add and activation epilogues into dot_general/convolution, the
// shape of oneDNN's matmul/convolution post-ops (and cuBLASLt epilogues).
#pragma once

#include <optional>

#include "kiln/compiler/pass.h"
#include "kiln/compiler/target_info.h"

namespace kiln::compiler {

/// Activations an output fusion may end with (oneDNN eltwise post-ops).
enum class EpilogueActivation { kNone, kRelu, kTanh, kLogistic, kExp, kLog, kSqrt, kAbs };

/// What an output fusion body computes: act(contraction(p0, p1) [+ broadcast(p2)]).
struct OutputFusionInfo {
  const ir::Instruction* contraction = nullptr;  // dot_general or convolution on params 0, 1
  bool has_bias = false;                         // param 2, rank 1, along the last result dim
  EpilogueActivation activation = EpilogueActivation::kNone;
};

/// Parses a kOutput fusion body made by OutputFusionPass (the runtime maps it to post-ops);
/// nullopt when the body has another form.
std::optional<OutputFusionInfo> match_output_fusion(const ir::Computation& body);

/// Turns dot_general/convolution -> [add(broadcast_in_dim(bias))] -> [activation] into one
/// kFusion of kind kOutput. The body reads the lhs and rhs as parameters 0 and 1 and the bias
/// (before broadcasting) as parameter 2; the root is the last epilogue op. Relu is matched as
/// max(x, 0), max(0, x), or select(x > 0, x, 0); the other activations are tanh, logistic, exp,
/// log, sqrt, abs.
///
/// Deliberately does not fuse: a contraction (or its bias add) that has other users or is an
/// output, since the unfused value would then be needed too; a bias that is not rank 1 along
/// the last dim; more than one activation, or anything else elementwise (elementwise fusion
/// picks those up); x·x (lhs == rhs). Does nothing when the target does not want output fusion.
///
/// Needs: DCE before it (users lists count only live users). Keeps: every output's value.
class OutputFusionPass final : public Pass {
 public:
  explicit OutputFusionPass(const TargetInfo* target = nullptr) : target_(target) {}
  std::string_view name() const override { return "output-fusion"; }
  bool run(ir::Module& module) override;

 private:
  const TargetInfo* target_;
};

}  // namespace kiln::compiler
