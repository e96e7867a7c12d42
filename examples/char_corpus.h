// A character corpus for the language-model examples (transformer_lm, text_lstm) and their
// end-to-end tests: a text file as ids over its distinct characters, (x, y) windows, and
// the examples' fit-and-sample run of a model of next-character logits.
//
// Default corpus: the text of the GNU General Public License version 3 at
// /usr/share/common-licenses/GPL-3 (35,149 bytes), installed on every Debian system by the
// essential package base-files. The licence text is itself copyrighted by the Free Software
// Foundation, which permits everyone to copy and distribute verbatim copies of it; Kiln only
// reads it at run time and ships no copy.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/data/dataset.h"
#include "kiln/keras/keras.h"

namespace kiln::examples {

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
    KILN_THROW(IOError, "[load_corpus] cannot read the corpus ", path,
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


/// The language-model examples' run: compiles `model` (Adam at `learning_rate`, sparse
/// cross-entropy from logits, accuracy), fits it on `train` validating on `val`, prints the
/// final validation loss, and samples 300 characters (temperature 0.8, seed 0) continuing
/// the validation text, which starts at `split`.
inline void fit_and_sample(keras::Model& model, const Corpus& corpus, data::Dataset train, data::Dataset val,
                           size_t split, int64_t seq_len, int epochs, int64_t steps_per_epoch, double learning_rate) {
  using namespace kiln::keras;
  model.compile({.optimizer = Adam({.learning_rate = learning_rate}),
                 .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  model.summary();
  model.fit(train, {.epochs = epochs, .steps_per_epoch = steps_per_epoch, .validation_data = val, .verbose = 2});
  const Logs final_logs = model.evaluate(val, {.verbose = 0});
  std::printf("validation loss %.4f (%.3f bits per character), accuracy %.4f\n", final_logs.at("loss"),
              final_logs.at("loss") / std::log(2.0), final_logs.at("accuracy"));
  std::vector<int32_t> prompt(corpus.ids.begin() + static_cast<std::ptrdiff_t>(split),
                              corpus.ids.begin() + static_cast<std::ptrdiff_t>(split) + seq_len);
  std::cout << "---- prompt ----\n" << corpus.text.substr(split, static_cast<size_t>(seq_len))
            << "\n---- sample (temperature 0.8, seed 0) ----\n"
            << sample(model, corpus, prompt, 300, 0.8, 0, seq_len) << "\n";
}

}  // namespace kiln::examples
