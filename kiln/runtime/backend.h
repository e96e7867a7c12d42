// Backend: a kind of device that compiles modules into Executables. Backends are created
// explicitly through backend_registry.h, never by self-registering statics.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kiln/compiler/target_info.h"
#include "kiln/core/debug_options.h"
#include "kiln/ir/module.h"
#include "kiln/runtime/collectives.h"
#include "kiln/runtime/device.h"
#include "kiln/runtime/executable.h"

namespace kiln::runtime {

struct CompileOptions {
  /// Dump folder, disabled passes, IR verification, memory-limit override.
  DebugOptions debug = DebugOptions::global();
  /// Names the program in logs and dumps ("train_step").
  std::string label;
  /// Where all_reduce instructions meet the other replicas; null (or one replica) makes
  /// all_reduce the identity.
  std::shared_ptr<Collectives> collectives;
  /// This program's replica id within its process (passed to collectives).
  int replica_id = 0;
  /// Contractions sum in an order independent of the batch size, so each sample's results
  /// have the same bits whatever batch it is in (docs/numerics.md). debug.batch_invariant,
  /// when set, overrides it.
  bool batch_invariant = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual const compiler::TargetInfo& target_info() const = 0;
  /// Where this backend's programs run and their buffers live (cpu:0; guarded_cpu:0 under
  /// KILN_DEVICE=guarded_cpu). Replicas of one backend share it, each with its own buffers.
  virtual Device& device() = 0;
  /// Optimizes and lowers `module`. Throws CompileError listing every op this backend cannot
  /// run, and OutOfMemoryError when the planned peak exceeds the device's memory, before
  /// anything runs.
  virtual std::unique_ptr<Executable> compile(std::unique_ptr<ir::Module> module,
                                              const CompileOptions& options) = 0;
  /// Steps that every compile() so far lowered to the reference evaluator, counted by the
  /// names of Executable::reference_fallbacks. A backend warns once per name (at the default
  /// log level) the first time it falls back on it.
  virtual std::map<std::string, int64_t> reference_fallback_counts() const { return {}; }
  /// Whether compile() builds CompileOptions::batch_invariant programs; a backend without
  /// such kernels throws CompileError when asked for one (Model::predict's default follows this).
  virtual bool has_batch_invariant_kernels() const { return false; }
};

}  // namespace kiln::runtime
