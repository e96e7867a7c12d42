// The collectives in compiled steps of a MirroredStrategy over 2 and 4 logical CPU devices:
// each replica's results (collective_cases.h) and gradients against hand-computed values.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/distribute/in_process_collectives.h"
#include "kiln/distribute/logical_devices.h"
#include "kiln/distribute/strategy.h"
#include "kiln/ir/builder.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/trace/function.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/collective.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "tests/distribute/collective_cases.h"
#include "tests/testing/expect_error.h"

namespace kiln::distribute {
namespace {

using Values = std::vector<float>;

HostTensor tensor(Dims dims, const std::function<float(int64_t i, int64_t j)>& at) {
  HostTensor t(Shape(DType::kF32, dims));
  auto d = t.data<float>();
  for (int64_t i = 0; i < dims[0]; ++i)
    for (int64_t j = 0; j < dims[1]; ++j) d[static_cast<size_t>(i * dims[1] + j)] = at(i, j);
  return t;
}

using testing::collective_x_at;

class CollectivesStepTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { config::set_logical_cpu_devices(4); }
  void TearDown() override { config::set_logical_cpu_devices(1); }

  int n() const { return GetParam(); }
  std::shared_ptr<MirroredStrategy> strategy() const {
    std::vector<std::string> devices;
    for (int r = 0; r < n(); ++r) devices.push_back(str_cat("cpu:", r));
    return std::make_shared<MirroredStrategy>(devices);
  }
  // Runs `f` on every replica with inputs[r] and returns each replica's outputs as floats.
  std::vector<std::vector<Values>> run(Function& f, const std::vector<std::vector<HostTensor>>& inputs) const {
    auto s = strategy();
    PerReplica<std::vector<HostTensor>> per{inputs};
    auto out = s->run([&](const std::vector<HostTensor>& in) { return f(in); }, per);
    std::vector<std::vector<Values>> values(out.size());
    for (size_t r = 0; r < out.size(); ++r)
      for (const HostTensor& t : out[r]) values[r].push_back(t.to_vector<float>());
    return values;
  }
  std::vector<std::vector<HostTensor>> xs() const {
    std::vector<std::vector<HostTensor>> in;
    for (int r = 0; r < n(); ++r) in.push_back({testing::collective_x(n(), r)});
    return in;
  }
};

TEST_P(CollectivesStepTest, EveryReplicaGetsItsHandComputedResult) {
  const int n = this->n();
  Function f("collectives", [n](const std::vector<Tensor>& in) { return testing::apply_collectives(in[0], n); });
  for (int repeat = 0; repeat < 2; ++repeat) {
    const auto out = run(f, xs());
    for (int r = 0; r < n; ++r) {
      const auto want = testing::expected_collectives(n, r);
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_EQ(out[static_cast<size_t>(r)][k], want[k]) << testing::kCollectiveNames[k] << " on replica " << r;
    }
  }
  EXPECT_EQ(f.trace_count(), 1);
  // Each ran as a step of the compiled program, meeting the other replicas there.
  const std::string steps = f.last_executable()->describe();
  for (const char* op : {"all_gather", "reduce_scatter", "all_to_all", "collective_permute"})
    EXPECT_NE(steps.find(str_cat(op, "(", n, " replicas)")), std::string::npos) << steps;
  EXPECT_NE(steps.find(str_cat("all_reduce(", n, " replicas, groups of ", n / 2, ")")), std::string::npos) << steps;
}

// Each replica differentiates its own loss; through the collectives that is the gradient of
// the sum of every replica's loss (the transposes move cotangents across replicas).
TEST_P(CollectivesStepTest, GradientsFlowBackAcrossTheReplicas) {
  const int n = this->n();
  const auto ring = testing::ring_pairs(n);
  // c_r weighs the gathered [N*N, 2]; d_r the scattered [1, 2]; e_r the moved [1, 2N].
  auto weight = [](int r, int64_t i, int64_t j) { return 0.5f * static_cast<float>(r + 1) + 0.25f * static_cast<float>(2 * i + j); };
  Function f("collective_grads", [&](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &c = in[1], &d = in[2], &e = in[3];
    GradientTape tape;
    const Tensor loss = reduce_sum(all_gather(x, 0) * c) + reduce_sum(reduce_scatter(x, ir::ReduceKind::kSum, 0) * d) +
                        reduce_sum(reduce_scatter(x, ir::ReduceKind::kMean, 0) * d) +
                        reduce_sum(all_to_all(x, 0, 1) * e) + reduce_sum(collective_permute(x, ring) * x);
    return tape.gradient(loss, std::vector<Tensor>{x});
  });
  std::vector<std::vector<HostTensor>> in = xs();
  for (int r = 0; r < n; ++r) {
    in[static_cast<size_t>(r)].push_back(tensor({n * n, 2}, [&](int64_t i, int64_t j) { return weight(r, i, j); }));
    in[static_cast<size_t>(r)].push_back(tensor({1, 2}, [&](int64_t i, int64_t j) { return weight(r, i, j); }));
    in[static_cast<size_t>(r)].push_back(tensor({1, 2 * n}, [&](int64_t i, int64_t j) { return weight(r, i, j); }));
  }
  const auto out = run(f, in);
  for (int r = 0; r < n; ++r) {
    Values want;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < 2; ++j) {
        float g = 0;
        for (int s = 0; s < n; ++s) g += weight(s, r * n + i, j);  // block r of every c_s
        g += weight(i, 0, j);                                      // row i of the sum is replica i's, weighed by d_i
        g += weight(i, 0, j) / static_cast<float>(n);              // and of the mean, by d_i / N
        g += weight(i, 0, 2 * r + j);                              // row i went to replica i, at block r of its e
        g += collective_x_at((r + n - 1) % n, i, j) + collective_x_at((r + 1) % n, i, j);  // <x_{s-1}, x_s> summed over s
        want.push_back(g);
      }
    EXPECT_EQ(out[static_cast<size_t>(r)][0], want) << "replica " << r;
  }
}

