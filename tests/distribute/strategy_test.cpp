// Strategies: device parsing, scopes and mirrored variables, run/reduce, batch splitting,
// error propagation across replicas, and the cluster resolver.
#include "kiln/distribute/strategy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "kiln/distribute/cluster_resolver.h"
#include "kiln/distribute/distributed_dataset.h"
#include "kiln/distribute/logical_devices.h"
#include "kiln/distribute/mpi/mpi_world.h"
#include "kiln/runtime/gpus.h"
#include "kiln/trace/function.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/trace_context.h"
#include "kiln/trace/variable.h"
#include "tests/testing/expect_error.h"

namespace kiln::distribute {
namespace {

class StrategyTest : public ::testing::Test {
 protected:
  void SetUp() override { config::set_logical_cpu_devices(4); }
  void TearDown() override { config::set_logical_cpu_devices(1); }
};

HostTensor iota_rows(int64_t rows, int64_t cols) {
  HostTensor t(Shape(DType::kF32, {rows, cols}));
  float v = 0;
  for (float& x : t.data<float>()) x = v++;
  return t;
}

TEST_F(StrategyTest, MirroredStrategyUsesEveryLogicalDeviceWithItsThreadShare) {
  auto s = std::make_shared<MirroredStrategy>();
  EXPECT_EQ(s->num_replicas_in_sync(), 4);
  EXPECT_EQ(s->devices(), (std::vector<std::string>{"cpu:0", "cpu:1", "cpu:2", "cpu:3"}));
  EXPECT_EQ(s->threads_per_replica(), threads_per_device(4));
  EXPECT_NE(s->describe().find("MirroredStrategy: 4 replicas in sync (cpu:0 .. cpu:3"), std::string::npos) << s->describe();
}

TEST_F(StrategyTest, MirroredStrategyRejectsUnknownAndRepeatedDevices) {
  KILN_EXPECT_ERROR(MirroredStrategy({"cpu:0", "cpu:4"}), ConfigError, "unknown device 'cpu:4'");
  KILN_EXPECT_ERROR(MirroredStrategy({"gpu:0"}), ConfigError, "KILN_CPU_DEVICES");
  KILN_EXPECT_ERROR(MirroredStrategy({"cpu:1", "/device:CPU:1"}), ConfigError, "listed twice");
  EXPECT_EQ(MirroredStrategy({"/cpu:2", "cpu:3"}).devices(), (std::vector<std::string>{"cpu:2", "cpu:3"}));
  KILN_EXPECT_ERROR(config::set_logical_cpu_devices(0), ValueError, "1 to 1024");
}

// GPU replicas need the CUDA backend, NCCL and the GPUs: without them, the error says which is
// missing (scripts/device_check.sh runs a strategy over two GPUs where a machine has them).
TEST_F(StrategyTest, MirroredStrategyOverGpusSaysWhatIsMissing) {
  KILN_EXPECT_ERROR(MirroredStrategy({"cuda:0", "cpu:1"}), ConfigError, "devices mix GPUs and cpu:1");
  KILN_EXPECT_ERROR(MirroredStrategy({"cuda:x"}), ConfigError, "'cuda:x' is not a GPU");
  const runtime::GpuSurvey gpus = runtime::find_gpus();
  if (gpus.gpus.size() >= 2) GTEST_SKIP() << "this machine has " << gpus.gpus.size() << " GPUs";
  const std::string why = !gpus.gpus.empty()                ? "no device cuda:1"
                          : runtime::cuda_backend_built() ? gpus.none_because
                                                          : "this build has no CUDA backend";
  KILN_EXPECT_ERROR(MirroredStrategy({"cuda:0", "cuda:1"}), ConfigError, why);
}

TEST_F(StrategyTest, ScopeMirrorsNewVariablesAndEagerAssignsReachEveryCopy) {
  auto s = std::make_shared<MirroredStrategy>(std::vector<std::string>{"cpu:0", "cpu:1", "cpu:2"});
  Variable outside("outside", HostTensor::scalar<float>(1.0f));
  Variable inside;
  {
    auto scope = s->scope();
    EXPECT_TRUE(has_strategy());
    EXPECT_EQ(current_strategy(), s);
    inside = Variable("inside", HostTensor::scalar<float>(2.0f));
  }
  EXPECT_FALSE(has_strategy());
  EXPECT_EQ(current_strategy()->name(), "DefaultStrategy");
  EXPECT_TRUE(outside.state()->mirrors.empty());
  ASSERT_EQ(inside.state()->mirrors.size(), 2u);
  inside.assign(Tensor::scalar(5.0));
  for (const HostTensor& m : inside.state()->mirrors) EXPECT_EQ(m.to_vector<float>()[0], 5.0f);
}

TEST_F(StrategyTest, ScopeNeedsASharedStrategy) {
  MirroredStrategy s({"cpu:0"});
  KILN_EXPECT_ERROR(auto scope = s.scope(), ConfigError, "std::shared_ptr");
}

TEST_F(StrategyTest, SplitBatchGivesEachReplicaItsRows) {
  auto s = std::make_shared<MirroredStrategy>();
  HostTensor x = iota_rows(8, 3), y(Shape(DType::kI32, {8}));
  PerReplica<data::Element> shards = s->split_batch({x, y});
  ASSERT_EQ(shards.size(), 4u);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(shards[r][0].dims(), (Dims{2, 3}));
    EXPECT_EQ(shards[r][1].dims(), (Dims{2}));
    EXPECT_EQ(shards[r][0].to_vector<float>()[0], static_cast<float>(r * 6));
  }
}

// tf.distribute's split of a partial batch: the first rows % R replicas get one row more.
TEST_F(StrategyTest, AGlobalBatchThatDoesNotDivideIsSplitUnevenly) {
  auto s = std::make_shared<MirroredStrategy>();
  PerReplica<data::Element> shards = s->split_batch({iota_rows(130, 2)});
  const std::vector<int64_t> rows{33, 33, 32, 32}, first{0, 33, 66, 98};
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(shards[r][0].dims(), (Dims{rows[r], 2})) << r;
    EXPECT_EQ(shards[r][0].to_vector<float>()[0], static_cast<float>(first[r] * 2)) << r;
  }
  shards = s->split_batch({iota_rows(3, 2)});
  EXPECT_EQ(shards[3][0].dims(), (Dims{0, 2}));
  KILN_EXPECT_ERROR(s->split_batch({HostTensor::scalar<float>(1.0f)}), DataError, "expected batched elements");
}

