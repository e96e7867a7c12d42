// Executable: a compiled step. One run() executes the whole program over its pre-planned
// arena; arguments are the entry parameters in order.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"

namespace kiln::runtime {

class Executable {
 public:
  virtual ~Executable() = default;

  /// Runs one step. `arguments` must match the entry parameters' shapes (a ShapeError names the
  /// first that does not). Outputs aliased to a parameter (variable updates) are written into
  /// that argument's storage in place and returned sharing it; other outputs are fresh tensors.
  virtual std::vector<HostTensor> run(std::span<HostTensor> arguments) = 0;

  /// Peak bytes the memory plan needs: arena + arguments + outputs + constants.
  virtual int64_t planned_peak_bytes() const = 0;
  /// Number of kernel launches (steps) one run() makes.
  virtual int kernel_count() const = 0;
  /// The lowered program, one step per line (what KILN_DUMP_IR writes as "lowered").
  virtual std::string describe() const = 0;
};

}  // namespace kiln::runtime
