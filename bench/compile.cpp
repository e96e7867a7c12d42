// bench/compile: how long Kiln takes to compile the train steps of the seed MLP, the convnet
// and the Transformer example, cold (an empty kernel cache: LLVM generates every fused
// kernel) and warm (a second process reading the disk cache). It runs itself three times as
// children over one fresh KILN_CACHE_DIR (cold, disk, disk_unwarmed: see child()) and prints one JSON line per model and phase, then a
// summary against the targets (MLP <= 150 ms cold and <= 15 ms from the disk cache, convnet
// <= 400 ms cold).
//
// compile_ms = the first step (trace + passes + lowering + code generation + one run) less
// the median of the next steps, so it counts everything a user waits for before training.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "examples/transformer_lm.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/cpu/cpu_jit.h"
#include "tests/testing/seed_cnn.h"
#include "tests/testing/seed_mlp.h"

namespace {

using namespace kiln;

// First-step ms less the median of the following steps.
template <typename Step>
double compile_ms(Step step) {
  bench::Stopwatch first;
  step(0);
  const double first_ms = first.seconds() * 1e3;
  std::vector<double> next;
  for (int i = 1; i <= 5; ++i) {
    bench::Stopwatch w;
    step(i);
    next.push_back(w.seconds() * 1e3);
  }
  std::sort(next.begin(), next.end());
  return first_ms - next[next.size() / 2];
}

void report(const std::string& model, const std::string& phase, double ms, const cpu::CpuJit::Stats& before) {
  cpu::CpuJit::Stats after = cpu::CpuJit::instance() != nullptr ? cpu::CpuJit::instance()->stats() : cpu::CpuJit::Stats{};
  bench::JsonLine line;
  line.add("bench", "compile").add("model", model).add("phase", phase).add("compile_ms", ms)
      .add("kernels_generated", after.compiled - before.compiled)
      .add("kernels_from_disk", after.disk_hits - before.disk_hits)
      .add("llvm_ms", after.generate_ms - before.generate_ms)
      .add("load_ms", after.load_ms - before.load_ms);
  line.print();
}

cpu::CpuJit::Stats jit_stats() {
  return cpu::CpuJit::instance() != nullptr ? cpu::CpuJit::instance()->stats() : cpu::CpuJit::Stats{};
}

// `phase` "cold" or "disk" runs in the seed program's order: the backend exists (auto_detect
// and the model's variables create it, S1-S6) before the data is loaded (S7-S10) and the first
// step compiles, so the backend's warm-up (runtime/cpu/cpu_warmup.h: oneDNN's gemm kernels,
// 20-30 ms on an AVX2 CPU, and LLVM's first compile) overlaps the data loading as it does for
// a user. "disk_unwarmed" creates the backend only after the data is loaded, right before the
// first step: what a program that compiles the moment its backend exists waits for.
int child(const std::string& phase) {
  if (phase != "disk_unwarmed") runtime::default_backend();
  testing::MnistF32 data = testing::load_mnist_f32();
  std::vector<int32_t> perm(60000);
  std::iota(perm.begin(), perm.end(), 0);
  {
    HostTensor xb(Shape(DType::kF32, {128, 784})), yb(Shape(DType::kI32, {128}));
    testing::gather_batch(data, perm, 0, xb, yb);
    cpu::CpuJit::Stats before = jit_stats();
    testing::SeedMlp mlp(runtime::default_backend());
    report("mlp", phase, compile_ms([&](int) { mlp.train_step(xb, yb); }), before);
  }
  {
    HostTensor xb(Shape(DType::kF32, {128, 28, 28, 1})), yb(Shape(DType::kI32, {128}));
    testing::gather_batch(data, perm, 0, xb, yb);
    cpu::CpuJit::Stats before = jit_stats();
    testing::SeedCnn cnn(runtime::default_backend());
    report("convnet", phase, compile_ms([&](int s) { cnn.train_step(xb, yb, s); }), before);
  }
  {
    namespace lm = examples::transformer_lm;
    lm::Corpus corpus = lm::load_corpus();
    lm::LmConfig cfg;
    data::Dataset train = lm::windows(corpus.ids, 0, corpus.ids.size(), cfg.seq_len, 64).repeat().batch(32, true);
    cpu::CpuJit::Stats before = jit_stats();
    auto model = lm::build_model(static_cast<int64_t>(corpus.vocab.size()), cfg);
    model->compile({.optimizer = keras::Adam({.learning_rate = 2e-3}),
                    .loss = keras::SparseCategoricalCrossentropy({.from_logits = true})});
    report("transformer", phase, compile_ms([&](int) {
      model->fit(train, {.epochs = 1, .steps_per_epoch = 1, .verbose = 0});
    }), before);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "--child") return child(argv[2]);
  const std::string dir = (std::filesystem::temp_directory_path() / ("kiln_bench_compile_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  std::map<std::string, double> ms;  // "model phase" -> compile_ms
  for (const char* phase : {"cold", "disk", "disk_unwarmed"}) {
    const std::string out = bench::run_command("KILN_CACHE_DIR=" + dir + " /proc/" + std::to_string(::getpid()) +
                                               "/exe --child " + phase + " 2>/dev/null");
    std::fputs(out.c_str(), stdout);
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      auto field = [&](const std::string& key) {
        const size_t at = line.find("\"" + key + "\": ");
        return at == std::string::npos ? std::string() : line.substr(at + key.size() + 4);
      };
      std::string model = field("model"), value = field("compile_ms");
      if (model.empty() || value.empty()) continue;
      model = model.substr(1, model.find('"', 1) - 1);
      ms[model + " " + phase] = std::atof(value.c_str());
    }
  }
  std::filesystem::remove_all(dir);
  bench::JsonLine summary;
  summary.add("bench", "compile.summary")
      .add("mlp_cold_ms", ms["mlp cold"]).add("mlp_cold_target_ms", 150.0)
      .add("mlp_disk_ms", ms["mlp disk"]).add("mlp_disk_target_ms", 15.0)
      .add("convnet_cold_ms", ms["convnet cold"]).add("convnet_cold_target_ms", 400.0)
      .add("mlp_disk_unwarmed_ms", ms["mlp disk_unwarmed"])
      .add("convnet_disk_ms", ms["convnet disk"])
      .add("transformer_cold_ms", ms["transformer cold"]).add("transformer_disk_ms", ms["transformer disk"]);
  summary.print();
  return ms.size() == 9 ? 0 : 1;
}