TEST_F(StrategyTest, DistributeDatasetYieldsPerReplicaShardsOfEachGlobalBatch) {
  auto s = std::make_shared<MirroredStrategy>(std::vector<std::string>{"cpu:0", "cpu:1"});
  data::Dataset ds = data::Dataset::from_tensor_slices({iota_rows(12, 1)}).batch(6, /*drop_remainder=*/true);
  DistributedDataset dist = s->distribute_dataset(ds);
  DistributedDataset::Iterator it = dist.iterator();
  std::vector<float> firsts;
  while (auto shards = it.next()) {
    ASSERT_EQ(shards->size(), 2u);
    for (const data::Element& e : shards->values) firsts.push_back(e[0].to_vector<float>()[0]);
  }
  EXPECT_EQ(firsts, (std::vector<float>{0, 3, 6, 9}));

  // From a function: the per-worker batch is the context's per-replica batch times local replicas.
  DistributedDataset from_fn = s->distribute_datasets_from_function([](const InputContext& c) {
    EXPECT_EQ(c.num_input_pipelines, 1);
    return data::Dataset::from_tensor_slices({iota_rows(12, 1)})
        .shard(c.num_input_pipelines, c.input_pipeline_id)
        .batch(c.per_replica_batch_size(8) * 2, /*drop_remainder=*/true);
  });
  auto first = from_fn.iterator().next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)[1][0].to_vector<float>(), (std::vector<float>{4, 5, 6, 7}));
}

