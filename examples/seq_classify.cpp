// Variable-length sequence classification with masking and a Bidirectional LSTM: which of two
// licence texts Debian ships (/usr/share/common-licenses/GPL-3 and Apache-2.0) does a piece
// of 12 to 48 characters come from? Each piece becomes character ids 1..127 (0 is padding),
// padded with 0 to kMaxLen steps; Embedding(mask_zero=true) marks the padding, which the
// Bidirectional LSTM skips (the forward direction stops at the piece's end, the backward one
// starts there), and a Dense layer gives the two logits. Pieces are shuffled with a fixed
// seed; 80% train.
//
// First run (2026-12-05, 2 busy shared cores, ~12 s per epoch): validation accuracy 0.78 after
// 6 epochs and 0.78-0.79 up to 16 (training accuracy 0.85), against 0.761 for always guessing
// GPL-3: pieces this short tell the two licences apart only a little; the example shows the
// masked, bidirectional pipeline rather than a strong classifier.
//
//   build/examples/seq_classify [epochs] [first licence] [second licence]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>

#include "kiln/keras/keras.h"

using namespace kiln;
using namespace kiln::keras;

namespace {

constexpr int64_t kMaxLen = 48;

struct Lines {
  std::vector<int32_t> ids;  // (n, kMaxLen), 0-padded
  std::vector<int32_t> labels;
  int64_t count = 0;
};

// Both texts cut into pieces of 12 to kMaxLen characters (whitespace runs as one space),
// labelled with their file's index, shuffled.
Lines read_pieces(const std::vector<std::string>& paths) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<size_t> length(12, kMaxLen);
  std::vector<std::pair<std::string, int32_t>> all;
  for (size_t label = 0; label < paths.size(); ++label) {
    std::ifstream in(paths[label]);
    if (!in)
      KILN_THROW(IOError, "[seq_classify] cannot read ", paths[label],
                 ". Hint: Debian's base-files package installs it; pass two other text files.");
    std::string text;
    for (std::string word; in >> word;) text += (text.empty() ? "" : " ") + word;
    for (size_t at = 0; at + 12 <= text.size();) {
      const size_t n = std::min(length(gen), text.size() - at);
      all.emplace_back(text.substr(at, n), static_cast<int32_t>(label));
      at += n;
    }
  }
  std::shuffle(all.begin(), all.end(), gen);
  Lines out;
  for (const auto& [piece, label] : all) {
    for (int64_t t = 0; t < kMaxLen; ++t)
      out.ids.push_back(t < static_cast<int64_t>(piece.size()) ? 1 + static_cast<unsigned char>(piece[size_t(t)]) % 127 : 0);
    out.labels.push_back(label);
    ++out.count;
  }
  return out;
}

data::Dataset slice(const Lines& lines, int64_t begin, int64_t end) {
  const auto b = static_cast<std::ptrdiff_t>(begin), e = static_cast<std::ptrdiff_t>(end);
  std::vector<int32_t> x(lines.ids.begin() + b * kMaxLen, lines.ids.begin() + e * kMaxLen);
  std::vector<int32_t> y(lines.labels.begin() + b, lines.labels.begin() + e);
  return data::Dataset::from_tensor_slices(
      {HostTensor::from_vector<int32_t>({end - begin, kMaxLen}, x), HostTensor::from_vector<int32_t>({end - begin}, y)});
}

}  // namespace

int main(int argc, char** argv) try {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 6;
  const std::vector<std::string> paths = {argc > 2 ? argv[2] : "/usr/share/common-licenses/GPL-3",
                                          argc > 3 ? argv[3] : "/usr/share/common-licenses/Apache-2.0"};
  const Lines lines = read_pieces(paths);
  const int64_t split = lines.count * 8 / 10;
  const auto first = std::count(lines.labels.begin() + split, lines.labels.end(), 0);
  const double majority = static_cast<double>(std::max(first, lines.count - split - first)) / double(lines.count - split);
  std::cout << lines.count << " pieces; training on " << split << ", validating on " << lines.count - split
            << " (always guessing the commoner licence scores " << majority << ")\n";
  data::Dataset train = slice(lines, 0, split).shuffle(1024, 1).batch(32);
  data::Dataset val = slice(lines, split, lines.count).batch(64);

  KerasTensor chars = Input({kMaxLen}, {.name = "chars", .dtype = DType::kI32});
  KerasTensor h = Embedding(128, 16, {.mask_zero = true})(chars);
  h = Bidirectional(LSTM(32))(h);
  KerasTensor logits = Dense(2)(h);
  Functional model({chars}, logits, {.name = "seq_classify"});
  model.compile({.optimizer = Adam({.learning_rate = 5e-3}),
                 .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  model.summary();
  model.fit(train, {.epochs = epochs, .validation_data = val, .verbose = 2});
  const Logs logs = model.evaluate(val, {.verbose = 0});
  std::printf("validation loss %.4f, accuracy %.4f\n", logs.at("loss"), logs.at("accuracy"));
  return 0;
} catch (const kiln::Error& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
