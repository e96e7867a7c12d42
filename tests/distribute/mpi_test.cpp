// MultiWorkerMirroredStrategy over MPI: `mpirun -np 2 mpi_train_driver` trains the seed MLP on
// two processes (loopback only); both ranks end with bit-identical weights that match one
// process training on the same global batches within 1e-5. Skips only when mpirun is absent.
// Over GPUs the workers join NCCL with an id rank 0 makes and broadcasts: `mpirun -np 2
// nccl_id_driver` checks that exchange (NCCL's real ids, no GPU needed) and that a rank which
// cannot join fails every rank instead of leaving them waiting.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kiln/distribute/mpi/mpi_world.h"
#include "kiln/distribute/strategy.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/gpus.h"
#include "tests/distribute/mpi_train_driver.h"
#include "tests/distribute/synthetic_mnist.h"
#include "tests/testing/relative_error.h"
#include "tests/testing/seed_mlp.h"
#include "tests/testing/temp_dir.h"

namespace kiln::distribute {
namespace {

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// The one-process run: DefaultStrategy, the driver's global batches whole.
std::vector<float> one_process_weights() {
  testing::SeedMlp mlp(runtime::default_backend(), /*seed=*/0);
  testing::SyntheticMnist data = testing::synthetic_mnist(testing::kDriverSteps * testing::kDriverGlobalBatch);
  const int64_t b = testing::kDriverGlobalBatch;
  for (int64_t s = 0; s < testing::kDriverSteps; ++s)
    mlp.train_step(data.x.slice_rows(s * b, (s + 1) * b), data.y.slice_rows(s * b, (s + 1) * b));
  std::vector<float> out;
  for (const Variable& v : mlp.params()) {
    auto d = v.storage().data<float>();
    out.insert(out.end(), d.begin(), d.end());
  }
  return out;
}

TEST(MultiWorkerMirroredStrategyTest, TwoMpiRanksMatchOneProcessAndEachOther) {
  const std::string mpiexec = KILN_MPIEXEC;
  if (mpiexec.empty() || !std::filesystem::exists(mpiexec)) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  if (!mpi::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (libopenmpi-dev); KILN_MPI=ON requires it";
  testing::TempDir dir;
  // Loopback only: shared memory and self transports on one host (no ssh), root allowed (CI).
  const std::string cmd = "env OMPI_MCA_btl=self,vader OMP_NUM_THREADS=1 " + mpiexec +
                          " --allow-run-as-root --oversubscribe -np 2 " KILN_MPI_DRIVER " " + dir.path().string() +
                          " > " + (dir.path() / "log.txt").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log(dir.path() / "log.txt");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << cmd << "\n" << text;
  EXPECT_NE(text.find("MultiWorkerMirroredStrategy: 2 replicas in sync (2 workers"), std::string::npos) << text;

  const std::vector<float> rank0 = read_floats((dir.path() / "rank0.bin").string());
  const std::vector<float> rank1 = read_floats((dir.path() / "rank1.bin").string());
  const std::vector<float> single = one_process_weights();
  ASSERT_EQ(rank0.size(), single.size());
  ASSERT_EQ(rank1.size(), single.size());
  EXPECT_EQ(std::memcmp(rank0.data(), rank1.data(), rank0.size() * sizeof(float)), 0) << "the ranks diverged";
  EXPECT_LT(testing::relative_l2_error(rank0, single), 1e-5);
}

// Runs `mpirun -np 2 nccl_id_driver <mode>` (a minute at most: a rank left waiting fails the
// test instead of hanging it) and returns each rank's line, by rank.
std::vector<std::string> nccl_id_driver(const std::string& mode, const testing::TempDir& dir) {
  const std::string cmd = "env OMPI_MCA_btl=self,vader timeout 60 " + std::string(KILN_MPIEXEC) +
                          " --allow-run-as-root --oversubscribe -np 2 " KILN_NCCL_ID_DRIVER " " + mode + " > " +
                          (dir.path() / "log.txt").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log(dir.path() / "log.txt");
  std::vector<std::string> by_rank(2);
  std::string text, line;
  while (std::getline(log, line)) {
    text += line + "\n";
    for (int r = 0; r < 2; ++r)
      if (line.rfind("rank " + std::to_string(r) + " ", 0) == 0) by_rank[static_cast<size_t>(r)] = line.substr(7);
  }
  EXPECT_EQ(rc, 0) << cmd << "\n" << text;
  EXPECT_FALSE(by_rank[0].empty() || by_rank[1].empty()) << text;
  return by_rank;
}

#define KILN_MPIRUN_OR_SKIP()                                                                      \
  if (std::string(KILN_MPIEXEC).empty() || !std::filesystem::exists(KILN_MPIEXEC))                 \
    GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";                                       \
  if (!mpi::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (libopenmpi-dev)"

// all_gather, reduce_scatter, all_to_all, collective_permute and grouped all_reduce over 4
// replicas on 2 ranks (2 logical CPU devices each): every replica's results are the
// hand-computed ones (mpi_collectives_driver checks them and says which differ).
TEST(MultiWorkerMirroredStrategyTest, CollectivesAcrossTwoRanksGiveEveryReplicaItsResult) {
  KILN_MPIRUN_OR_SKIP();
  testing::TempDir dir;
  const std::string cmd = "env OMPI_MCA_btl=self,vader OMP_NUM_THREADS=1 timeout 120 " + std::string(KILN_MPIEXEC) +
                          " --allow-run-as-root --oversubscribe -np 2 " KILN_MPI_COLLECTIVES_DRIVER " > " +
                          (dir.path() / "log.txt").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log(dir.path() / "log.txt");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << cmd << "\n" << text;
  for (int g = 0; g < 4; ++g)
    EXPECT_NE(text.find("replica " + std::to_string(g) + " of 4: all collectives match"), std::string::npos) << text;
}

TEST(NcclIdExchangeTest, RankZerosNcclIdReachesEveryRankOverMpi) {
  KILN_MPIRUN_OR_SKIP();
  if (!runtime::cuda_backend_built()) GTEST_SKIP() << "this build has no CUDA backend (NCCL makes the id)";
  testing::TempDir dir;
  const std::vector<std::string> lines = nccl_id_driver("id", dir);
  ASSERT_EQ(lines[0].rfind("id ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[0].size(), 3 + 2 * 128u) << lines[0];  // NCCL_UNIQUE_ID_BYTES
  EXPECT_NE(lines[0].find_first_not_of('0', 3), std::string::npos) << "an all-zero id: " << lines[0];
  EXPECT_EQ(lines[1], lines[0]);
}

TEST(NcclIdExchangeTest, ARankThatCannotJoinFailsEveryRank) {
  KILN_MPIRUN_OR_SKIP();
  testing::TempDir dir;
  const std::vector<std::string> lines = nccl_id_driver("refuse", dir);
  EXPECT_EQ(lines[0], "error [mpi] 1 of 2 processes cannot join the GPU collectives (their messages say why).");
  EXPECT_EQ(lines[1], "error [mpi] 1 of 2 processes cannot join the GPU collectives; this one (rank 1): no GPU on this "
                      "test rank");
}

// Without GPUs (or the CUDA backend) every worker's strategy over GPUs fails with the reason,
// and none is left waiting; on a machine with one GPU or more both ranks cannot share cuda:0
// (NCCL refuses two ranks on one GPU), which the device check does not run.
TEST(NcclIdExchangeTest, MultiWorkerStrategyOverGpusWithoutThemFailsEveryRank) {
  KILN_MPIRUN_OR_SKIP();
  const runtime::GpuSurvey gpus = runtime::find_gpus();
  if (!gpus.gpus.empty()) GTEST_SKIP() << "this machine has GPUs: two ranks would share cuda:0";
  testing::TempDir dir;
  const std::vector<std::string> lines = nccl_id_driver("strategy", dir);
  for (int r = 0; r < 2; ++r) {
    const std::string& l = lines[static_cast<size_t>(r)];
    EXPECT_EQ(l.rfind("error [mpi] 2 of 2 processes cannot join the GPU collectives; this one (rank " + std::to_string(r) +
                          "): ",
                      0),
              0u)
        << l;
    EXPECT_NE(l.find(runtime::cuda_backend_built() ? gpus.none_because : "no CUDA backend"), std::string::npos) << l;
  }
}

}  // namespace
}  // namespace kiln::distribute
