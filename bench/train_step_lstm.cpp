// bench/train_step_lstm: the train step of examples/text_lstm (Embedding 32 -> LSTM 128
// returning sequences -> Dense to the vocabulary; batch 32 x 32 characters of the GPL-3 text;
// sparse crossentropy from logits, Adam 1e-2, accuracy) against PyTorch's nn.LSTM on the same
// shapes, in the same run (issue 20). Kiln's step is fit's: the median of the times between
// on_train_batch_begin and on_train_batch_end (the step program and its logs) after the first
// step (trace and compile). The peer is bench/torch_lstm_step.py, 2 threads each.
//
//   build/bench/train_step_lstm [--steps N] [--no-peer] [peers dir (default ../shared/peers)]
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/fit_step_time.h"
#include "examples/text_lstm.h"

namespace {

using namespace kiln;
using namespace kiln::keras;
namespace lm = kiln::examples::text_lstm;

constexpr int64_t kBatch = 32;

// Median ms per fit step over `steps` steps after one warm-up step.
double kiln_ms_per_step(const examples::Corpus& corpus, const lm::TextLstmConfig& cfg, int64_t steps) {
  std::unique_ptr<Functional> model = lm::build_model(static_cast<int64_t>(corpus.vocab.size()), cfg);
  model->compile({.optimizer = Adam({.learning_rate = 1e-2}),
                  .loss = SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  data::Dataset train = examples::windows(corpus.ids, 0, corpus.ids.size(), cfg.seq_len, 3)
                            .shuffle(4096, /*seed=*/1).repeat().batch(kBatch, /*drop_remainder=*/true);
  return bench::median_fit_step_ms(*model, train, steps);
}

}  // namespace

int main(int argc, char** argv) try {
  int64_t steps = 30;
  bool peer = true;
  std::string peers = "../shared/peers";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-peer") peer = false;
    else if (a == "--steps" && i + 1 < argc) steps = std::atoll(argv[++i]);
    else peers = a;
  }
  const examples::Corpus corpus = examples::load_corpus();
  const lm::TextLstmConfig cfg;
  const double kiln_ms = kiln_ms_per_step(corpus, cfg, steps);
  bench::JsonLine line;
  line.add("bench", "train_step_lstm").add("vocab", static_cast<int64_t>(corpus.vocab.size()))
      .add("seq_len", cfg.seq_len).add("embed", cfg.embed_dim).add("units", cfg.units).add("batch", kBatch)
      .add("steps", steps).add("kiln_ms_per_step", kiln_ms);
  if (peer) {
    const std::string json = bench::run_pytorch_script(
        KILN_TORCH_LSTM_STEP, str_cat("--threads 2 --vocab ", corpus.vocab.size(), " --seq-len ", cfg.seq_len, " --embed ",
                                      cfg.embed_dim, " --units ", cfg.units, " --batch ", kBatch,
                                      " --lr 1e-2 --steps ", steps, " --peers ", peers));
    const double torch_ms = bench::json_number(json, "ms_per_step_median");
    line.add("pytorch_ms_per_step", torch_ms)
        .add("pytorch_blas", bench::json_string(json, "kind", "unavailable"))
        .add("kiln_over_pytorch_speed", kiln_ms > 0 && torch_ms > 0 ? torch_ms / kiln_ms : 0.0);
  }
  line.print();
  return 0;
} catch (const kiln::Error& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
