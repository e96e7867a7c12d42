// Policy names and the global policy.
#include "kiln/keras/mixed_precision/policy.h"

#include <mutex>

#include "kiln/core/check.h"

namespace kiln::keras::mixed_precision {
namespace {

struct Known {
  const char* name;
  DType compute, variable;
};

// "mixed_" policies first, then the plain dtypes, as Keras's error message lists them.
constexpr Known kKnown[] = {
    {"mixed_float16", DType::kF16, DType::kF32}, {"mixed_bfloat16", DType::kBF16, DType::kF32},
    {"float32", DType::kF32, DType::kF32},       {"float64", DType::kF64, DType::kF64},
    {"bfloat16", DType::kBF16, DType::kBF16},    {"float16", DType::kF16, DType::kF16},
};

std::mutex& global_mutex() {
  static std::mutex m;
  return m;
}
Policy& global_slot() {
  static Policy p("float32");
  return p;
}

}  // namespace

Policy::Policy(const std::string& name) : name_(name) {
  for (const Known& k : kKnown)
    if (name == k.name) {
      compute_dtype_ = k.compute;
      variable_dtype_ = k.variable;
      return;
    }
  std::string names;
  for (const std::string& n : known_names()) names += (names.empty() ? "'" : ", '") + n + "'";
  KILN_THROW(ValueError, "[mixed_precision.Policy] cannot convert '", name, "' to a mixed precision Policy. Valid "
             "policies are ", names, ". Hint: 'mixed_bfloat16' computes in bfloat16 with float32 variables.");
}

const std::vector<std::string>& Policy::known_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Known& k : kKnown) out.emplace_back(k.name);
    return out;
  }();
  return names;
}

void set_global_policy(const Policy& policy) {
  std::lock_guard<std::mutex> lock(global_mutex());
  global_slot() = policy;
}

Policy global_policy() {
  std::lock_guard<std::mutex> lock(global_mutex());
  return global_slot();
}

}  // namespace kiln::keras::mixed_precision
