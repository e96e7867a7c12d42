// Hashing (keras.layers.Hashing) of integer inputs: each value's decimal text hashed by
// FarmHash's Fingerprint64 into num_bins bins, as tf.strings.to_hash_bucket_fast does for
// Keras (so ids match Keras's for the same num_bins and mask_value). Kiln's IR has no 64-bit
// bitwise ops, so the hash runs on the host: in a host map (Hashing::hash) or on concrete
// tensors; a traced call (inside a compiled step or predict) is a CompileError that says so.
// Strings and salt (SipHash) are not built.
#pragma once

#include <optional>

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct HashingOptions {
  /// Values equal to it go to bin 0 and the rest to [1, num_bins) (null: no mask).
  std::optional<int64_t> mask_value = std::nullopt;
  /// Keras's salt picks SipHash (strong hash); not built: must be unset.
  std::optional<int64_t> salt = std::nullopt;
  std::string output_mode = "int";  // Kiln builds "int" (i64 bin ids)
  bool sparse = false;
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

class Hashing : public Layer {
 public:
  explicit Hashing(int64_t num_bins, HashingOptions options = {});
  static Hashing from_config(const std::string& config_json);
  std::string class_name() const override { return "Hashing"; }
  std::string get_config() const override;
  /// The bin ids (i64, same shape) of an integer tensor, on the host: what a Dataset::map runs.
  HostTensor hash(const HostTensor& values) const;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t num_bins_;
  HashingOptions options_;
};

namespace internal {
/// FarmHash's Fingerprint64 (farmhashna::Hash64) of `size` bytes: TensorFlow's
/// to_hash_bucket_fast hash. Built for the lengths an int64's decimal text has (0..32 bytes);
/// longer input is a ValueError.
uint64_t fingerprint64(const char* data, size_t size);
}  // namespace internal

}  // namespace kiln::keras
