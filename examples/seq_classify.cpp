// Variable-length sequence classification with masking and a Bidirectional LSTM: which of two
// licence texts Debian ships (/usr/share/common-licenses/GPL-3 and Apache-2.0) does a line come
// from? Each non-empty line becomes character ids 1..V (0 is padding), cut or padded with 0
// to kMaxLen steps; Embedding(mask_zero=true) marks the padding, which the Bidirectional LSTM
// skips (the forward direction stops at the line's end, the backward one starts there), and
// a Dense layer gives the two logits. Lines are shuffled with a fixed seed; 80% train.
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

// Every non-empty line of both files with its file's index as the label, shuffled.
Lines read_lines(const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, int32_t>> all;
  for (size_t label = 0; label < paths.size(); ++label) {
    std::ifstream in(paths[label]);
    if (!in)
      KILN_THROW(IOError, "[seq_classify] cannot read ", paths[label],
                 ". Hint: Debian's base-files package installs it; pass two other text files.");
    for (std::string line; std::getline(in, line);) {
      line.erase(0, line.find_first_not_of(" \t"));
      if (line.size() >= 8) all.emplace_back(line, static_cast<int32_t>(label));
    }
  }
  std::shuffle(all.begin(), all.end(), std::mt19937(7));
  Lines out;
  for (const auto& [line, label] : all) {
    for (int64_t t = 0; t < kMaxLen; ++t)
      out.ids.push_back(t < static_cast<int64_t>(line.size()) ? 1 + static_cast<unsigned char>(line[size_t(t)]) % 127 : 0);
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
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 15;
  const std::vector<std::string> paths = {argc > 2 ? argv[2] : "/usr/share/common-licenses/GPL-3",
                                          argc > 3 ? argv[3] : "/usr/share/common-licenses/Apache-2.0"};
  const Lines lines = read_lines(paths);
  const int64_t split = lines.count * 8 / 10;
  const auto first = std::count(lines.labels.begin() + split, lines.labels.end(), 0);
  const double majority = static_cast<double>(std::max(first, lines.count - split - first)) / double(lines.count - split);
  std::cout << lines.count << " lines; training on " << split << ", validating on " << lines.count - split
            << " (always guessing the commoner licence scores " << majority << ")\n";
  data::Dataset train = slice(lines, 0, split).shuffle(1024, 1).batch(32);
  data::Dataset val = slice(lines, split, lines.count).batch(64);

  KerasTensor chars = Input({kMaxLen}, {.name = "chars", .dtype = DType::kI32});
  KerasTensor h = Embedding(128, 16, {.mask_zero = true})(chars);
  h = Bidirectional(LSTM(32))(h);
  KerasTensor logits = Dense(2)(h);
  Functional model({chars}, logits, {.name = "seq_classify"});
  model.compile({.optimizer = Adam({.learning_rate = 1e-2}),
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
