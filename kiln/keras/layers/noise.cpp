// SpatialDropout2D (dropout of a (batch, 1, 1, channels) mask broadcast over the image) and
// GaussianNoise (x + stddev * random_normal), keyed per step like Dropout.
#include "kiln/keras/layers/noise.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/keras/layers/random_key_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/random.h"

namespace kiln::keras {
namespace {

std::vector<Variable> defined(const Variable& counter) {
  return counter.defined() ? std::vector<Variable>{counter} : std::vector<Variable>{};
}

std::optional<uint64_t> seed_from(const nlohmann::json& j, const char* where) {
  if (!j.contains("seed") || j["seed"].is_null()) return std::nullopt;
  return internal::guarded(where, [&] { return j["seed"].get<uint64_t>(); });
}

nlohmann::json seed_json(const std::optional<uint64_t>& seed) { return seed ? nlohmann::json(*seed) : nlohmann::json(nullptr); }

}  // namespace

// ---- SpatialDropout2D ------------------------------------------------------------------------

SpatialDropout2D::SpatialDropout2D(double rate, SpatialDropout2DOptions options)
    : Layer(options.name, options.input_shape, options.dtype), rate_(rate), options_(std::move(options)) {
  const std::string at = options_.name.empty() ? "SpatialDropout2D" : options_.name;
  if (rate < 0 || rate >= 1) KILN_THROW(ValueError, "[", at, "] expected rate in [0, 1), received rate=", rate, ".");
  internal::check_data_format(at, options_.data_format);
}

Dims SpatialDropout2D::compute_output_shape(const Dims& input_shape) const {
  internal::check_image_input(name(), input_shape);
  return input_shape;
}

void SpatialDropout2D::build_weights(const Dims& input_shape) {
  compute_output_shape(input_shape);
  counter_ = internal::make_seed_state(name());
}

std::vector<Variable> SpatialDropout2D::random_state() const { return defined(self_as<SpatialDropout2D>().counter_); }

// x: (N, H, W, C); the mask (N, 1, 1, C) (channels_first (N, C, 1, 1)) holds 0 or 1 / (1 - rate).
Tensor SpatialDropout2D::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0) return x;
  const bool first = options_.data_format == "channels_first";
  Dims mask_dims = first ? Dims{x.dim(0), x.dim(1), 1, 1} : Dims{x.dim(0), 1, 1, x.dim(3)};
  const Tensor key = internal::next_random_key(counter_, options_.seed, name());
  return x * dropout(ones(Shape(x.dtype(), mask_dims)), rate_, key, /*training=*/true);
}

std::string SpatialDropout2D::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  // No noise_shape: Keras 3's SpatialDropout2D rejects the key, and Keras 2's reads its absence.
  j["rate"] = rate_;
  j["seed"] = seed_json(options_.seed);
  j["data_format"] = options_.data_format;
  return j.dump();
}

// tf.keras 2.x writes Dropout's noise_shape (null) for SpatialDropout2D too; Keras 3 writes data_format.
constexpr internal::ConfigKey kSpatialDropout2DKeys[] = {
    {"rate"},
    {"seed"},
    {"data_format"},
    {"noise_shape", "null", "SpatialDropout2D's noise shape is (batch, 1, 1, channels)"}};
SpatialDropout2D SpatialDropout2D::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "SpatialDropout2D.from_config");
  internal::expect_layer_keys(j, {kSpatialDropout2DKeys}, "SpatialDropout2D");
  SpatialDropout2DOptions o;
  if (j.contains("data_format") && !j["data_format"].is_null()) o.data_format = j["data_format"];
  o.seed = seed_from(j, "SpatialDropout2D.from_config");
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  const double rate = internal::guarded("SpatialDropout2D.from_config", [&] { return j.at("rate").get<double>(); });
  SpatialDropout2D l(rate, o);
  l.set_trainable(j.value("trainable", true));
  return l;
}

// ---- GaussianNoise ---------------------------------------------------------------------------

GaussianNoise::GaussianNoise(double stddev, GaussianNoiseOptions options)
    : Layer(options.name, options.input_shape, options.dtype), stddev_(stddev), options_(std::move(options)) {
  if (!(stddev >= 0))
    KILN_THROW(ValueError, "[", options_.name.empty() ? "GaussianNoise" : options_.name,
               "] expected stddev >= 0, received stddev=", stddev, ".");
}

void GaussianNoise::build_weights(const Dims& /*input_shape*/) { counter_ = internal::make_seed_state(name()); }

std::vector<Variable> GaussianNoise::random_state() const { return defined(self_as<GaussianNoise>().counter_); }

Tensor GaussianNoise::call(const Tensor& x, bool training) {
  if (!training || stddev_ == 0) return x;
  const Tensor key = internal::next_random_key(counter_, options_.seed, name());
  return x + batch_random_normal(key, x.dims(), x.dtype(), 0.0, stddev_);
}

std::string GaussianNoise::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["stddev"] = stddev_;
  j["seed"] = seed_json(options_.seed);
  return j.dump();
}

constexpr internal::ConfigKey kGaussianNoiseKeys[] = {{"stddev"}, {"seed"}};
GaussianNoise GaussianNoise::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "GaussianNoise.from_config");
  internal::expect_layer_keys(j, {kGaussianNoiseKeys}, "GaussianNoise");
  GaussianNoiseOptions o{.seed = seed_from(j, "GaussianNoise.from_config"), .input_shape = internal::input_shape_from(j),
                         .name = j.value("name", "")};
  const double stddev = internal::guarded("GaussianNoise.from_config", [&] { return j.at("stddev").get<double>(); });
  GaussianNoise l(stddev, o);
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
