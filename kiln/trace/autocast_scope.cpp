// The per-thread stack of autocast dtypes.
#include "kiln/trace/autocast_scope.h"

#include <vector>

namespace kiln::trace {
namespace {
thread_local std::vector<std::optional<DType>> t_autocast;
}  // namespace

AutocastScope::AutocastScope(std::optional<DType> dtype) { t_autocast.push_back(dtype); }
AutocastScope::~AutocastScope() { t_autocast.pop_back(); }

std::optional<DType> AutocastScope::current() {
  return t_autocast.empty() ? std::nullopt : t_autocast.back();
}

}  // namespace kiln::trace
