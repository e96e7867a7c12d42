// ZeroPadding2D (pad), Cropping2D (slice), UpSampling2D (broadcast + reshape, or two matmuls
// with interpolation matrices), Permute (transpose) and RepeatVector (broadcast_in_dim).
#include "kiln/keras/layers/reshaping.h"

#include <algorithm>
#include <cmath>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

std::string at(const Layer& l, const std::string& option_name) {
  if (!l.name().empty()) return l.name();
  return option_name.empty() ? l.class_name() : option_name;
}

// The (rows, cols) axes of a per-example image: (0, 1) for HWC, (1, 2) for CHW.
size_t rows_axis(const std::string& data_format) { return data_format == "channels_first" ? 1 : 0; }

nlohmann::json edges_json(const Edges2D& e) { return {{e.top, e.bottom}, {e.left, e.right}}; }

// Keras's forms: n, [rows, cols] or [[top, bottom], [left, right]].
Edges2D edges_from_json(const nlohmann::json& j, const char* where) {
  return internal::guarded(where, [&]() -> Edges2D {
    if (j.is_number_integer()) return Edges2D(j.get<int64_t>());
    if (j.is_array() && j.size() == 2 && j[0].is_number_integer()) return Edges2D(j[0].get<int64_t>(), j[1].get<int64_t>());
    if (j.is_array() && j.size() == 2) return Edges2D(j[0].get<Dims>(), j[1].get<Dims>());
    KILN_THROW(ConfigError, "[", where, "] expected n, [rows, cols] or [[top, bottom], [left, right]], received ",
               j.dump(), ".");
  });
}

ImageLayerOptions image_options_from(const nlohmann::json& j) {
  ImageLayerOptions o;
  if (j.contains("data_format") && !j["data_format"].is_null()) o.data_format = j["data_format"];
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  return o;
}

void check_image(const std::string& where, const Dims& input_shape) { internal::check_image_input(where, input_shape); }

// A per-example (rows, cols) interpolation matrix (out, in) of tf.image.resize's bilinear
// mode with half-pixel centers: source = (o + 0.5) / scale - 0.5, clamped at the edges.
HostTensor bilinear_matrix(int64_t in, int64_t scale, DType dtype) {
  const int64_t out = in * scale;
  std::vector<double> m(static_cast<size_t>(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    const double src = (static_cast<double>(o) + 0.5) / static_cast<double>(scale) - 0.5;
    const double lo = std::floor(src), frac = src - lo;
    const int64_t i0 = std::clamp<int64_t>(static_cast<int64_t>(lo), 0, in - 1);
    const int64_t i1 = std::clamp<int64_t>(static_cast<int64_t>(lo) + 1, 0, in - 1);
    m[static_cast<size_t>(o * in + i0)] += 1.0 - frac;
    m[static_cast<size_t>(o * in + i1)] += frac;
  }
  return HostTensor::from_vector<double>({out, in}, m).astype(dtype);
}

}  // namespace

Edges2D::Edges2D(Dims top_bottom, Dims left_right) {
  if (top_bottom.size() != 2 || left_right.size() != 2)
    KILN_THROW(ValueError, "[Edges2D] expected ((top, bottom), (left, right)), received (", dims_to_string(top_bottom),
               ", ", dims_to_string(left_right), ").");
  top = top_bottom[0], bottom = top_bottom[1], left = left_right[0], right = left_right[1];
}

// ---- ZeroPadding2D ---------------------------------------------------------------------------

ZeroPadding2D::ZeroPadding2D(Edges2D padding, ImageLayerOptions options)
    : Layer(options.name, options.input_shape, options.dtype), padding_(padding), options_(std::move(options)) {
  const std::string where = options_.name.empty() ? "ZeroPadding2D" : options_.name;
  internal::check_data_format(where, options_.data_format);
  if (std::min({padding_.top, padding_.bottom, padding_.left, padding_.right}) < 0)
    KILN_THROW(ValueError, "[", where, "] padding must be >= 0, received ", edges_json(padding_).dump(), ".");
}

Dims ZeroPadding2D::compute_output_shape(const Dims& input_shape) const {
  check_image(at(*this, options_.name), input_shape);
  Dims out = input_shape;
  const size_t r = rows_axis(options_.data_format);
  if (out[r] != kNoneDim) out[r] += padding_.top + padding_.bottom;  // None stays None
  if (out[r + 1] != kNoneDim) out[r + 1] += padding_.left + padding_.right;
  return out;
}

Tensor ZeroPadding2D::call(const Tensor& x, bool /*training*/) {
  compute_output_shape(Dims(x.dims().begin() + 1, x.dims().end()));
  const size_t r = rows_axis(options_.data_format) + 1;
  Dims low(4, 0), high(4, 0);
  low[r] = padding_.top, high[r] = padding_.bottom, low[r + 1] = padding_.left, high[r + 1] = padding_.right;
  return pad(x, low, high);
}

std::string ZeroPadding2D::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["padding"] = edges_json(padding_);
  j["data_format"] = options_.data_format;
  return j.dump();
}

