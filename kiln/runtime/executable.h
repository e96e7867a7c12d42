// Executable: a compiled step. One run() executes the whole program over its pre-planned
// arena; arguments are the entry parameters in order.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/core/host_tensor.h"

namespace kiln::ir {
class Module;
}

namespace kiln::runtime {

class Executable {
 public:
  virtual ~Executable() = default;

  /// Runs one step. `arguments` must match the entry parameters' shapes (a ShapeError names the
  /// first that does not). Outputs aliased to a parameter (variable updates) are written into
  /// that argument's storage in place and returned sharing it; other outputs are fresh tensors.
  virtual std::vector<HostTensor> run(std::span<HostTensor> arguments) = 0;
  /// The same, writing the outputs that are not aliased to a parameter into `outputs` (one per
  /// output, of its shape; an undefined entry gets a fresh tensor), so a caller can recycle
  /// output buffers (a dataset map's batches). The default runs and copies.
  virtual std::vector<HostTensor> run_into(std::span<HostTensor> arguments, std::span<HostTensor> outputs);

  /// Peak bytes the memory plan needs: arena + arguments + outputs + constants, and the
  /// nested programs' (while bodies, conditions, branches) arenas and carried buffers.
  virtual int64_t planned_peak_bytes() const = 0;
  /// The part of that peak the step's own values take (the arena: activations, gradients and
  /// temporaries, nested programs' arenas included; not arguments, outputs, constants or a
  /// loop's carried buffers). The whole peak where a backend does not split it.
  virtual int64_t planned_activation_bytes() const { return planned_peak_bytes(); }
  /// Number of kernel launches (steps) one run() makes.
  virtual int kernel_count() const = 0;
  /// The lowered program, one step per line (what KILN_DUMP_IR writes as "lowered").
  virtual std::string describe() const = 0;
  /// One entry per step that runs on the reference evaluator because the backend has no
  /// kernel for its instruction: the op's name, or for a fusion "fusion(<kind>: <body ops>)".
  /// Empty when every step has a real kernel (and always on the reference backend).
  virtual std::vector<std::string> reference_fallbacks() const { return {}; }
  /// The module this program was lowered from, after the compiler's passes (fusions and all):
  /// what TensorBoard's graph shows. Null when the backend keeps none.
  virtual const ir::Module* lowered_module() const { return nullptr; }
  /// Threads the last run used (on the CPU: the thread governor's choice for this program);
  /// 0 before the first run and where a backend has no thread team.
  virtual int last_run_threads() const { return 0; }
};

inline std::vector<HostTensor> Executable::run_into(std::span<HostTensor> arguments, std::span<HostTensor> outputs) {
  std::vector<HostTensor> results = run(arguments);
  for (size_t k = 0; k < results.size() && k < outputs.size(); ++k) {
    if (!outputs[k].defined() || results[k].shares_storage_with(outputs[k])) continue;
    if (!(outputs[k].shape() == results[k].shape()))
      KILN_THROW(ShapeError, "output ", k, " must be ", results[k].shape(), ", the buffer given is ", outputs[k].shape(), ".");
    std::memcpy(outputs[k].raw_data(), results[k].raw_data(), static_cast<size_t>(results[k].byte_size()));
    results[k] = outputs[k];
  }
  return results;
}

}  // namespace kiln::runtime
