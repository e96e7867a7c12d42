// StringLookup and IntegerLookup (keras.layers): tokens to vocabulary ids and back, with
// Keras's OOV and mask ids, encodings and adapt (index_lookup.h holds the rules). They run on
// the host: `layer(host_tensor)` in a Dataset::map, or at the front of a model (Sequential or
// Functional), which predict/fit apply to each batch before the compiled step (docs/data.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/keras/layers/host_layer.h"
#include "kiln/keras/layers/index_lookup.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

/// The parts StringLookup and IntegerLookup share.
template <typename Key>
class IndexLookupLayer : public Layer, public HostLayer {
 public:
  using Layer::operator();
  /// The lookup on a host tensor (what a Dataset::map or a model's host prefix runs):
  /// "int": i64 ids of the input's shape; "one_hot": a depth axis added (replacing a last axis
  /// of 1); "multi_hot", "count", "tf_idf": f32 [depth] for a rank 0 or 1 input (one sample),
  /// [batch, depth] for rank 2; invert: ids back to tokens.
  HostTensor operator()(const HostTensor& inputs) const { return host_call(inputs); }
  HostTensor host_call(const HostTensor& inputs) const override;

  /// Learns the vocabulary (Keras's adapt): a rank-1 array holds one-token documents, a
  /// rank-2 array one document per row; a Dataset's elements (first component) are one
  /// document each when rank <= 1, one per row when rank 2. `steps` limits the elements read.
  void adapt(const HostTensor& data);
  void adapt(const data::Dataset& dataset, std::optional<int64_t> steps = std::nullopt);
  /// Keras's set_vocabulary / get_vocabulary / vocabulary_size.
  void set_vocabulary(const std::vector<Key>& vocabulary, const std::vector<double>& idf_weights = {});
  std::vector<Key> get_vocabulary(bool include_special_tokens = true) const {
    return table_->vocabulary(include_special_tokens);
  }
  int64_t vocabulary_size() const { return table_->vocabulary_size(); }
  Dims compute_output_shape(const Dims& input_shape) const override;
  // Keras 3 says int64 for an inverted lookup too (its spec, not the tokens it returns).
  DType output_dtype() const override { return table_->args().output_mode == "int" ? DType::kI64 : DType::kF32; }

  std::optional<std::string> vocabulary_asset() const override;
  void load_vocabulary_asset(const std::string& text) override;
  std::string get_config_with_vocabulary() const override;
  std::vector<float> saved_idf_weights() const override { return table_->idf_weights(); }
  void load_idf_weights(std::vector<float> weights) override { table_->set_idf_weights(std::move(weights)); }

 protected:
  IndexLookupLayer(internal::LookupArgs<Key> args, std::vector<Key> vocabulary, std::vector<double> idf_weights,
                   const std::string& name, const Dims& input_shape, const std::string& class_name);
  Tensor call(const Tensor& x, bool training) override;
  /// The layer's config with `vocabulary` (and the idf weights) written in, or, for nullopt,
  /// the vocabulary given at construction (Keras's get_config).
  /// Keras's IndexLookup keys (TextVectorization picks its own from them).
  virtual std::string config_with(const std::optional<std::vector<Key>>& vocabulary) const;

  // Shared by the copies a model makes of the layer, so adapt on the user's object reaches
  // the model's (as Normalization forwards to self_as).
  std::shared_ptr<internal::IndexTable<Key>> table_;
  std::vector<Key> input_vocabulary_;     // given at construction (Keras's input_vocabulary)
  std::vector<double> input_idf_weights_;

 private:
  std::string where() const;
};

struct StringLookupOptions {
  /// The most ids, special ones included (null: no cap).
  std::optional<int64_t> max_tokens = std::nullopt;
  int64_t num_oov_indices = 1;
  /// Id 0 in "int" mode; dropped in the other modes (null: no mask).
  std::optional<std::string> mask_token = std::nullopt;
  /// What invert gives for an unknown id.
  std::optional<std::string> oov_token = "[UNK]";
  /// A fixed vocabulary (empty: learn it with adapt). May start with the special tokens.
  std::vector<std::string> vocabulary = {};
  /// tf_idf's weights, one per vocabulary entry.
  std::vector<double> idf_weights = {};
  bool invert = false;
  /// "int", "one_hot", "multi_hot", "count" or "tf_idf".
  std::string output_mode = "int";
  bool pad_to_max_tokens = false;
  /// Kiln has no sparse tensors: must be false.
  bool sparse = false;
  /// Kiln compares bytes: "utf-8" only.
  std::string encoding = "utf-8";
  Dims input_shape = {};
  std::string name = "";
};

class StringLookup : public IndexLookupLayer<std::string> {
 public:
  explicit StringLookup(StringLookupOptions options = {});
  static StringLookup from_config(const std::string& config_json);
  std::string class_name() const override { return "StringLookup"; }
  std::string get_config() const override { return config_with(std::nullopt); }
  std::shared_ptr<Layer> shared_copy() const override { return std::make_shared<StringLookup>(*this); }
};

struct IntegerLookupOptions {
  std::optional<int64_t> max_tokens = std::nullopt;
  int64_t num_oov_indices = 1;
  std::optional<int64_t> mask_token = std::nullopt;
  std::optional<int64_t> oov_token = -1;
  std::vector<int64_t> vocabulary = {};
  /// Kiln computes in int64: "int64" only.
  std::string vocabulary_dtype = "int64";
  std::vector<double> idf_weights = {};
  bool invert = false;
  std::string output_mode = "int";
  bool sparse = false;
  bool pad_to_max_tokens = false;
  Dims input_shape = {};
  std::string name = "";
};

class IntegerLookup : public IndexLookupLayer<int64_t> {
 public:
  explicit IntegerLookup(IntegerLookupOptions options = {});
  static IntegerLookup from_config(const std::string& config_json);
  std::string class_name() const override { return "IntegerLookup"; }
  std::string get_config() const override { return config_with(std::nullopt); }
  std::shared_ptr<Layer> shared_copy() const override { return std::make_shared<IntegerLookup>(*this); }
};

extern template class IndexLookupLayer<std::string>;
extern template class IndexLookupLayer<int64_t>;

}  // namespace kiln::keras