TEST_P(CollectivesStepTest, AShapeThatDoesNotSplitOverTheReplicasIsAClearError) {
  Function f("bad", [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{reduce_scatter(x[0], ir::ReduceKind::kSum, 1)};
  });
  std::vector<std::vector<HostTensor>> in;
  for (int r = 0; r < n(); ++r) in.push_back({HostTensor(Shape(DType::kF32, {2, 3}))});
  KILN_EXPECT_ERROR(run(f, in), ShapeError,
                    str_cat("into ", n(), " equal parts (one per replica of a group), but 3 is not divisible by ", n()));
  Function g("groups", [](const std::vector<Tensor>& x) { return std::vector<Tensor>{all_gather(x[0], 0, {{0, 1, 2}})}; });
  KILN_EXPECT_ERROR(run(g, in), ValueError,
                    str_cat("replica_groups {{0,1,2}} cover 3 replicas, but the step runs on ", n()));
}

// A program traced for another replica count (or whose groups do not cover the replicas) is
// refused when the CPU backend compiles it for these collectives, naming both counts.
TEST_P(CollectivesStepTest, AProgramForAnotherReplicaCountIsACompileError) {
  auto m = std::make_unique<ir::Module>("gather");
  ir::Builder b(m->entry());
  m->entry()->set_outputs({b.all_gather(b.parameter(Shape(DType::kF32, {2}), "x"), 0, 3)});
  runtime::CompileOptions options;
  options.collectives = std::make_shared<InProcessCollectives>(n(), n());
  KILN_EXPECT_ERROR(runtime::make_backend("cpu")->compile(std::move(m), options), CompileError,
                    str_cat("it was made for 3 replicas in one group, but the step runs on ", n()));
}

INSTANTIATE_TEST_SUITE_P(LogicalCpuDevices, CollectivesStepTest, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int>& p) { return str_cat(p.param, "Replicas"); });

TEST(CollectivesOutsideAStrategyTest, OneReplicaIsItsOwnGroup) {
  const HostTensor x = tensor({2, 2}, [](int64_t i, int64_t j) { return collective_x_at(0, i, j); });
  EXPECT_EQ(all_gather(Tensor(x), 0).value().to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(collective_permute(Tensor(x), {}).value().to_vector<float>(), Values(4, 0.f));
  EXPECT_EQ(collective_permute(Tensor(x), {{0, 0}}).value().to_vector<float>(), x.to_vector<float>());
  KILN_EXPECT_ERROR(all_gather(Tensor(x), 0, {{0, 1}}), ValueError, "cover 2 replicas, but the step runs on 1");
}

}  // namespace
}  // namespace kiln::distribute
