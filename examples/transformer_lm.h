// A small decoder-only Transformer character language model, shared by
// examples/transformer_lm.cpp and its end-to-end test (tests/e2e/transformer_lm_test.cpp).
//
// Corpus: the text of the GNU General Public License version 3 at
// /usr/share/common-licenses/GPL-3 (35,149 bytes), installed on every Debian system by the
// essential package base-files. The licence text is itself copyrighted by the Free Software
// Foundation, which permits everyone to copy and distribute verbatim copies of it; Kiln only
// reads it at run time and ships no copy.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/data/dataset.h"
#include "kiln/keras/keras.h"

namespace kiln::examples::transformer_lm {

inline constexpr const char* kCorpusPath = "/usr/share/common-licenses/GPL-3";

/// The text as ids over its sorted distinct characters.
struct Corpus {
  std::string text;
  std::string vocab;  // id -> character
  std::vector<int32_t> ids;
  int32_t id_of(char c) const { return static_cast<int32_t>(vocab.find(c)); }
};

inline Corpus load_corpus(const std::string& path = kCorpusPath) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    KILN_THROW(IOError, "[transformer_lm] cannot read the corpus ", path,
               ". Hint: it comes with Debian's base-files package; pass another text file as the first argument.");
  std::ostringstream text;
  text << in.rdbuf();
  Corpus c;
  c.text = text.str();
  c.vocab = c.text;
  std::sort(c.vocab.begin(), c.vocab.end());
  c.vocab.erase(std::unique(c.vocab.begin(), c.vocab.end()), c.vocab.end());
  for (char ch : c.text) c.ids.push_back(c.id_of(ch));
  return c;
}

/// (x, y) windows of `seq_len` ids from ids[begin, end), y shifted by one, every `stride`.
inline data::Dataset windows(const std::vector<int32_t>& ids, size_t begin, size_t end, int64_t seq_len, int64_t stride) {
  std::vector<int32_t> xs, ys;
  int64_t n = 0;
  for (size_t start = begin; start + static_cast<size_t>(seq_len) + 1 <= end; start += static_cast<size_t>(stride), ++n) {
    xs.insert(xs.end(), ids.begin() + static_cast<std::ptrdiff_t>(start), ids.begin() + static_cast<std::ptrdiff_t>(start) + seq_len);
    ys.insert(ys.end(), ids.begin() + static_cast<std::ptrdiff_t>(start) + 1, ids.begin() + static_cast<std::ptrdiff_t>(start) + seq_len + 1);
  }
  return data::Dataset::from_tensor_slices(
      {HostTensor::from_vector<int32_t>({n, seq_len}, xs), HostTensor::from_vector<int32_t>({n, seq_len}, ys)});
}

/// Learned position embeddings added to the token embeddings: x (batch, T, d) + table (T, d)
/// (keras_nlp's PositionEmbedding, written as a custom layer).
class PositionEmbedding : public keras::Layer {
 public:
  explicit PositionEmbedding(std::string name = "") : Layer(std::move(name), {}) {}
  std::string class_name() const override { return "PositionEmbedding"; }

 protected:
  void build_weights(const Dims& input_shape) override {
    table_ = add_weight("embeddings", input_shape, keras::Initializer("random_uniform"));
  }
  Tensor call(const Tensor& x, bool /*training*/) override { return x + table_.read(); }

 private:
  Variable table_;
};

struct LmConfig {
  int64_t seq_len = 64;
  int64_t d_model = 128;
  int64_t num_heads = 4;
  int64_t num_layers = 2;
  int64_t mlp_ratio = 4;
  std::string activation = "gelu";
};

/// tokens (batch, T) -> logits (batch, T, vocab): embeddings + positions, pre-norm blocks of
/// causal self-attention and a 4x MLP with residual adds, a final LayerNormalization and a
/// Dense projection to the vocabulary.
inline std::unique_ptr<keras::Functional> build_model(int64_t vocab, const LmConfig& cfg = {}) {
  using namespace kiln::keras;
  KerasTensor tokens = Input({cfg.seq_len}, {.name = "tokens", .dtype = DType::kI32});
  KerasTensor h = Embedding(vocab, cfg.d_model)(tokens);
  h = (*std::make_shared<PositionEmbedding>())(h);
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    KerasTensor a = LayerNormalization()(h);
    a = MultiHeadAttention(cfg.num_heads, cfg.d_model / cfg.num_heads)(a, a, {.use_causal_mask = true});
    h = Add()({h, a});
    KerasTensor m = LayerNormalization()(h);
    m = Dense(cfg.mlp_ratio * cfg.d_model, {.activation = cfg.activation})(m);
    m = Dense(cfg.d_model)(m);
    h = Add()({h, m});
  }
  KerasTensor logits = Dense(vocab)(LayerNormalization()(h));
  return std::make_unique<Functional>(std::vector<KerasTensor>{tokens}, logits, FunctionalOptions{.name = "transformer_lm"});
}

/// Continues `prompt` (its last seq_len ids form the window) by `count` characters, sampling
/// each from softmax(logits / temperature) with a fixed seed (temperature 0: greedy).
inline std::string sample(keras::Model& model, const Corpus& corpus, std::vector<int32_t> context, int count,
                          double temperature, uint32_t seed, int64_t seq_len) {
  std::mt19937 gen(seed);
  std::string out;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> window(context.end() - seq_len, context.end());
    HostTensor logits = model.predict(HostTensor::from_vector<int32_t>({1, seq_len}, window));
    const std::vector<float> all = logits.to_vector<float>();
    const auto vocab = static_cast<size_t>(logits.dims().back());
    std::vector<double> last(all.end() - static_cast<std::ptrdiff_t>(vocab), all.end());
    int32_t next = 0;
    if (temperature <= 0) {
      next = static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
    } else {
      const double top = *std::max_element(last.begin(), last.end());
      for (double& l : last) l = std::exp((l - top) / temperature);
      next = static_cast<int32_t>(std::discrete_distribution<size_t>(last.begin(), last.end())(gen));
    }
    context.push_back(next);
    out += corpus.vocab[static_cast<size_t>(next)];
  }
  return out;
}

}  // namespace kiln::examples::transformer_lm
