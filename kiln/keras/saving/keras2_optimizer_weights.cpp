// Saved optimizer state -> the optimizer's variables, for every optimizer_weights layout Keras
// 2.0-2.15 wrote (learned from each release's optimizers.py / optimizer_v2 / optimizer.py):
//   Keras 2.0-2.3 (keras/optimizers.py, positional, names like training/Adam/Variable_3:0 or
//     m_0:0): [iterations] + one group per slot kind, each group in trainable-variable order.
//     SGD [it] + moments; Adam [it] + ms + vs (+ vhats, 2.1.3+: shape (1,) without amsgrad);
//     RMSprop, Adagrad: accumulators (2.3: [it] + ...); Adadelta: accumulators + delta
//     accumulators (2.3: [it] + ...); Adamax [it] + ms + us; Nadam [it] + ms + vs.
//   tf.keras optimizer_v2 (TF 2.0-2.10, and legacy optimizers after): Adam/iter:0, then
//     <opt>/<variable>/<slot>:0 (Adam/dense/kernel/m:0), slot kind by kind.
//   Keras 2.11-2.15 optimizers: iteration:0, then <opt>/<slot>/<variable>:0 (Adam/m/dense/kernel:0),
//     in each optimizer's build order (Adam interleaves m and v per variable).
//   Nadam's momentum product (optimizer_v2 momentum_cache, 2.3's m_schedule) -> u_product;
//     where the file lacks it (Keras 2.0-2.2's [it] + ms + vs, 2.11-2.15's new Nadam), the
//     product of the schedule over the saved iterations.
// Names are matched where they carry the variable (the last two), positions otherwise.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "kiln/core/check.h"
#include "kiln/keras/optimizers/loss_scale_optimizer.h"
#include "kiln/keras/optimizers/nadam.h"
#include "kiln/keras/saving/saving_impl.h"

namespace kiln::keras::internal {
namespace {

// A Keras slot kind of any era -> the Kiln (Keras 3) slot names it may be, in order.
std::vector<std::string> kiln_kinds(const std::string& keras_kind) {
  static const std::map<std::string, std::vector<std::string>> kKinds = {
      {"m", {"m", "momentum"}},  // Adam's first moment; SGD's momentum in Keras 2.11+
      {"v", {"v", "velocity", "u"}},  // tf.keras's Adamax names its infinity norm v (Kiln's u)
      {"vhat", {"vhat", "velocity_hat"}},
      {"rms", {"velocity"}},
      {"mg", {"average_gradient"}},
      {"accum_grad", {"accumulated_grad"}},
      {"accum_var", {"accumulated_delta_var"}},
      {"u", {"u", "norm"}},
  };
  std::vector<std::string> out = {keras_kind};
  if (auto it = kKinds.find(keras_kind); it != kKinds.end())
    for (const std::string& k : it->second)
      if (k != keras_kind) out.push_back(k);
  return out;
}

// Keras 2.0-2.3's slot groups per optimizer class, in self.weights order (after iterations).
const std::vector<std::string>* legacy_groups(const std::string& cls) {
  static const std::map<std::string, std::vector<std::string>> kGroups = {
      {"SGD", {"momentum"}},
      {"Adam", {"m", "v", "vhat"}},
      {"RMSprop", {"velocity"}},
      {"Adagrad", {"accumulator"}},
      {"Adadelta", {"accumulated_grad", "accumulated_delta_var"}},
      {"Adamax", {"m", "u"}},
      {"Nadam", {"m", "v"}},
  };
  auto it = kGroups.find(cls);
  return it == kGroups.end() ? nullptr : &it->second;
}

bool is_iterations(const std::string& name) {
  const std::string last = name.substr(name.rfind('/') + 1);
  return last == "iter" || last == "iterations" || last == "iteration";
}

// The optimizer's slots by (variable name, kind): Kiln names them "<optimizer>/<var>/<kind>".
// Other optimizer variables ("<optimizer>/u_product", Nadam's) are extras, by their last name.
struct SlotTable {
  std::map<std::pair<std::string, std::string>, Variable> slots;
  std::set<std::string> kinds;
  std::map<std::string, Variable> extras;