TEST_F(StrategyTest, ReduceSumsAndAveragesInReplicaOrder) {
  auto s = std::make_shared<MirroredStrategy>(std::vector<std::string>{"cpu:0", "cpu:1", "cpu:2"});
  PerReplica<HostTensor> v{{HostTensor::scalar<float>(1.f), HostTensor::scalar<float>(2.f), HostTensor::scalar<float>(6.f)}};
  EXPECT_EQ(s->reduce(ReduceOp::kSum, v).to_vector<float>()[0], 9.0f);
  EXPECT_EQ(s->reduce(ReduceOp::kMean, v).to_vector<float>()[0], 3.0f);
  KILN_EXPECT_ERROR(s->reduce(ReduceOp::kSum, PerReplica<HostTensor>{{HostTensor::scalar<float>(1.f)}}), ValueError,
                    "one value per local replica (3), received 1");
}

TEST_F(StrategyTest, RunCompilesOneAllReducePerReplicaAndEveryReplicaSeesTheSum) {
  auto s = std::make_shared<MirroredStrategy>();
  Function f("sum_over_replicas", [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{all_reduce(in[0] * 1.0, ir::ReduceKind::kSum), all_reduce(in[0], ir::ReduceKind::kMean)};
  });
  PerReplica<HostTensor> inputs;
  for (int r = 0; r < 4; ++r) inputs.values.push_back(HostTensor::scalar<float>(static_cast<float>(r + 1)));
  for (int repeat = 0; repeat < 3; ++repeat) {
    auto out = s->run([&](const HostTensor& x) { return f({x}); }, inputs);
    for (size_t r = 0; r < 4; ++r) {
      EXPECT_EQ(out[r][0].to_vector<float>()[0], 10.0f);
      EXPECT_EQ(out[r][1].to_vector<float>()[0], 2.5f);
    }
  }
  EXPECT_EQ(f.trace_count(), 1);  // one signature; the replicas' compiles count once
  // Outside a replica context all_reduce is the identity and emits nothing.
  EXPECT_EQ(f({HostTensor::scalar<float>(3.f)})[0].to_vector<float>()[0], 3.0f);
}

TEST_F(StrategyTest, AnErrorInOneReplicaReleasesTheOthersAndIsRethrown) {
  auto s = std::make_shared<MirroredStrategy>();
  Function f("step", [](const std::vector<Tensor>& in) { return all_reduce(in[0], ir::ReduceKind::kSum); });
  PerReplica<HostTensor> inputs;
  for (int r = 0; r < 4; ++r) inputs.values.push_back(HostTensor::scalar<float>(1.f));
  auto failing = [&](const HostTensor& x) {
    if (trace::current_replica_context()->replica_id == 2) KILN_THROW(DataError, "replica 2 has bad data");
    return f({x});  // the others wait at the all_reduce until released
  };
  KILN_EXPECT_ERROR(s->run(failing, inputs), DataError, "replica 2 has bad data");
  // The strategy is usable afterwards.
  auto out = s->run([&](const HostTensor& x) { return f({x}); }, inputs);
  EXPECT_EQ(out[3][0].to_vector<float>()[0], 4.0f);
}

TEST_F(StrategyTest, AllReduceOutsideACompiledStepIsAnError) {
  auto s = std::make_shared<MirroredStrategy>(std::vector<std::string>{"cpu:0", "cpu:1"});
  PerReplica<HostTensor> inputs{{HostTensor::scalar<float>(1.f), HostTensor::scalar<float>(2.f)}};
  KILN_EXPECT_ERROR(s->run([](const HostTensor& x) { return all_reduce(Tensor(x), ir::ReduceKind::kSum).value(); }, inputs),
                    ValueError, "inside a compiled step");
}

