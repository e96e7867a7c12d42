// The seed MLP (tests/testing/seed_mlp.h) under MirroredStrategy: 4 replicas x 32 rows give the
// weights of 1 replica x 128 (the all_reduce in the compiled step averages the replicas'
// gradients), every replica's copy stays bit-identical, and two runs are bit-identical.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kiln/distribute/logical_devices.h"
#include "kiln/distribute/strategy.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/trace/trace_context.h"
#include "tests/distribute/synthetic_mnist.h"
#include "tests/testing/relative_error.h"
#include "tests/testing/seed_mlp.h"

namespace kiln::distribute {
namespace {

constexpr int64_t kGlobalBatch = 128, kSteps = 20;

data::Element batch(const testing::SyntheticMnist& d, int64_t step) {
  return {d.x.slice_rows(step * kGlobalBatch, (step + 1) * kGlobalBatch),
          d.y.slice_rows(step * kGlobalBatch, (step + 1) * kGlobalBatch)};
}

// Trains a fresh seed MLP for kSteps global batches and returns it (all replicas' copies
// inside its variables).
std::unique_ptr<testing::SeedMlp> train(const std::shared_ptr<Strategy>& strategy, const testing::SyntheticMnist& d) {
  std::unique_ptr<testing::SeedMlp> mlp;
  {
    auto scope = strategy->scope();
    mlp = std::make_unique<testing::SeedMlp>(runtime::default_backend(), /*seed=*/0);
  }
  for (int64_t s = 0; s < kSteps; ++s) {
    PerReplica<float> losses = strategy->run(
        [&](const data::Element& shard) { return mlp->train_step(shard[0], shard[1]); }, strategy->split_batch(batch(d, s)));
    EXPECT_EQ(losses.size(), static_cast<size_t>(strategy->num_local_replicas()));
  }
  return mlp;
}

bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.byte_size())) == 0;
}

class MirroredEquivalenceTest : public ::testing::Test {
 protected:
  void SetUp() override { config::set_logical_cpu_devices(4); }
  void TearDown() override { config::set_logical_cpu_devices(1); }
  testing::SyntheticMnist data_ = testing::synthetic_mnist(kSteps * kGlobalBatch);
};

TEST_F(MirroredEquivalenceTest, FourReplicasOf32MatchOneReplicaOf128) {
  auto one = train(std::make_shared<DefaultStrategy>(), data_);
  auto strategy = std::make_shared<MirroredStrategy>();
  ASSERT_EQ(strategy->num_replicas_in_sync(), 4);
  auto four = train(strategy, data_);
  for (size_t i = 0; i < one->params().size(); ++i) {
    const Variable& v = four->params()[i];
    EXPECT_LT(testing::relative_l2_error(v.storage(), one->params()[i].storage()), 1e-5) << v.name();
    EXPECT_FALSE(same_bytes(v.storage(), testing::SeedMlp(runtime::default_backend(), 0).params()[i].storage()))
        << v.name() << " did not train";
    ASSERT_EQ(v.state()->mirrors.size(), 3u) << v.name() << " is not mirrored";
    for (const HostTensor& copy : v.state()->mirrors) EXPECT_TRUE(same_bytes(copy, v.storage())) << v.name();
  }
}

TEST_F(MirroredEquivalenceTest, FourReplicasAreBitIdenticalAcrossRuns) {
  auto first = train(std::make_shared<MirroredStrategy>(), data_);
  auto second = train(std::make_shared<MirroredStrategy>(), data_);
  for (size_t i = 0; i < first->params().size(); ++i)
    EXPECT_TRUE(same_bytes(first->params()[i].storage(), second->params()[i].storage())) << first->params()[i].name();
}

TEST_F(MirroredEquivalenceTest, TheCompiledStepHoldsOneAllReducePerGradient) {
  auto strategy = std::make_shared<MirroredStrategy>(std::vector<std::string>{"cpu:0", "cpu:1"});
  auto mlp = train(strategy, testing::synthetic_mnist(kSteps * kGlobalBatch));
  const std::string& ir = mlp->train_function().last_ir();
  size_t count = 0;
  for (size_t at = ir.find("all_reduce("); at != std::string::npos; at = ir.find("all_reduce(", at + 1)) ++count;
  EXPECT_EQ(count, mlp->params().size()) << ir;
  EXPECT_NE(mlp->train_function().last_executable()->describe().find("all_reduce(2 replicas)"), std::string::npos);
}

}  // namespace
}  // namespace kiln::distribute
