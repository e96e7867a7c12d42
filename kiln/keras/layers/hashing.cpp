// Hashing: FarmHash Fingerprint64 (farmhashna's Hash64 for inputs up to 32 bytes, written
// from the published algorithm) of each integer's decimal text, modulo the bins.
#include "kiln/keras/layers/hashing.h"

#include <cstring>
#include <string>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"

namespace kiln::keras {
namespace internal {
namespace {

constexpr uint64_t k0 = 0xc3a5c85c97cb3127ULL;
constexpr uint64_t k1 = 0xb492b66fbe98f273ULL;
constexpr uint64_t k2 = 0x9ae16a3b2f90404fULL;

// Little-endian loads, as FarmHash reads on every platform.
uint64_t fetch64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint64_t fetch32(const char* p) {
  uint64_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint64_t rotate(uint64_t v, int shift) { return shift == 0 ? v : (v >> shift) | (v << (64 - shift)); }
uint64_t shift_mix(uint64_t v) { return v ^ (v >> 47); }

uint64_t hash_len16(uint64_t u, uint64_t v, uint64_t mul) {
  uint64_t a = (u ^ v) * mul;
  a ^= a >> 47;
  uint64_t b = (v ^ a) * mul;
  b ^= b >> 47;
  return b * mul;
}

uint64_t hash_len0to16(const char* s, size_t len) {
  if (len >= 8) {
    const uint64_t mul = k2 + len * 2;
    const uint64_t a = fetch64(s) + k2;
    const uint64_t b = fetch64(s + len - 8);
    const uint64_t c = rotate(b, 37) * mul + a;
    const uint64_t d = (rotate(a, 25) + b) * mul;
    return hash_len16(c, d, mul);
  }
  if (len >= 4) {
    const uint64_t mul = k2 + len * 2;
    const uint64_t a = fetch32(s);
    return hash_len16(len + (a << 3), fetch32(s + len - 4), mul);
  }
  if (len > 0) {
    const auto a = static_cast<uint8_t>(s[0]), b = static_cast<uint8_t>(s[len >> 1]),
               c = static_cast<uint8_t>(s[len - 1]);
    const uint32_t y = static_cast<uint32_t>(a) + (static_cast<uint32_t>(b) << 8);
    const uint32_t z = static_cast<uint32_t>(len) + (static_cast<uint32_t>(c) << 2);
    return shift_mix(y * k2 ^ z * k0) * k2;
  }
  return k2;
}

uint64_t hash_len17to32(const char* s, size_t len) {
  const uint64_t mul = k2 + len * 2;
  const uint64_t a = fetch64(s) * k1;
  const uint64_t b = fetch64(s + 8);
  const uint64_t c = fetch64(s + len - 8) * mul;
  const uint64_t d = fetch64(s + len - 16) * k2;
  return hash_len16(rotate(a + b, 43) + rotate(c, 30) + d, a + rotate(b + k2, 18) + c, mul);
}

}  // namespace

uint64_t fingerprint64(const char* data, size_t size) {
  if (size <= 16) return hash_len0to16(data, size);
  if (size <= 32) return hash_len17to32(data, size);
  KILN_THROW(ValueError, "[fingerprint64] Kiln builds FarmHash for up to 32 bytes (an integer's text), received ",
             size, ".");
}

}  // namespace internal

Hashing::Hashing(int64_t num_bins, HashingOptions options)
    : Layer(options.name, options.input_shape, options.dtype), num_bins_(num_bins), options_(std::move(options)) {
  const std::string at = options_.name.empty() ? "Hashing" : options_.name;
  if (num_bins < 1 || (options_.mask_value && num_bins < 2))
    KILN_THROW(ValueError, "[", at, "] num_bins must be at least 1 (2 with a mask_value), received ", num_bins, ".");
  if (options_.salt)
    KILN_THROW(ValueError, "[", at, "] salt selects Keras's SipHash (strong hash), which Kiln does not build; ",
               "remove salt to use FarmHash.");
  if (options_.output_mode != "int")
    KILN_THROW(ValueError, "[", at, "] Kiln builds output_mode \"int\" only, received \"", options_.output_mode,
               "\". Hint: follow with CategoryEncoding(num_bins) for one_hot, multi_hot or count.");
  if (options_.sparse) KILN_THROW(ValueError, "[", at, "] sparse=true is not built: Kiln has no sparse tensors.");
}

HostTensor Hashing::hash(const HostTensor& values) const {
  if (!is_integral(values.dtype()))
    KILN_THROW(DTypeError, "[", name().empty() ? "Hashing" : name(), "] Kiln hashes integer inputs only, received ",
               values.shape(), ". Strings (Keras's main use) are not built.");
  const HostTensor v = values.astype(DType::kI64);
  HostTensor out(Shape(DType::kI64, values.dims()));
  const auto in = v.data<int64_t>();
  auto dst = out.data<int64_t>();
  // Keras: the mask takes bin 0 and the rest hash into num_bins - 1 bins, shifted up by one.
  const int64_t bins = options_.mask_value ? num_bins_ - 1 : num_bins_;
  for (size_t i = 0; i < in.size(); ++i) {
    if (options_.mask_value && in[i] == *options_.mask_value) {
      dst[i] = 0;
      continue;
    }
    const std::string text = std::to_string(in[i]);  // tf.as_string's decimal form
    const uint64_t h = internal::fingerprint64(text.data(), text.size()) % static_cast<uint64_t>(bins);
    dst[i] = static_cast<int64_t>(h) + (options_.mask_value ? 1 : 0);
  }
  return out;
}

Tensor Hashing::call(const Tensor& x, bool /*training*/) {
  if (x.is_symbolic())
    KILN_THROW(CompileError, "[", name(), "] Hashing runs on the host: Kiln's IR has no 64-bit bitwise ops for ",
               "FarmHash. Hint: hash in the input pipeline, ds.map([&](HostTensor v) { return layer.hash(v); }), ",
               "and feed the ids to the model.");
  return Tensor(hash(x.value()));
}

std::string Hashing::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["dtype"] = "int64";  // Keras's output dtype for bin ids
  j["num_bins"] = num_bins_;
  j["salt"] = nullptr;
  j["mask_value"] = options_.mask_value ? nlohmann::json(*options_.mask_value) : nlohmann::json(nullptr);
  j["output_mode"] = options_.output_mode;
  j["sparse"] = options_.sparse;
  return j.dump();
}

constexpr internal::ConfigKey kHashingKeys[] = {
    {"num_bins"}, {"salt"}, {"mask_value"}, {"output_mode"}, {"sparse", "false"}};
Hashing Hashing::from_config(const std::string& config_json) {
  const char* where = "Hashing.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kHashingKeys}, "Hashing");
  HashingOptions o = internal::guarded(where, [&] {
    HashingOptions r{.output_mode = j.value("output_mode", "int"),
                     .input_shape = internal::input_shape_from(j),
                     .name = j.value("name", "")};
    if (j.contains("mask_value") && !j["mask_value"].is_null()) {
      if (!j["mask_value"].is_number_integer())
        KILN_THROW(ConfigError, "[", where, "] Kiln hashes integers; mask_value ", j["mask_value"].dump(),
                   " is not one.");
      r.mask_value = j["mask_value"].get<int64_t>();
    }
    if (j.contains("salt") && !j["salt"].is_null()) r.salt = 0;  // refused by the constructor
    return r;
  });
  Hashing l(internal::int_field(j, "num_bins", where), std::move(o));
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