TEST_F(StrategyTest, AutoDetectPicksMirroredOverLogicalDevicesAndSaysWhy) {
  std::ostringstream out;
  std::shared_ptr<Strategy> s = auto_detect(out);
  EXPECT_EQ(s->name(), "MirroredStrategy");
  EXPECT_EQ(s->num_replicas_in_sync(), 4);
  EXPECT_NE(out.str().find("cpu:3  logical device"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("because: no accelerator; 4 logical CPU devices"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("num_replicas_in_sync = 4"), std::string::npos) << out.str();
}

// Run in a fresh process (threadsafe death tests re-execute the binary), where the environment
// is read for the first time.
TEST(StrategyDeathTest, AutoDetectRejectsABadKilnCpuDevicesAsAConfigError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("KILN_CPU_DEVICES", "abc", 1);
        try {
          auto_detect();
        } catch (const ConfigError& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(3);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(3), "KILN_CPU_DEVICES.*received 'abc'");
}

// OMPI_COMM_WORLD_SIZE=2 left in the environment of a process mpirun did not start: MPI
// initializes a world of one. auto_detect says so and trains alone instead of picking a
// MultiWorkerMirroredStrategy of one replica.
TEST(StrategyDeathTest, AnMpiWorldSizeWithoutMpirunIsReportedAndNotUsed) {
  if (!mpi::built_with_mpi()) GTEST_SKIP() << "this build has no MPI";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
        std::ostringstream out;
        std::shared_ptr<Strategy> s = auto_detect(out);
        std::fprintf(stderr, "%s", out.str().c_str());
        std::exit(s->name() == "MultiWorkerMirroredStrategy" ? 1 : 3);
      },
      ::testing::ExitedWithCode(3),
      "announces 2 processes \\(OMPI_COMM_WORLD_SIZE=2\\), but MPI reports a world of 1: this process was likely "
      "not started by mpirun.*Strategy: DefaultStrategy");
}