constexpr internal::ConfigKey kZeroPadding2DKeys[] = {{"padding"}, {"data_format"}};
ZeroPadding2D ZeroPadding2D::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "ZeroPadding2D.from_config");
  internal::expect_layer_keys(j, {kZeroPadding2DKeys}, "ZeroPadding2D");
  ZeroPadding2D l(edges_from_json(j.value("padding", nlohmann::json(1)), "ZeroPadding2D.from_config"),
                  image_options_from(j));
  l.set_trainable(j.value("trainable", true));
  return l;
}

// ---- Cropping2D ------------------------------------------------------------------------------

Cropping2D::Cropping2D(Edges2D cropping, ImageLayerOptions options)
    : Layer(options.name, options.input_shape, options.dtype), cropping_(cropping), options_(std::move(options)) {
  const std::string where = options_.name.empty() ? "Cropping2D" : options_.name;
  internal::check_data_format(where, options_.data_format);
  if (std::min({cropping_.top, cropping_.bottom, cropping_.left, cropping_.right}) < 0)
    KILN_THROW(ValueError, "[", where, "] cropping must be >= 0, received ", edges_json(cropping_).dump(), ".");
}

Dims Cropping2D::compute_output_shape(const Dims& input_shape) const {
  check_image(at(*this, options_.name), input_shape);
  Dims out = input_shape;
  const size_t r = rows_axis(options_.data_format);
  out[r] -= cropping_.top + cropping_.bottom;
  out[r + 1] -= cropping_.left + cropping_.right;
  if (out[r] <= 0 || out[r + 1] <= 0)
    KILN_THROW(ShapeError, "[", at(*this, options_.name), "] cropping ", edges_json(cropping_).dump(),
               " leaves nothing of the input ", dims_to_string(input_shape), ". Hint: crop less.");
  return out;
}

Tensor Cropping2D::call(const Tensor& x, bool /*training*/) {
  Dims limits = compute_output_shape(Dims(x.dims().begin() + 1, x.dims().end()));
  limits.insert(limits.begin(), x.dim(0));
  const size_t r = rows_axis(options_.data_format) + 1;
  Dims starts(4, 0);
  starts[r] = cropping_.top, starts[r + 1] = cropping_.left;
  limits[r] += cropping_.top, limits[r + 1] += cropping_.left;
  return slice(x, starts, limits);
}

std::string Cropping2D::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["cropping"] = edges_json(cropping_);
  j["data_format"] = options_.data_format;
  return j.dump();
}

constexpr internal::ConfigKey kCropping2DKeys[] = {{"cropping"}, {"data_format"}};
Cropping2D Cropping2D::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Cropping2D.from_config");
  internal::expect_layer_keys(j, {kCropping2DKeys}, "Cropping2D");
  Cropping2D l(edges_from_json(j.value("cropping", nlohmann::json(0)), "Cropping2D.from_config"),
               image_options_from(j));
  l.set_trainable(j.value("trainable", true));
  return l;
}

// ---- UpSampling2D ----------------------------------------------------------------------------

UpSampling2D::UpSampling2D(WindowSize size, UpSampling2DOptions options)
    : Layer(options.name, options.input_shape, options.dtype), size_(std::move(size.dims)), options_(std::move(options)) {
  const std::string where = options_.name.empty() ? "UpSampling2D" : options_.name;
  internal::check_pair(where, "size", size_);
  internal::check_data_format(where, options_.data_format);
  if (options_.interpolation != "nearest" && options_.interpolation != "bilinear")
    KILN_THROW(ValueError, "[", where, "] interpolation='", options_.interpolation,
               "' is not supported. Hint: use \"nearest\" or \"bilinear\" (Kiln does not build bicubic, area, "
               "lanczos3, lanczos5 or gaussian).");
}

Dims UpSampling2D::compute_output_shape(const Dims& input_shape) const {
  check_image(at(*this, options_.name), input_shape);
  Dims out = input_shape;
  const size_t r = rows_axis(options_.data_format);
  out[r] *= size_[0];
  out[r + 1] *= size_[1];
  return out;
}

// x: (N, H, W, C) -> (N, H * sh, W * sw, C); channels_first transposes to NHWC and back.
Tensor UpSampling2D::call(const Tensor& x_in, bool /*training*/) {
  compute_output_shape(Dims(x_in.dims().begin() + 1, x_in.dims().end()));
  const bool first = options_.data_format == "channels_first";
  const Tensor x = first ? transpose(x_in, {0, 2, 3, 1}) : x_in;
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  Tensor y;
  if (options_.interpolation == "nearest") {
    // (N, H, 1, W, 1, C) broadcast over the two size-1 axes, then merged: each pixel repeated.
    y = broadcast_in_dim(x, {n, h, size_[0], w, size_[1], c}, {0, 1, 3, 5});
    y = reshape(y, {n, h * size_[0], w * size_[1], c});
  } else {
    // y[n, o, p, c] = sum_h,w A[o, h] B[p, w] x[n, h, w, c], one matmul per spatial axis.
    const Tensor rows = constant(bilinear_matrix(h, size_[0], x.dtype()));
    const Tensor cols = constant(bilinear_matrix(w, size_[1], x.dtype()));
    y = matmul(transpose(x, {0, 2, 3, 1}), transpose(rows, {1, 0}));  // (N, W, C, OH)
    y = matmul(transpose(y, {0, 3, 2, 1}), transpose(cols, {1, 0}));  // (N, OH, C, OW)
    y = transpose(y, {0, 1, 3, 2});
  }
  return first ? transpose(y, {0, 3, 1, 2}) : y;
}

