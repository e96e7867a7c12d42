// bench/train_step_wide_mlp: peer workload W3, the wide MLP (784 -> 1024 relu -> 1024 relu ->
// 10, batch 512, sparse softmax cross-entropy, Adam), its whole train step compiled by Kiln for
// the CPU, under float32 and mixed_bfloat16 (default --policy both; --steps N per timed run).
// Prints each policy's samples/s and planned peak and activation bytes, and mixed_bfloat16
// over float32 from the same run, with oneDNN's bf16 ISA (bench/policy_compare.h).
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "bench/bench_main.h"
#include "bench/policy_compare.h"
#include "kiln/runtime/backend_registry.h"
#include "tests/testing/seed_mlp.h"

int main(int argc, char** argv) {
  using namespace kiln;
  constexpr int64_t kBatch = 512, kStepsPerRun = 20, kRuns = 5;
  std::vector<bench::Policy> policies = bench::policies_from_args(argc, argv);
  if (policies.empty()) policies = {{"float32", DType::kF32}, {"mixed_bfloat16", DType::kBF16}};

  testing::MnistF32 data = testing::load_mnist_f32();
  std::vector<int32_t> perm(60000);
  std::iota(perm.begin(), perm.end(), 0);
  HostTensor xb(Shape(DType::kF32, {kBatch, 784})), yb(Shape(DType::kI32, {kBatch}));
  std::mt19937 rng(0);
  std::vector<std::unique_ptr<testing::SeedMlp>> models;
  const int64_t batches = 60000 / kBatch;
  bench::compare_policies("train_step_wide_mlp", policies, kBatch, kRuns, bench::int_arg(argc, argv, "--steps", kStepsPerRun),
                          [&] { std::shuffle(perm.begin(), perm.end(), rng); }, [&](DType compute) {
    testing::SeedMlp* m = models
                              .emplace_back(std::make_unique<testing::SeedMlp>(runtime::default_backend(), 0, compute,
                                                                               std::vector<int64_t>{784, 1024, 1024, 10}))
                              .get();
    return bench::PolicyStep{[&, m](int64_t s) {
                               testing::gather_batch(data, perm, (s % batches) * kBatch, xb, yb);
                               m->train_step(xb, yb);
                             },
                             [m] { return m->train_function().last_executable(); }};
  });
  return 0;
}
