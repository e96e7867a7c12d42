// The weight lists, names and config readers the saving formats share.
#include "kiln/keras/saving/saving_impl.h"

#include <algorithm>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/keras/saving/training_config.h"

namespace kiln::keras::internal {
namespace {

// Kiln slot names are tf.keras 2.11+'s; tf.keras 2.x's legacy optimizer_v2 classes call them
// (and order them) so: kind by kind (every m, then every v), or per variable in creation
// order (Ftrl's accumulator, linear).
struct SlotKind {
  const char* kiln;
  const char* keras2;
};
struct Keras2Layout {
  std::vector<SlotKind> kinds;
  bool kind_by_kind = true;
  /// Optimizer variables of no model variable ("<optimizer>/<kiln>"), written right after
  /// iterations as "<optimizer>/<keras2>" (optimizer_v2's Nadam creates momentum_cache first).
  std::vector<SlotKind> extras = {};
};
// Null for a class without a legacy form (or a user's optimizer).
const Keras2Layout* keras2_layout(const std::string& optimizer_class) {
  static const std::map<std::string, Keras2Layout> kLayouts = {
      {"Adadelta", {{{"accumulated_grad", "accum_grad"}, {"accumulated_delta_var", "accum_var"}}}},
      {"Adagrad", {{{"accumulator", "accumulator"}}}},
      {"Adam", {{{"m", "m"}, {"v", "v"}}}},
      {"Adamax", {{{"m", "m"}, {"u", "v"}}}},
      {"Ftrl", {{{"accumulator", "accumulator"}, {"linear", "linear"}}, /*kind_by_kind=*/false}},
      {"Nadam", {{{"m", "m"}, {"v", "v"}}, /*kind_by_kind=*/true, {{"u_product", "momentum_cache"}}}},
      {"SGD", {{{"momentum", "momentum"}}}},
      {"RMSprop", {{{"velocity", "rms"}, {"momentum", "momentum"}, {"average_gradient", "mg"}}}},
  };
  auto it = kLayouts.find(optimizer_class);
  return it == kLayouts.end() ? nullptr : &it->second;
}

std::string slot_kind(const std::string& slot_name) { return slot_name.substr(slot_name.rfind('/') + 1); }

}  // namespace

std::vector<Variable> saved_weights(const Layer& layer) {
  std::vector<Variable> out = layer.trainable_weights();
  for (const Variable& v : layer.non_trainable_weights()) out.push_back(v);
  return out;
}

std::vector<NamedVariable> keras_optimizer_weights(const Optimizer& optimizer) {
  std::vector<Variable> all = optimizer.variables();  // iterations, learning rate, slots
  std::vector<Variable> slots(all.begin() + 2, all.end());
  const std::string& name = optimizer.name();
  std::vector<NamedVariable> out;
  const Keras2Layout* layout = keras2_layout(optimizer.class_name());
  if (!optimizer.has_keras2_legacy_form() || layout == nullptr) {  // tf.keras 2.11+'s new optimizers: creation order
    out.push_back({name + "/iteration", optimizer.iterations()});
    for (const Variable& s : slots) out.push_back({s.name(), s});
    return out;
  }
  // The Keras 2 name of a slot of `kind`: its Kiln name with the kind's Keras 2 spelling.
  auto keras2_name = [](const Variable& s, const SlotKind& kind) {
    std::string keras_name = s.name();
    keras_name.replace(keras_name.size() - std::string(kind.kiln).size(), std::string::npos, kind.keras2);
    return keras_name;
  };
  out.push_back({name + "/iter", optimizer.iterations()});
  size_t extras = 0;
  for (const SlotKind& extra : layout->extras)
    for (const Variable& s : slots)
      if (s.name() == name + "/" + extra.kiln) {
        out.push_back({name + "/" + extra.keras2, s});
        ++extras;
      }
  if (layout->kind_by_kind) {
    for (const SlotKind& kind : layout->kinds)
      for (const Variable& s : slots)
        if (slot_kind(s.name()) == kind.kiln) out.push_back({keras2_name(s, kind), s});
  } else {
    for (const Variable& s : slots)
      for (const SlotKind& kind : layout->kinds)
        if (slot_kind(s.name()) == kind.kiln) out.push_back({keras2_name(s, kind), s});
  }
  KILN_CHECK(out.size() == slots.size() + 1, "every slot of ", name, " has a Keras 2 kind (", extras, " extras)");
  return out;
}

bool is_h5_path(const std::string& path) {
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* ext : {".h5", ".hdf5", ".keras-h5"})
    if (lower.size() > std::string(ext).size() && lower.ends_with(ext)) return true;
  return false;
}

std::string shape_text(const Shape& shape) {
  std::ostringstream s;
  s << shape;
  return s.str();
}

}  // namespace kiln::keras::internal

namespace kiln::keras::internal {

// ---- model_config and training_config (shared by the .h5 and directory formats) ----------

void compile_from_training_config(Model& model, const std::string& config_json, const std::string& path,
                                  const std::string& keras_version) {
  CompileOptions options;
  try {
    options = compile_options_from_training_config(config_json);
  } catch (const Error& e) {
    KILN_THROW(IOError, "[", path, "]", keras_version.empty() ? "" : " (written by Keras " + keras_version + ")",
               " training_config: ", e.what(), " (load_model(path, {.compile = false}) loads the model without it.)");
  }
  model.compile(std::move(options));
}

void assign_checked(const std::vector<Variable>& vars, const std::vector<HostTensor>& values,
                    const std::string& path, const std::vector<std::string>& where) {
  KILN_CHECK(vars.size() == values.size() && vars.size() == where.size());
  for (size_t i = 0; i < vars.size(); ++i)
    if (values[i].dims() != vars[i].shape().dims())
      KILN_THROW(IOError, "[", path, "] ", where[i], " has shape ", shape_text(values[i].shape()), ", but ",
                 vars[i].name(), " is ", shape_text(vars[i].shape()),
                 ". Hint: load into the architecture the file was saved from.");
  for (size_t i = 0; i < vars.size(); ++i) {
    // Kiln stores bf16/f16 variables as f32; any other dtype change (a kernel stored as i32,
    // f64 or f16) may round or truncate the values, which the user should know about. An i32
    // read into an i64 (Normalization's count from Keras 3 on JAX or torch) loses nothing.
    const DType stored = values[i].dtype(), want = vars[i].dtype();
    const bool kiln_widened = (stored == DType::kF32 && (want == DType::kBF16 || want == DType::kF16)) ||
                              (stored == DType::kI32 && want == DType::kI64);
    if (stored != want && !kiln_widened)
      log(LogLevel::kWarning, str_cat("[", path, "] ", where[i], " is stored as ", kiln::name(stored), "; converting it to ",
                                      kiln::name(want), " for ", vars[i].name(), "."));
    vars[i].assign(Tensor(values[i]));
  }
}

}  // namespace kiln::keras::internal