// The resolver's choice with the machine injected (GPUs, an MPI launch): under mpirun each
// process takes the GPU of its local rank when this host has one per process, else its CPUs;
// without MPI two GPUs or more get a MirroredStrategy over them.
TEST(StrategyCandidatesTest, AutoDetectsChoiceFollowsGpusAndMpiRanks) {
  using Kind = StrategyCandidate::Kind;
  auto machine = [](int gpus, int world, int local_rank, int local_size, int cpu_devices) {
    ClusterInfo info;
    for (int g = 0; g < gpus; ++g) info.gpu_survey.gpus.push_back({str_cat("cuda:", g), "NVIDIA H200", int64_t{141} << 30, 90});
    info.gpus = gpus;
    info.mpi_world_size = world;
    info.mpi_local_rank = local_rank;
    info.mpi_local_size = local_size;
    info.logical_cpu_devices = cpu_devices;
    return info;
  };
  auto kinds = [](const std::vector<StrategyCandidate>& c) {
    std::vector<Kind> k;
    for (const StrategyCandidate& x : c) k.push_back(x.kind);
    return k;
  };
  // 2 processes per host with 2 GPUs: local rank 1 takes cuda:1, NCCL across the workers.
  std::vector<StrategyCandidate> c = strategy_candidates(machine(2, 4, 1, 2, 1));
  ASSERT_EQ(kinds(c), (std::vector<Kind>{Kind::kMultiWorkerGpu, Kind::kMultiWorkerCpu, Kind::kMirroredGpus}));
  EXPECT_EQ(c[0].devices, std::vector<std::string>{"cuda:1"});
  EXPECT_EQ(c[0].why, "an MPI world of 4 processes, one GPU each (this one: cuda:1), gradients all-reduced by NCCL across them");
  EXPECT_EQ(c[1].why, "an MPI world of 4 processes");
  // More processes on this host than GPUs, or a launcher that does not say: the CPUs (then, as
  // a process alone, its GPU).
  EXPECT_EQ(kinds(strategy_candidates(machine(1, 2, 0, 2, 1))),
            (std::vector<Kind>{Kind::kMultiWorkerCpu, Kind::kMirroredGpus}));
  EXPECT_EQ(kinds(strategy_candidates(machine(4, 2, -1, -1, 1))),
            (std::vector<Kind>{Kind::kMultiWorkerCpu, Kind::kMirroredGpus}));
  // One process: two GPUs or more, then the logical CPU devices.
  c = strategy_candidates(machine(2, 1, -1, -1, 4));
  ASSERT_EQ(kinds(c), (std::vector<Kind>{Kind::kMirroredGpus, Kind::kMirroredCpus}));
  EXPECT_EQ(c[0].devices, (std::vector<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_EQ(kinds(strategy_candidates(machine(0, 1, -1, -1, 4))), std::vector<Kind>{Kind::kMirroredCpus});
  // One GPU: its one replica (the steps compile for it), before the logical CPU devices.
  c = strategy_candidates(machine(1, 1, -1, -1, 4));
  ASSERT_EQ(kinds(c), (std::vector<Kind>{Kind::kMirroredGpus, Kind::kMirroredCpus}));
  EXPECT_EQ(c[0].devices, std::vector<std::string>{"cuda:0"});
  EXPECT_EQ(c[0].why, "1 GPU: one replica on cuda:0, the steps compiled for it");
  EXPECT_TRUE(strategy_candidates(machine(0, 1, -1, -1, 1)).empty());  // the DefaultStrategy
}

TEST(StrategyDeathTest, MultiWorkerStrategyTakesOneGpuOrTheCpus) {
  if (!mpi::built_with_mpi()) GTEST_SKIP() << "this build has no MPI";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // In a child: MPI initializes once per process.
  EXPECT_EXIT(
      {
        try {
          MultiWorkerMirroredStrategy({"cuda:0", "cuda:1"});
        } catch (const ConfigError& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(3);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(3),
      "devices must be one GPU per worker \\(\"cuda:N\", one process per GPU\\), or none for the CPU devices; "
      "received cuda:0, cuda:1.");
}

TEST_F(StrategyTest, AutoDetectPicksTheGpusElseTheDefaultStrategyWithOneCpuDevice) {
  config::set_logical_cpu_devices(1);
  std::ostringstream out;
  std::shared_ptr<Strategy> s = auto_detect(out);
  // The report says why there is no GPU (no CUDA backend built, no driver, no device), or lists
  // the GPUs: a MirroredStrategy over them, one replica per GPU (one GPU: one replica there).
  const runtime::GpuSurvey gpus = runtime::find_gpus();
  if (!gpus.gpus.empty()) {
    EXPECT_EQ(s->name(), "MirroredStrategy") << out.str();
    EXPECT_EQ(s->num_replicas_in_sync(), static_cast<int>(gpus.gpus.size()));
    EXPECT_EQ(s->devices()[0], "cuda:0");
    ASSERT_NE(s->replica_backend(0), nullptr);
    EXPECT_EQ(s->replica_backend(0)->device().name(), "cuda:0");
    EXPECT_NE(out.str().find(str_cat(gpus.gpus[0].device, "  ", gpus.gpus[0].model)), std::string::npos) << out.str();
    return;
  }
  EXPECT_EQ(s->name(), "DefaultStrategy");
  EXPECT_EQ(s->num_replicas_in_sync(), 1);
  EXPECT_EQ(s->replica_backend(0), nullptr);
  EXPECT_NE(out.str().find(str_cat("GPU: none (", gpus.none_because, ")")), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("no accelerator found and one CPU device: the default CPU strategy"), std::string::npos)
      << out.str();
}

}  // namespace
}  // namespace kiln::distribute