  const Variable* find(const std::string& var, const std::string& keras_kind) const {
    for (const std::string& k : kiln_kinds(keras_kind))
      if (auto it = slots.find({var, k}); it != slots.end()) return &it->second;
    return nullptr;
  }
  bool has_kind(const std::string& keras_kind) const {
    for (const std::string& k : kiln_kinds(keras_kind))
      if (kinds.count(k)) return true;
    return false;
  }
  // The extra a saved name stands for: Keras 2's Nadam momentum cache (optimizer_v2's
  // momentum_cache, 2.3's m_schedule) is the product Keras 3 and Kiln call u_product.
  const Variable* extra(const std::string& saved_name) const {
    std::string last = saved_name.substr(saved_name.rfind('/') + 1);
    if (last == "momentum_cache" || last == "m_schedule") last = "u_product";
    auto it = extras.find(last);
    return it == extras.end() ? nullptr : &it->second;
  }
};

SlotTable slot_table(const Optimizer& optimizer, const std::vector<Variable>& trainable) {
  SlotTable t;
  const std::vector<Variable> all = optimizer.variables();  // iterations, learning rate, the rest
  // A LossScaleOptimizer's slots are its inner optimizer's ("Adam/dense/kernel/m"); its own
  // dynamic_scale and step_counter are extras.
  const auto* lso = dynamic_cast<const LossScaleOptimizer*>(&optimizer);
  const std::string prefix = optimizer.name() + "/";
  const std::string inner_prefix = lso != nullptr ? lso->inner_optimizer().name() + "/" : prefix;
  for (size_t i = 2; i < all.size(); ++i) {
    const std::string& n = all[i].name();
    const std::string rest = n.rfind(prefix, 0) == 0         ? n.substr(prefix.size())
                             : n.rfind(inner_prefix, 0) == 0 ? n.substr(inner_prefix.size())
                                                             : n;
    const size_t cut = rest.rfind('/');
    const std::string var = cut == std::string::npos ? "" : rest.substr(0, cut);
    const bool is_slot = std::any_of(trainable.begin(), trainable.end(), [&](const Variable& v) { return v.name() == var; });
    if (!is_slot) {
      t.extras.emplace(rest.substr(cut == std::string::npos ? 0 : cut + 1), all[i]);
      continue;
    }
    t.slots.emplace(std::pair{var, rest.substr(cut + 1)}, all[i]);
    t.kinds.insert(rest.substr(cut + 1));
  }
  return t;
}

// (variable, kind) of a name that carries them: optimizer_v2's .../<var>/<kind> or 2.11+'s
// .../<kind>/<var>, for the longest variable name that fits.
std::optional<std::pair<std::string, std::string>> named_slot(const std::string& name,
                                                             const std::vector<Variable>& trainable) {
  std::optional<std::pair<std::string, std::string>> best;
  size_t best_len = 0;
  for (const Variable& v : trainable) {
    const std::string& var = v.name();
    if (var.size() <= best_len) continue;
    // .../<var>/<kind>
    if (size_t at = name.rfind("/" + var + "/"); at != std::string::npos) {
      const std::string kind = name.substr(at + var.size() + 2);
      if (!kind.empty() && kind.find('/') == std::string::npos) {
        best = {var, kind};
        best_len = var.size();
        continue;
      }
    }
    // .../<kind>/<var>
    if (name.size() > var.size() + 1 && name.ends_with("/" + var)) {
      const std::string head = name.substr(0, name.size() - var.size() - 1);
      best = {var, head.substr(head.rfind('/') + 1)};
      best_len = var.size();
    }
  }
  return best;
}

std::string join_names(const std::vector<std::string>& names, size_t limit = 3) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > limit) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

}  // namespace

