// RandomFlip, RandomCrop, RandomContrast, RandomBrightness: per-image uniform draws
// (batch_random_uniform, so a replica's shard draws its rows of the global batch's numbers)
// selecting or scaling traced tf.image ops.
#include "kiln/keras/layers/random_image_layers.h"

#include <algorithm>

#include "kiln/core/check.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/keras/layers/image_preprocessing.h"
#include "kiln/keras/layers/preprocessing_config_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/image.h"
#include "kiln/trace/ops/random.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

std::string at(const std::string& name, const char* cls) { return name.empty() ? cls : name; }

// Column `i` of per-image draws u [batch, k] as [batch, 1, 1, 1], to broadcast over images.
Tensor per_image(const Tensor& u, int64_t i) {
  return reshape(slice(u, {0, i}, {u.dim(0), i + 1}), {u.dim(0), 1, 1, 1});
}

Tensor clip(const Tensor& x, const std::array<double, 2>& range) {
  return minimum(maximum(x, range[0]), range[1]);
}

template <typename L>
L with_trainable(L layer, const nlohmann::json& j) {
  layer.set_trainable(j.value("trainable", true));
  return layer;
}

}  // namespace

// ---- RandomFlip ------------------------------------------------------------------------------

RandomFlip::RandomFlip(RandomFlipOptions options)
    : RandomImageLayer(options.seed, options.name, options.input_shape, options.dtype), options_(std::move(options)) {
  const std::string& m = options_.mode;
  if (m != "horizontal" && m != "vertical" && m != "horizontal_and_vertical")
    KILN_THROW(ValueError, "[", at(options_.name, "RandomFlip"), "] mode must be \"horizontal\", \"vertical\" or ",
               "\"horizontal_and_vertical\", received \"", m, "\".");
}

Tensor RandomFlip::call(const Tensor& x, bool training) {
  Tensor y = cast_input(x);
  if (!training) return y;
  const Tensor u = batch_random_uniform(next_key(), {y.dim(0), 2}, DType::kF32);
  if (options_.mode != "vertical") y = where(less(per_image(u, 0), 0.5), flip_left_right(y), y);
  if (options_.mode != "horizontal") y = where(less(per_image(u, 1), 0.5), flip_up_down(y), y);
  return y;
}

std::string RandomFlip::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["mode"] = options_.mode;
  j["seed"] = internal::seed_json(seed());
  return j.dump();
}

constexpr internal::ConfigKey kRandomFlipKeys[] = {{"mode"}, {"seed"}, internal::kChannelsLastKey,
                                                   internal::kNoBoundingBoxesKey};
RandomFlip RandomFlip::from_config(const std::string& config_json) {
  const char* where = "RandomFlip.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kRandomFlipKeys}, "RandomFlip");
  RandomFlipOptions o = internal::guarded(where, [&] {
    return RandomFlipOptions{.mode = j.value("mode", "horizontal_and_vertical"),
                             .seed = internal::seed_from(j, where),
                             .input_shape = internal::input_shape_from(j),
                             .name = j.value("name", "")};
  });
  return with_trainable(RandomFlip(std::move(o)), j);
}

// ---- RandomCrop ------------------------------------------------------------------------------

RandomCrop::RandomCrop(int64_t height, int64_t width, RandomCropOptions options)
    : RandomImageLayer(options.seed, options.name, options.input_shape, options.dtype), height_(height), width_(width),
      options_(std::move(options)) {
  if (height < 1 || width < 1)
    KILN_THROW(ValueError, "[", at(options_.name, "RandomCrop"), "] height and width must be at least 1, received ",
               "height=", height, ", width=", width, ".");
}

Dims RandomCrop::compute_output_shape(const Dims& input_shape) const {
  internal::check_image_input(name(), input_shape);
  return {height_, width_, input_shape[2]};
}

Tensor RandomCrop::call(const Tensor& x, bool training) {
  const Tensor y = cast_input(x);
  const int64_t h = y.dim(1), w = y.dim(2);
  if (!training || h <= height_ || w <= width_) return internal::smart_resize(y, height_, width_);
  // Offsets uniform over [0, side - target], one window for the whole batch (as Keras).
  const Tensor u = random_uniform(next_key(), {2}, DType::kF32);
  auto offset = [&](int64_t i, int64_t slack) {
    const Tensor o = cast(reshape(slice(u, {i}, {i + 1}), {}) * static_cast<double>(slack + 1), DType::kI32);
    return minimum(o, Tensor::scalar(static_cast<double>(slack), DType::kI32));
  };
  const Tensor zero = Tensor::scalar(0, DType::kI32);
  return dynamic_slice(y, {zero, offset(0, h - height_), offset(1, w - width_), zero},
                       {y.dim(0), height_, width_, y.dim(3)});
}

std::string RandomCrop::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["height"] = height_;
  j["width"] = width_;
  j["seed"] = internal::seed_json(seed());
  return j.dump();
}

