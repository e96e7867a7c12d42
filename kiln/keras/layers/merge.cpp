// The merge layers (Keras's layers/merging), which take a list of inputs: the elementwise ones
// (Add, Multiply, Subtract, Average, Maximum, Minimum), Concatenate and Dot.
#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/add.h"
#include "kiln/keras/layers/concatenate.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/merging.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
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

Dims ElementwiseMerge::compute_output_shape_multi(const std::vector<Dims>& input_shapes) const {
  check_list(*this, input_shapes.size(), {});
  if (takes_two() && input_shapes.size() != 2)
    KILN_THROW(ValueError, "[", name(), "] ", class_name(), " expects exactly 2 inputs, received ", input_shapes.size(), ".");
  // Keras's _compute_elemwise_op_output_shape: equal dims, or 1 against any (squeeze-and-excite
  // multiplies (h, w, c) by (1, 1, c)).
  Dims out = input_shapes[0];
  for (const Dims& d : input_shapes) {
    bool fits = d.size() == out.size();
    for (size_t i = 0; fits && i < d.size(); ++i) {
      if (out[i] == 1) out[i] = d[i];
      else fits = d[i] == 1 || d[i] == out[i];
    }
    if (!fits)
      KILN_THROW(ShapeError, "[", name(), "] ", class_name(), " expects inputs of one shape (or dims of 1 that ",
                 "broadcast, as Keras's), received ", shapes_text(input_shapes), ".");
  }
  return out;
}

void ElementwiseMerge::build_weights_multi(const std::vector<Dims>& input_shapes) {
  compute_output_shape_multi(input_shapes);
}

Tensor ElementwiseMerge::call(const Tensor& /*x*/, bool /*training*/) {
  KILN_THROW(ValueError, "[", name(), "] ", class_name(), " expects a list of inputs, received one tensor. Hint: ",
             class_name(), "()({a, b}).");
}

Tensor ElementwiseMerge::call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool /*training*/) {
  check_list(*this, inputs.size(), flags);
  compute_output_shape_multi(shapes_of(inputs));
  return combine(inputs);
}

// Add, Multiply, Subtract, Average, Maximum and Minimum hold the base layer's keys only.
constexpr internal::ConfigKey kElementwiseMergeKeys[] = {{"name"}};
MergeOptions ElementwiseMerge::merge_options_from(const std::string& config_json, const char* cls, bool* trainable) {
  nlohmann::json j = internal::parse(config_json, cls);
  internal::expect_layer_keys(j, {kElementwiseMergeKeys}, cls);
  *trainable = j.value("trainable", true);
  return {.name = j.value("name", "")};
}

namespace {

// inputs[0] op inputs[1] op ... from left to right.
template <typename Op>
Tensor fold(const std::vector<Tensor>& inputs, Op op) {
  Tensor acc = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) acc = op(acc, inputs[i]);
  return acc;
}

}  // namespace

Tensor Add::combine(const std::vector<Tensor>& inputs) const {
  return fold(inputs, [](const Tensor& a, const Tensor& b) { return a + b; });
}
Tensor Multiply::combine(const std::vector<Tensor>& inputs) const {
  return fold(inputs, [](const Tensor& a, const Tensor& b) { return a * b; });
}
Tensor Subtract::combine(const std::vector<Tensor>& inputs) const { return inputs[0] - inputs[1]; }
Tensor Average::combine(const std::vector<Tensor>& inputs) const {
  return fold(inputs, [](const Tensor& a, const Tensor& b) { return a + b; }) * (1.0 / static_cast<double>(inputs.size()));
}
Tensor Maximum::combine(const std::vector<Tensor>& inputs) const {
  return fold(inputs, [](const Tensor& a, const Tensor& b) { return maximum(a, b); });
}
Tensor Minimum::combine(const std::vector<Tensor>& inputs) const {
  return fold(inputs, [](const Tensor& a, const Tensor& b) { return minimum(a, b); });
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

constexpr internal::ConfigKey kConcatenateKeys[] = {{"axis"}};
Concatenate Concatenate::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Concatenate.from_config");
  internal::expect_layer_keys(j, {kConcatenateKeys}, "Concatenate");
  Concatenate c({.axis = j.value("axis", -1), .name = j.value("name", "")});
  c.set_trainable(j.value("trainable", true));
  return c;
}

// ---- Dot -------------------------------------------------------------------------------------

