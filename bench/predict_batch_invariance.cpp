// predict_batch_invariance: for the seed MLP, the convnet and the LSTM text model, whether
// every sample's predictions have the same bits with batch_size 1, 7, 32 and 128 (batch-
// invariant predict, the default), and what that costs: predict over 1024 samples at
// batch_size 128 and 32, batch-invariant against oneDNN's kernels (batch_invariant = false),
// timed alternately, medians. One JSON line per model and batch size.
#include <cstring>

#include "bench/bench_main.h"
#include "tests/testing/inference_models.h"

using namespace kiln;

namespace {

constexpr int64_t kRows = 1024;

bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.byte_size())) == 0;
}

}  // namespace

int main() {
  for (testing::InferenceModel& m : testing::inference_models(kRows)) {
    const HostTensor sample = m.x.slice_rows(0, 128);
    const HostTensor reference = m.model->predict(sample, {.batch_size = 128, .batch_invariant = true});
    bool identical = true;
    for (int64_t batch : {1, 7, 32})
      identical = identical && same_bytes(m.model->predict(sample, {.batch_size = batch, .batch_invariant = true}), reference);
    const HostTensor fast = m.model->predict(sample, {.batch_size = 128, .batch_invariant = false});
    bool fast_identical = true;
    for (int64_t batch : {1, 7, 32})
      fast_identical = fast_identical && same_bytes(m.model->predict(sample, {.batch_size = batch, .batch_invariant = false}), fast);
    for (int64_t batch : {128, 32}) {
      auto [invariant_ms, default_ms] = bench::paired_median_ms_per_step(
          7, 1, [] {}, [&](int64_t) { m.model->predict(m.x, {.batch_size = batch, .batch_invariant = true}); },
          [&](int64_t) { m.model->predict(m.x, {.batch_size = batch, .batch_invariant = false}); });
      bench::JsonLine()
          .add("bench", "predict_batch_invariance")
          .add("model", m.name)
          .add("bits_equal_batch_sizes_1_7_32_128", identical ? "yes" : "no")
          .add("default_kernels_bits_equal", fast_identical ? "yes" : "no")
          .add("batch_size", batch)
          .add("samples", kRows)
          .add("invariant_ms", invariant_ms)
          .add("default_ms", default_ms)
          .add("cost", invariant_ms / default_ms)
          .print();
    }
  }
  return 0;
}
