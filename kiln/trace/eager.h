// Eager execution: an op on concrete tensors outside a trace is built as a one-instruction
// module, compiled once per op text on the eager backend, cached, and run. For tests and small
// scripts, not speed. The backend is chosen per thread with EagerScope (a thread_local stack).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/attrs.h"
#include "kiln/ir/opcode.h"
#include "kiln/runtime/backend.h"

namespace kiln::trace {

/// The backend Kiln uses when none is given (kiln::function, eager ops): the registry's
/// default ("cpu").
std::shared_ptr<runtime::Backend> default_backend();

/// A backend plus the executables compiled for single ops on it (the eager op cache).
class EagerContext {
 public:
  explicit EagerContext(std::shared_ptr<runtime::Backend> backend);
  EagerContext(const EagerContext&) = delete;
  EagerContext& operator=(const EagerContext&) = delete;

  runtime::Backend& backend() const { return *backend_; }
  /// Runs `op` on `operands` (compiling it on first use). `declared` is the result shape for
  /// ops that need one; `source` names the caller in error messages.
  HostTensor run(ir::Opcode op, const std::vector<HostTensor>& operands, const ir::Attrs& attrs,
                 const Shape* declared, const std::string& source);
  /// Number of distinct compiled ops.
  int64_t cache_size() const;

 private:
  std::shared_ptr<runtime::Backend> backend_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<runtime::Executable>> cache_;
};

/// The eager context of this thread: the innermost EagerScope's, else a per-thread default on
/// default_backend().
EagerContext& current_eager_context();

/// Runs eager ops of this thread on `backend` (or a shared `context`) for the scope's lifetime.
class EagerScope {
 public:
  explicit EagerScope(std::shared_ptr<runtime::Backend> backend);
  explicit EagerScope(std::shared_ptr<EagerContext> context);
  ~EagerScope();
  EagerScope(const EagerScope&) = delete;
  EagerScope& operator=(const EagerScope&) = delete;
};

}  // namespace kiln::trace