Dot::Dot(Dims axes, DotOptions options) : Layer(options.name, {}, options.dtype), axes_(std::move(axes)), normalize_(options.normalize) {
  if (axes_.size() != 2 || axes_[0] == 0 || axes_[1] == 0)
    KILN_THROW(ValueError, "[", options.name.empty() ? "Dot" : options.name, "] axes=", dims_to_string(axes_),
               " must be one axis per input, neither the batch axis 0.");
}

std::pair<size_t, size_t> Dot::axes_for(const std::vector<Dims>& input_shapes) const {
  if (input_shapes.size() != 2)
    KILN_THROW(ValueError, "[", name(), "] Dot expects exactly 2 inputs, received ", input_shapes.size(), ".");
  size_t out[2];
  for (size_t i = 0; i < 2; ++i) {
    const int64_t rank = static_cast<int64_t>(input_shapes[i].size()) + 1;  // with the batch axis
    const int64_t axis = axes_[i] < 0 ? axes_[i] + rank : axes_[i];
    if (axis < 1 || axis >= rank)
      KILN_THROW(ValueError, "[", name(), "] axes=", dims_to_string(axes_), " is out of range for input ", i,
                 " of rank ", rank, " (batch included).");
    out[i] = static_cast<size_t>(axis - 1);
  }
  if (input_shapes[0][out[0]] != input_shapes[1][out[1]])
    KILN_THROW(ShapeError, "[", name(), "] Dot(axes=", dims_to_string(axes_), ") contracts dims of different sizes: ",
               shapes_text(input_shapes), ".");
  return {out[0], out[1]};
}

Dims Dot::compute_output_shape_multi(const std::vector<Dims>& input_shapes) const {
  const auto [a, b] = axes_for(input_shapes);
  Dims out;
  for (size_t i = 0; i < input_shapes[0].size(); ++i)
    if (i != a) out.push_back(input_shapes[0][i]);
  for (size_t i = 0; i < input_shapes[1].size(); ++i)
    if (i != b) out.push_back(input_shapes[1][i]);
  return out.empty() ? Dims{1} : out;
}

void Dot::build_weights_multi(const std::vector<Dims>& input_shapes) { compute_output_shape_multi(input_shapes); }

Tensor Dot::call(const Tensor& /*x*/, bool /*training*/) {
  KILN_THROW(ValueError, "[", name(), "] Dot expects a list of 2 inputs, received one tensor. Hint: Dot(1)({a, b}).");
}

// x: (N, ..., K, ...), y: (N, ..., K, ...) -> (N, x's other dims, y's other dims)
Tensor Dot::call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool /*training*/) {
  check_list(*this, inputs.size(), flags);
  const Dims out = compute_output_shape_multi(shapes_of(inputs));
  const auto [a, b] = axes_for(shapes_of(inputs));
  Tensor x = inputs[0], y = inputs[1];
  const int ax = static_cast<int>(a) + 1, ay = static_cast<int>(b) + 1;
  if (normalize_) {  // Keras's l2_normalize: x / sqrt(max(sum(x^2), 1e-12))
    x = x * rsqrt(maximum(reduce_sum(x * x, {ax}, /*keepdims=*/true), 1e-12));
    y = y * rsqrt(maximum(reduce_sum(y * y, {ay}, /*keepdims=*/true), 1e-12));
  }
  Tensor z = dot_general(x, y, {.lhs_batch = {0}, .rhs_batch = {0}, .lhs_contracting = {ax}, .rhs_contracting = {ay}});
  Dims full_out{x.dim(0)};
  full_out.insert(full_out.end(), out.begin(), out.end());
  return reshape(z, full_out);
}

std::string Dot::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["axes"] = axes_[0] == axes_[1] ? nlohmann::json(axes_[0]) : nlohmann::json(axes_);
  j["normalize"] = normalize_;
  return j.dump();
}

constexpr internal::ConfigKey kDotKeys[] = {{"axes"}, {"normalize"}};
Dot Dot::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Dot.from_config");
  internal::expect_layer_keys(j, {kDotKeys}, "Dot");
  const Dims axes = internal::guarded("Dot.from_config", [&] {
    const nlohmann::json& a = j.at("axes");
    return a.is_number_integer() ? Dims{a.get<int64_t>(), a.get<int64_t>()} : a.get<Dims>();
  });
  Dot d(axes, {.normalize = j.value("normalize", false), .name = j.value("name", "")});
  d.set_trainable(j.value("trainable", true));
  return d;
}

}  // namespace kiln::keras
