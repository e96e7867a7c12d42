// A character LSTM language model, shared by examples/text_lstm.cpp and its end-to-end test
// (tests/e2e/text_lstm_test.cpp). Corpus: examples/char_corpus.h (the GPL-3 text Debian
// installs).
#pragma once

#include <memory>

#include "examples/char_corpus.h"
#include "kiln/keras/keras.h"

namespace kiln::examples::text_lstm {

struct TextLstmConfig {
  int64_t seq_len = 32;
  int64_t embed_dim = 32;
  int64_t units = 128;
};

/// tokens (batch, T) -> logits (batch, T, vocab): an Embedding, an LSTM returning its
/// sequence, and a Dense projection to the vocabulary at every step.
inline std::unique_ptr<keras::Functional> build_model(int64_t vocab, const TextLstmConfig& cfg = {}) {
  using namespace kiln::keras;
  KerasTensor tokens = Input({cfg.seq_len}, {.name = "tokens", .dtype = DType::kI32});
  KerasTensor h = Embedding(vocab, cfg.embed_dim)(tokens);
  h = LSTM(cfg.units, {.return_sequences = true})(h);
  KerasTensor logits = Dense(vocab)(h);
  return std::make_unique<Functional>(std::vector<KerasTensor>{tokens}, logits, FunctionalOptions{.name = "text_lstm"});
}

}  // namespace kiln::examples::text_lstm