constexpr internal::ConfigKey kRandomCropKeys[] = {{"height"}, {"width"}, {"seed"}, internal::kChannelsLastKey,
                                                   internal::kNoBoundingBoxesKey};
RandomCrop RandomCrop::from_config(const std::string& config_json) {
  const char* where = "RandomCrop.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kRandomCropKeys}, "RandomCrop");
  RandomCropOptions o{.seed = internal::seed_from(j, where), .input_shape = internal::input_shape_from(j),
                      .name = j.value("name", "")};
  return with_trainable(
      RandomCrop(internal::int_field(j, "height", where), internal::int_field(j, "width", where), std::move(o)), j);
}

// ---- RandomContrast --------------------------------------------------------------------------

RandomContrast::RandomContrast(Factor factor, RandomContrastOptions options)
    : RandomImageLayer(options.seed, options.name, options.input_shape, options.dtype), lower_(factor.lower),
      upper_(factor.upper), options_(std::move(options)) {
  if (lower_ < 0 || upper_ < 0 || lower_ > 1)
    KILN_THROW(ValueError, "[", at(options_.name, "RandomContrast"), "] factor must be non-negative with lower <= 1 ",
               "(the contrast factor is drawn from [1 - lower, 1 + upper]), received lower=", lower_, ", upper=",
               upper_, ".");
}

Tensor RandomContrast::call(const Tensor& x, bool training) {
  const Tensor y = cast_input(x);
  if (!training) return y;
  const Tensor u = batch_random_uniform(next_key(), {y.dim(0), 1}, DType::kF32);
  const Tensor factor = per_image(u, 0) * (lower_ + upper_) + (1.0 - lower_);
  return clip(adjust_contrast(y, factor), options_.value_range);
}

std::string RandomContrast::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["factor"] = {lower_, upper_};
  j["value_range"] = options_.value_range;
  j["seed"] = internal::seed_json(seed());
  return j.dump();
}

// tf.keras 2 writes factor and seed (and clips to [0, 255]); Keras 3 adds value_range.
constexpr internal::ConfigKey kRandomContrastKeys[] = {{"factor"}, {"value_range"}, {"seed"},
                                                       internal::kChannelsLastKey, internal::kNoBoundingBoxesKey};
RandomContrast RandomContrast::from_config(const std::string& config_json) {
  const char* where = "RandomContrast.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kRandomContrastKeys}, "RandomContrast");
  RandomContrastOptions o{.value_range = internal::pair_from(j, "value_range", {0, 255}, where),
                          .seed = internal::seed_from(j, where),
                          .input_shape = internal::input_shape_from(j),
                          .name = j.value("name", "")};
  return with_trainable(RandomContrast(internal::factor_from(j, "factor", where), std::move(o)), j);
}

// ---- RandomBrightness ------------------------------------------------------------------------

RandomBrightness::RandomBrightness(Factor factor, RandomBrightnessOptions options)
    : RandomImageLayer(options.seed, options.name, options.input_shape, options.dtype),
      lower_(factor.single ? -std::abs(factor.lower) : std::min(factor.lower, factor.upper)),
      upper_(factor.single ? std::abs(factor.lower) : std::max(factor.lower, factor.upper)),
      options_(std::move(options)) {
  if (lower_ < -1 || upper_ > 1)
    KILN_THROW(ValueError, "[", at(options_.name, "RandomBrightness"), "] factor must lie in [-1, 1], received [",
               lower_, ", ", upper_, "].");
  std::sort(options_.value_range.begin(), options_.value_range.end());
}

Tensor RandomBrightness::call(const Tensor& x, bool training) {
  const Tensor y = cast_input(x);
  if (!training) return y;
  const Tensor u = batch_random_uniform(next_key(), {y.dim(0), 1}, DType::kF32);
  const double span = options_.value_range[1] - options_.value_range[0];
  const Tensor delta = (per_image(u, 0) * (upper_ - lower_) + lower_) * span;
  return clip(adjust_brightness(y, delta), options_.value_range);
}

std::string RandomBrightness::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["factor"] = {lower_, upper_};
  j["value_range"] = options_.value_range;
  j["seed"] = internal::seed_json(seed());
  return j.dump();
}

constexpr internal::ConfigKey kRandomBrightnessKeys[] = {{"factor"}, {"value_range"}, {"seed"},
                                                         internal::kChannelsLastKey, internal::kNoBoundingBoxesKey};
RandomBrightness RandomBrightness::from_config(const std::string& config_json) {
  const char* where = "RandomBrightness.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kRandomBrightnessKeys}, "RandomBrightness");
  RandomBrightnessOptions o{.value_range = internal::pair_from(j, "value_range", {0, 255}, where),
                            .seed = internal::seed_from(j, where),
                            .input_shape = internal::input_shape_from(j),
                            .name = j.value("name", "")};
  return with_trainable(RandomBrightness(internal::factor_from(j, "factor", where), std::move(o)), j);
}

}  // namespace kiln::keras
