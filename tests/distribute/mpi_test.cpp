// MultiWorkerMirroredStrategy over MPI: `mpirun -np 2 mpi_train_driver` trains the seed MLP on
// two processes (loopback only); both ranks end with bit-identical weights that match one
// process training on the same global batches within 1e-5. Skips only when mpirun is absent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "kiln/distribute/mpi/mpi_world.h"
#include "kiln/distribute/strategy.h"
#include "kiln/runtime/backend_registry.h"
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

}  // namespace
}  // namespace kiln::distribute