std::string UpSampling2D::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["size"] = size_;
  j["data_format"] = options_.data_format;
  j["interpolation"] = options_.interpolation;
  return j.dump();
}

// interpolation: Keras 2.2.3+.
constexpr internal::ConfigKey kUpSampling2DKeys[] = {{"size"}, {"data_format"}, {"interpolation"}};
UpSampling2D UpSampling2D::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "UpSampling2D.from_config");
  internal::expect_layer_keys(j, {kUpSampling2DKeys}, "UpSampling2D");
  UpSampling2DOptions o;
  if (j.contains("data_format") && !j["data_format"].is_null()) o.data_format = j["data_format"];
  o.interpolation = j.value("interpolation", o.interpolation);
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  const Dims size = internal::guarded("UpSampling2D.from_config",
                                      [&] { return internal::pair_from_json(j.value("size", nlohmann::json(2))); });
  UpSampling2D l(WindowSize(size.size() == 2 ? size[0] : 0, size.size() == 2 ? size[1] : 0), o);
  l.set_trainable(j.value("trainable", true));
  return l;
}

// ---- Permute ---------------------------------------------------------------------------------

Permute::Permute(Dims dims, LayerOptions options) : Layer(options.name, options.input_shape, options.dtype), dims_(std::move(dims)) {
  Dims sorted = dims_;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i) + 1)
      KILN_THROW(ValueError, "[", options.name.empty() ? "Permute" : options.name, "] dims=", dims_to_string(dims_),
                 " must be a permutation of 1..", dims_.size(), " (the batch axis 0 stays first).");
}

Dims Permute::compute_output_shape(const Dims& input_shape) const {
  if (input_shape.size() != dims_.size())
    KILN_THROW(ShapeError, "[", at(*this, ""), "] dims=", dims_to_string(dims_), " permutes ", dims_.size(),
               " axes, but the per-example input ", dims_to_string(input_shape), " has ", input_shape.size(), ".");
  Dims out;
  for (int64_t d : dims_) out.push_back(input_shape[static_cast<size_t>(d - 1)]);
  return out;
}

Tensor Permute::call(const Tensor& x, bool /*training*/) {
  compute_output_shape(Dims(x.dims().begin() + 1, x.dims().end()));
  Dims perm{0};
  perm.insert(perm.end(), dims_.begin(), dims_.end());
  return transpose(x, perm);
}

std::string Permute::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["dims"] = dims_;
  return j.dump();
}

constexpr internal::ConfigKey kPermuteKeys[] = {{"dims"}};
Permute Permute::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Permute.from_config");
  internal::expect_layer_keys(j, {kPermuteKeys}, "Permute");
  const Dims dims = internal::guarded("Permute.from_config", [&] { return j.at("dims").get<Dims>(); });
  Permute l(dims, {.input_shape = internal::input_shape_from(j), .name = j.value("name", "")});
  l.set_trainable(j.value("trainable", true));
  return l;
}

// ---- RepeatVector ----------------------------------------------------------------------------

RepeatVector::RepeatVector(int64_t n, LayerOptions options) : Layer(options.name, options.input_shape, options.dtype), n_(n) {
  if (n <= 0)
    KILN_THROW(ValueError, "[", options.name.empty() ? "RepeatVector" : options.name, "] expected n > 0, received n=", n, ".");
}

Dims RepeatVector::compute_output_shape(const Dims& input_shape) const {
  if (input_shape.size() != 1)
    KILN_THROW(ShapeError, "[", at(*this, ""), "] expected input (batch, features), received per-example shape ",
               dims_to_string(input_shape), ". Hint: Flatten() first.");
  return {n_, input_shape[0]};
}

// x: (N, F) -> (N, n, F)
Tensor RepeatVector::call(const Tensor& x, bool /*training*/) {
  const Dims out = compute_output_shape(Dims(x.dims().begin() + 1, x.dims().end()));
  return broadcast_in_dim(x, {x.dim(0), out[0], out[1]}, {0, 2});
}

std::string RepeatVector::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["n"] = n_;
  return j.dump();
}

constexpr internal::ConfigKey kRepeatVectorKeys[] = {{"n"}};
RepeatVector RepeatVector::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "RepeatVector.from_config");
  internal::expect_layer_keys(j, {kRepeatVectorKeys}, "RepeatVector");
  RepeatVector l(internal::int_field(j, "n", "RepeatVector"), {.input_shape = internal::input_shape_from(j), .name = j.value("name", "")});
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
