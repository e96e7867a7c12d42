// Internal to keras/layers: the config fields Keras's preprocessing layers share (seed, a
// factor as a number or a [lower, upper] pair, value_range, data_format).
#pragma once

#include <array>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/random_image_layer.h"

namespace kiln::keras::internal {

/// Keras 3 writes data_format; Kiln's image preprocessing layers take channels_last only.
inline constexpr ConfigKey kChannelsLastKey = {"data_format", "\"channels_last\"",
                                               "Kiln's image preprocessing layers take channels_last images"};
/// Keras 3's base image layer writes bounding_box_format when set; Kiln transforms images only.
inline constexpr ConfigKey kNoBoundingBoxesKey = {"bounding_box_format", "null",
                                                  "Kiln's image preprocessing layers transform images only"};

inline std::optional<uint64_t> seed_from(const nlohmann::json& j, const char* where) {
  if (!j.contains("seed") || j["seed"].is_null()) return std::nullopt;
  return guarded(where, [&] { return j["seed"].get<uint64_t>(); });
}
inline nlohmann::json seed_json(const std::optional<uint64_t>& seed) {
  return seed ? nlohmann::json(*seed) : nlohmann::json(nullptr);
}

/// j[key] as Keras writes a factor: a number, or a list of two numbers. ConfigError naming
/// `where` otherwise.
inline Factor factor_from(const nlohmann::json& j, const char* key, const char* where) {
  return guarded(where, [&]() -> Factor {
    const nlohmann::json& v = j.at(key);
    if (v.is_number()) return Factor(v.get<double>());
    if (v.is_array() && v.size() == 2) return Factor(v[0].get<double>(), v[1].get<double>());
    KILN_THROW(ConfigError, "[", where, "] ", key, " must be a number or a list of two numbers, received ", v.dump(),
               ".");
  });
}

/// A [low, high] pair (value_range) from j[key], or `fallback` when absent.
inline std::array<double, 2> pair_from(const nlohmann::json& j, const char* key, std::array<double, 2> fallback,
                                       const char* where) {
  if (!j.contains(key)) return fallback;
  return guarded(where, [&]() -> std::array<double, 2> {
    const nlohmann::json& v = j.at(key);
    if (!v.is_array() || v.size() != 2)
      KILN_THROW(ConfigError, "[", where, "] ", key, " must be a list of two numbers, received ", v.dump(), ".");
    return {v[0].get<double>(), v[1].get<double>()};
  });
}

}  // namespace kiln::keras::internal
