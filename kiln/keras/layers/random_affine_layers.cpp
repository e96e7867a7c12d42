// RandomRotation, RandomZoom, RandomTranslation: each image's tf.keras 2 transform matrix
// from per-image draws, then kiln::projective_transform.
#include "kiln/keras/layers/random_affine_layers.h"

#include <cmath>
#include <numbers>

#include "kiln/core/check.h"
#include "kiln/keras/layers/preprocessing_config_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/image.h"
#include "kiln/trace/ops/random.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

std::string at(const std::string& name, const char* cls) { return name.empty() ? cls : name; }

// A factor whose single number f means [-f, f] (rotation, zoom, translation).
std::pair<double, double> symmetric(const Factor& f, const std::string& layer, const char* arg) {
  const std::pair<double, double> r = f.single ? std::pair{-std::abs(f.lower), std::abs(f.lower)}
                                               : std::pair{f.lower, f.upper};
  if (r.first > r.second || r.first < -1 || r.second > 1)
    KILN_THROW(ValueError, "[", layer, "] ", arg, " must lie in [-1, 1] with lower <= upper, received [", r.first, ", ",
               r.second, "].");
  return r;
}

// Per-image draws uniform in [lower, upper): column i of u [batch, k], as [batch, 1].
Tensor drawn(const Tensor& u, int64_t i, double lower, double upper) {
  return slice(u, {0, i}, {u.dim(0), i + 1}) * (upper - lower) + lower;
}

// sin and cos of angles in [-pi, pi] by their Taylor series to x^17 / x^18 (the IR has no
// trigonometric op): below 3e-8 from the true values there, under f32's rounding.
std::pair<Tensor, Tensor> sin_cos(const Tensor& a) {
  const Tensor x2 = a * a;
  Tensor s = ones_like(a), c = ones_like(a);
  for (int k = 8; k >= 1; --k) s = 1.0 - x2 * s / static_cast<double>((2 * k) * (2 * k + 1));
  for (int k = 9; k >= 1; --k) c = 1.0 - x2 * c / static_cast<double>((2 * k - 1) * (2 * k));
  return {a * s, c};
}

nlohmann::json pair_json(double lower, double upper) { return nlohmann::json::array({lower, upper}); }

RandomAffineOptions affine_options_from(const nlohmann::json& j, const char* where) {
  return internal::guarded(where, [&] {
    return RandomAffineOptions{.fill_mode = j.value("fill_mode", "reflect"),
                               .interpolation = j.value("interpolation", "bilinear"),
                               .seed = internal::seed_from(j, where),
                               .fill_value = j.value("fill_value", 0.0),
                               .input_shape = internal::input_shape_from(j),
                               .name = j.value("name", "")};
  });
}

// tf.keras 2 and Keras 3 both write these beside the factors.
constexpr internal::ConfigKey kAffineKeys[] = {{"fill_mode"},
                                               {"interpolation"},
                                               {"seed"},
                                               {"fill_value"},
                                               internal::kChannelsLastKey,
                                               internal::kNoBoundingBoxesKey};

}  // namespace

// ---- RandomAffineLayer -----------------------------------------------------------------------

RandomAffineLayer::RandomAffineLayer(const char* cls, RandomAffineOptions options)
    : RandomImageLayer(options.seed, options.name, options.input_shape, options.dtype), options_(std::move(options)) {
  const std::string& m = options_.fill_mode;
  if (m != "reflect" && m != "wrap" && m != "constant" && m != "nearest")
    KILN_THROW(ValueError, "[", at(options_.name, cls), "] fill_mode must be \"reflect\", \"wrap\", \"constant\" or ",
               "\"nearest\", received \"", m, "\".");
  if (options_.interpolation != "bilinear" && options_.interpolation != "nearest")
    KILN_THROW(ValueError, "[", at(options_.name, cls), "] interpolation must be \"bilinear\" or \"nearest\", ",
               "received \"", options_.interpolation, "\".");
}

Tensor RandomAffineLayer::call(const Tensor& x, bool training) {
  const Tensor y = cast_input(x);
  if (!training) return y;
  return projective_transform(y, transforms(next_key(), y),
                              {.interpolation = options_.interpolation, .fill_mode = options_.fill_mode,
                               .fill_value = options_.fill_value});
}

void RandomAffineLayer::put_affine_config(std::string& config_json) const {
  nlohmann::json j = nlohmann::json::parse(config_json);
  j["fill_mode"] = options_.fill_mode;
  j["fill_value"] = options_.fill_value;
  j["interpolation"] = options_.interpolation;
  j["seed"] = internal::seed_json(seed());
  config_json = j.dump();
}

// ---- RandomRotation --------------------------------------------------------------------------

RandomRotation::RandomRotation(Factor factor, RandomAffineOptions options)
    : RandomAffineLayer("RandomRotation", std::move(options)) {
  std::tie(lower_, upper_) = symmetric(factor, at(affine_options().name, "RandomRotation"), "factor");
}

