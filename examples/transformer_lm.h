// A small decoder-only Transformer character language model, shared by
// examples/transformer_lm.cpp and its end-to-end test (tests/e2e/transformer_lm_test.cpp).
// Corpus: examples/char_corpus.h (the GPL-3 text Debian installs).
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "examples/char_corpus.h"
#include "kiln/keras/keras.h"

namespace kiln::examples::transformer_lm {

using examples::Corpus;
using examples::kCorpusPath;
using examples::load_corpus;
using examples::sample;
using examples::windows;

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

}  // namespace kiln::examples::transformer_lm
