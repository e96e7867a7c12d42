// ElementwiseFusionPass: groups elementwise DAGs into loop kernels (kFusion kLoop).
#pragma once

#include "kiln/compiler/pass.h"
#include "kiln/compiler/target_info.h"

namespace kiln::compiler {

/// Walking from the outputs towards the inputs, each elementwise instruction not yet fused
/// roots a kFusion of kind kLoop and absorbs every loop-fusible producer (elementwise ops,
/// convert, broadcast_in_dim, scalar constants, iota) whose users are all inside it; the
/// result is a maximal single-output DAG. Broadcasts, scalar constants and iota are cheap and
/// are duplicated into every fusion that reads them. A slice is read in place: it joins as an
/// offset and strides of the kernel's loads (duplicated where other users need it too), and
/// the value it slices stays outside (the LSTM's four gate slices of one matmul result cost
/// no kernel and no copy). A producer with users in two fusions (or
/// outside) is not duplicated: it becomes the root of its own fusion, a boundary the value
/// crosses through memory.
///
/// Deliberately does not: make multi-output fusions; recompute expensive producers; fuse
/// through reshape, transpose, reduces or contractions; wrap a lone elementwise op that
/// absorbs nothing (it would save no memory traffic: the runtime runs it as is, and a fusion of
/// one op is still valid IR, just not produced here). Does nothing when the target does not
/// want loop fusion.
///
/// Needs: DCE before it; runs after output and reduction fusion so those take their
/// epilogues and producers first. Keeps: every output's value.
class ElementwiseFusionPass final : public Pass {
 public:
  explicit ElementwiseFusionPass(const TargetInfo* target = nullptr) : target_(target) {}
  std::string_view name() const override { return "elementwise-fusion"; }
  bool run(ir::Module& module) override;

 private:
  const TargetInfo* target_;
};

}  // namespace kiln::compiler
