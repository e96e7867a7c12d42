// The merge layers (Keras's layers/merging): Add and Concatenate, which take a list of inputs.
#include "kiln/core/check.h"
#include "kiln/keras/layers/add.h"
#include "kiln/keras/layers/concatenate.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

std::string shapes_text(const std::vector<Dims>& shapes) {
  std::string out;
  for (const Dims& d : shapes) out += (out.empty() ? "" : ", ") + dims_to_string(d);
  return out;
}

void check_list(const Layer& layer, size_t count, const CallFlags& flags) {
  if (count < 2)
    KILN_THROW(ValueError, "[", layer.name(), "] ", layer.class_name(), " expects a list of at least 2 inputs, received ",
               count, ". Hint: ", layer.class_name(), "()({a, b}).");
  if (!flags.empty())
    KILN_THROW(ValueError, "[", layer.name(), "] ", layer.class_name(), " takes no call flags, received '",
               flags.begin()->first, "'.");
}

std::vector<Dims> shapes_of(const std::vector<Tensor>& xs) {
  std::vector<Dims> out;
  for (const Tensor& x : xs) out.emplace_back(x.dims().begin() + 1, x.dims().end());
  return out;
}

}  // namespace

Dims Add::compute_output_shape_multi(const std::vector<Dims>& input_shapes) const {
  check_list(*this, input_shapes.size(), {});
  for (const Dims& d : input_shapes)
    if (d != input_shapes[0])
      KILN_THROW(ShapeError, "[", name(), "] Add expects inputs of one shape, received ", shapes_text(input_shapes), ".");
  return input_shapes[0];
}

void Add::build_weights_multi(const std::vector<Dims>& input_shapes) { compute_output_shape_multi(input_shapes); }

Tensor Add::call(const Tensor& /*x*/, bool /*training*/) {
  KILN_THROW(ValueError, "[", name(), "] Add expects a list of inputs, received one tensor. Hint: Add()({a, b}).");
}

Tensor Add::call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool /*training*/) {
  check_list(*this, inputs.size(), flags);
  compute_output_shape_multi(shapes_of(inputs));
  Tensor sum = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) sum = sum + inputs[i];
  return sum;
}

Add Add::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Add.from_config");
  Add a({.name = j.value("name", "")});
  a.set_trainable(j.value("trainable", true));
  return a;
}

// Keras counts the axis with the batch dim; per-example dims shift it by one.
Dims Concatenate::compute_output_shape_multi(const std::vector<Dims>& input_shapes) const {
  check_list(*this, input_shapes.size(), {});
  const int rank = static_cast<int>(input_shapes[0].size()) + 1;
  const int axis = axis_ < 0 ? axis_ + rank : axis_;
  if (axis < 1 || axis >= rank)
    KILN_THROW(ValueError, "[", name(), "] axis=", axis_, " is out of range for inputs of rank ", rank,
               " (batch included); the batch axis 0 cannot be joined.");
  Dims out = input_shapes[0];
  const size_t a = static_cast<size_t>(axis - 1);
  for (size_t i = 1; i < input_shapes.size(); ++i) {
    const Dims& d = input_shapes[i];
    bool ok = d.size() == out.size();
    for (size_t k = 0; ok && k < d.size(); ++k) ok = k == a || d[k] == out[k];
    if (!ok)
      KILN_THROW(ShapeError, "[", name(), "] Concatenate(axis=", axis_, ") expects inputs equal in every other dim, received ",
                 shapes_text(input_shapes), ".");
    out[a] += d[a];
  }
  return out;
}

void Concatenate::build_weights_multi(const std::vector<Dims>& input_shapes) { compute_output_shape_multi(input_shapes); }

Tensor Concatenate::call(const Tensor& /*x*/, bool /*training*/) {
  KILN_THROW(ValueError, "[", name(), "] Concatenate expects a list of inputs, received one tensor. Hint: Concatenate()({a, b}).");
}

Tensor Concatenate::call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool /*training*/) {
  check_list(*this, inputs.size(), flags);
  compute_output_shape_multi(shapes_of(inputs));
  return concat(inputs, axis_);
}

std::string Concatenate::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["axis"] = axis_;
  return j.dump();
}

Concatenate Concatenate::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Concatenate.from_config");
  Concatenate c({.axis = j.value("axis", -1), .name = j.value("name", "")});
  c.set_trainable(j.value("trainable", true));
  return c;
}

}  // namespace kiln::keras