// tf.keras 2's get_rotation_matrix: a turn by the angle about the image's centre.
Tensor RandomRotation::transforms(const Tensor& key, const Tensor& x) const {
  const auto h = static_cast<double>(x.dim(1) - 1), w = static_cast<double>(x.dim(2) - 1);
  const Tensor u = batch_random_uniform(key, {x.dim(0), 1}, DType::kF32);
  constexpr double kTurn = 2 * std::numbers::pi;
  Tensor angle = drawn(u, 0, lower_, upper_) * kTurn;
  // Into [-pi, pi] for the series (|angle| <= 2 pi).
  angle = where(greater(angle, std::numbers::pi), angle - kTurn, where(less(angle, -std::numbers::pi), angle + kTurn, angle));
  const auto [s, c] = sin_cos(angle);
  const Tensor x_offset = (w - (c * w - s * h)) * 0.5;
  const Tensor y_offset = (h - (s * w + c * h)) * 0.5;
  const Tensor zero = zeros_like(c);
  return concat({c, neg(s), x_offset, s, c, y_offset, zero, zero}, 1);
}

std::string RandomRotation::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["factor"] = pair_json(lower_, upper_);
  std::string out = j.dump();
  put_affine_config(out);
  return out;
}

constexpr internal::ConfigKey kRandomRotationKeys[] = {{"factor"}};
RandomRotation RandomRotation::from_config(const std::string& config_json) {
  const char* where = "RandomRotation.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kRandomRotationKeys, kAffineKeys}, "RandomRotation");
  RandomRotation l(internal::factor_from(j, "factor", where), affine_options_from(j, where));
  l.set_trainable(j.value("trainable", true));
  return l;
}

// ---- RandomZoom ------------------------------------------------------------------------------

RandomZoom::RandomZoom(Factor height_factor, std::optional<Factor> width_factor, RandomAffineOptions options)
    : RandomAffineLayer("RandomZoom", std::move(options)) {
  const std::string layer = at(affine_options().name, "RandomZoom");
  std::tie(height_lower_, height_upper_) = symmetric(height_factor, layer, "height_factor");
  if (width_factor) width_ = symmetric(*width_factor, layer, "width_factor");
}

// tf.keras 2's get_zoom_matrix: each side scaled by its zoom about the image's centre.
Tensor RandomZoom::transforms(const Tensor& key, const Tensor& x) const {
  const auto h = static_cast<double>(x.dim(1) - 1), w = static_cast<double>(x.dim(2) - 1);
  const Tensor u = batch_random_uniform(key, {x.dim(0), 2}, DType::kF32);
  const Tensor zy = drawn(u, 0, height_lower_, height_upper_) + 1.0;
  const Tensor zx = width_ ? drawn(u, 1, width_->first, width_->second) + 1.0 : zy;
  const Tensor zero = zeros_like(zy);
  return concat({zx, zero, (1.0 - zx) * (w / 2), zero, zy, (1.0 - zy) * (h / 2), zero, zero}, 1);
}

std::string RandomZoom::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["height_factor"] = pair_json(height_lower_, height_upper_);
  j["width_factor"] = width_ ? pair_json(width_->first, width_->second) : nlohmann::json(nullptr);
  std::string out = j.dump();
  put_affine_config(out);
  return out;
}

constexpr internal::ConfigKey kRandomZoomKeys[] = {{"height_factor"}, {"width_factor"}};
RandomZoom RandomZoom::from_config(const std::string& config_json) {
  const char* where = "RandomZoom.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kRandomZoomKeys, kAffineKeys}, "RandomZoom");
  std::optional<Factor> width;
  if (j.contains("width_factor") && !j["width_factor"].is_null()) width = internal::factor_from(j, "width_factor", where);
  RandomZoom l(internal::factor_from(j, "height_factor", where), width, affine_options_from(j, where));
  l.set_trainable(j.value("trainable", true));
  return l;
}

// ---- RandomTranslation -----------------------------------------------------------------------

RandomTranslation::RandomTranslation(Factor height_factor, Factor width_factor, RandomAffineOptions options)
    : RandomAffineLayer("RandomTranslation", std::move(options)) {
  const std::string layer = at(affine_options().name, "RandomTranslation");
  std::tie(height_lower_, height_upper_) = symmetric(height_factor, layer, "height_factor");
  std::tie(width_lower_, width_upper_) = symmetric(width_factor, layer, "width_factor");
}

// tf.keras 2's get_translation_matrix: output (x, y) reads input (x - dx, y - dy).
Tensor RandomTranslation::transforms(const Tensor& key, const Tensor& x) const {
  const Tensor u = batch_random_uniform(key, {x.dim(0), 2}, DType::kF32);
  const Tensor dy = drawn(u, 0, height_lower_, height_upper_) * static_cast<double>(x.dim(1));
  const Tensor dx = drawn(u, 1, width_lower_, width_upper_) * static_cast<double>(x.dim(2));
  const Tensor zero = zeros_like(dy), one = ones_like(dy);
  return concat({one, zero, neg(dx), zero, one, neg(dy), zero, zero}, 1);
}

std::string RandomTranslation::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["height_factor"] = pair_json(height_lower_, height_upper_);
  j["width_factor"] = pair_json(width_lower_, width_upper_);
  std::string out = j.dump();
  put_affine_config(out);
  return out;
}

constexpr internal::ConfigKey kRandomTranslationKeys[] = {{"height_factor"}, {"width_factor"}};
RandomTranslation RandomTranslation::from_config(const std::string& config_json) {
  const char* where = "RandomTranslation.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kRandomTranslationKeys, kAffineKeys}, "RandomTranslation");
  RandomTranslation l(internal::factor_from(j, "height_factor", where), internal::factor_from(j, "width_factor", where),
                      affine_options_from(j, where));
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