std::string restore_keras2_optimizer_weights(Optimizer& optimizer, const std::vector<Variable>& trainable,
                                             const std::vector<std::string>& file_names,
                                             const std::vector<HostTensor>& values) {
  KILN_CHECK(file_names.size() == values.size());
  std::vector<std::string> names;
  for (std::string n : file_names) names.push_back(n.ends_with(":0") ? n.substr(0, n.size() - 2) : n);
  const SlotTable table = slot_table(optimizer, trainable);
  // The class whose slot layout the file holds: a LossScaleOptimizer's inner one.
  const auto* lso = dynamic_cast<const LossScaleOptimizer*>(&optimizer);
  const std::string cls = lso != nullptr ? lso->inner_optimizer().class_name() : optimizer.class_name();

  std::vector<Variable> vars;
  std::vector<HostTensor> picked;
  std::set<const void*> covered;
  auto take = [&](const Variable& var, const HostTensor& value, const std::string& saved) -> std::string {
    if (value.dims() != var.shape().dims())
      return str_cat(saved, " is ", shape_text(value.shape()), " but ", var.name(), " is ", shape_text(var.shape()));
    vars.push_back(var);
    picked.push_back(value.dtype() == var.dtype() ? value : value.astype(var.dtype()));
    covered.insert(var.state().get());
    return "";
  };

  std::vector<size_t> rest;  // indices of the per-variable slot weights
  for (size_t i = 0; i < names.size(); ++i) {
    if (const Variable* extra = table.extra(names[i]); extra != nullptr && !is_iterations(names[i])) {
      const HostTensor& v = values[i];  // a scalar saved as () or (1,)
      const bool same_size = v.num_elements() == extra->shape().num_elements();
      if (std::string why = take(*extra, same_size ? v.reshape(extra->shape().dims()) : v, names[i]); !why.empty())
        return why;
      continue;
    }
    if (!is_iterations(names[i])) {
      rest.push_back(i);
      continue;
    }
    if (values[i].num_elements() != 1) return str_cat(names[i], " is ", shape_text(values[i].shape()), ", not a scalar");
    vars.push_back(optimizer.iterations());
    picked.push_back(values[i].astype(DType::kF64).astype(optimizer.iterations().dtype()).reshape({}));
  }

  // By name when every weight names its variable (optimizer_v2, Keras 2.11+, Kiln).
  bool by_name = !rest.empty();
  for (size_t i : rest) by_name = by_name && named_slot(names[i], trainable).has_value();
  if (by_name) {
    for (size_t i : rest) {
      const auto [var, kind] = *named_slot(names[i], trainable);
      const Variable* slot = table.find(var, kind);
      if (slot == nullptr) {
        // SGD's momentum buffers are unused without momentum (Keras 2.11+ keeps them).
        if (cls == "SGD" && !table.has_kind(kind) && (kind == "m" || kind == "momentum")) continue;
        return str_cat(names[i], " has no counterpart in Kiln's ", cls, " (it has no '", kind, "' slot for ", var, ")");
      }
      if (std::string why = take(*slot, values[i], names[i]); !why.empty()) return why;
    }
  } else if (!rest.empty()) {
    // Keras 2.0-2.3: groups of one slot kind each, in trainable-variable order.
    const std::vector<std::string>* groups = legacy_groups(cls);
    const size_t n = trainable.size();
    if (groups == nullptr) return str_cat("Kiln does not know Keras 2.0-2.3's weight order for ", cls);
    if (n == 0 || rest.size() % n != 0 || rest.size() / n > groups->size())
      return str_cat(rest.size(), " slot weights (", join_names(names), ") do not form ", cls, "'s groups of ", n,
                     " (one per trainable weight)");
    for (size_t g = 0; g < rest.size() / n; ++g) {
      const std::string& kind = (*groups)[g];
      if (!table.has_kind(kind)) {
        // Exact to drop: Adam's vhats without amsgrad are zeros(1); SGD's moments without momentum.
        const bool placeholder = kind == "vhat" && std::all_of(rest.begin() + long(g * n), rest.begin() + long((g + 1) * n),
                                                               [&](size_t i) { return values[i].num_elements() == 1; });
        if (placeholder || (cls == "SGD" && kind == "momentum")) continue;
        return str_cat("the saved ", cls, " has '", kind, "' slots that Kiln's ", cls, " lacks");
      }
      for (size_t k = 0; k < n; ++k) {
        const size_t i = rest[g * n + k];
        const Variable* slot = table.find(trainable[k].name(), kind);
        if (slot == nullptr) return str_cat("no '", kind, "' slot for ", trainable[k].name());
        if (std::string why = take(*slot, values[i], names[i]); !why.empty()) return why;
      }
    }
  }
  // Keras 2.0-2.2's Nadam kept m_schedule out of its weights, and tf.keras 2.11-2.15's new
  // Nadam keeps _u_product out of optimizer.variables(): both restart it at 1 on load (Keras
  // 2.3's Nadam.set_weights inserts 1). The product depends on the step count alone, so Kiln
  // restores the value the uninterrupted run had, u_1 ... u_iterations.
  if (const auto* nadam = dynamic_cast<const Nadam*>(&optimizer); nadam != nullptr && !rest.empty())
    if (auto it = table.extras.find("u_product"); it != table.extras.end() && !covered.count(it->second.state().get())) {
      int64_t steps = 0;
      for (size_t i = 0; i < vars.size(); ++i)
        if (vars[i].state() == optimizer.iterations().state()) steps = picked[i].astype(DType::kI64).to_vector<int64_t>()[0];
      const HostTensor product = HostTensor::scalar<float>(nadam->u_product_after(steps));
      if (std::string why = take(it->second, product, "the momentum-schedule product"); !why.empty()) return why;
    }
  for (const auto& [key, slot] : table.slots)
    if (!covered.count(slot.state().get()))
      return str_cat("the file has no '", key.second, "' value for ", key.first, " (", names.size(),
                     " saved weights: ", join_names(names), ")");
  for (const auto& [name, extra] : table.extras)
    if (!covered.count(extra.state().get()))
      return str_cat("the file has no value for ", cls, "'s ", name, " (", names.size(), " saved weights: ",
                     join_names(names), ")");
  for (size_t i = 0; i < vars.size(); ++i) vars[i].assign(Tensor(picked[i]));
  return "";
}

}  // namespace kiln::keras::internal
