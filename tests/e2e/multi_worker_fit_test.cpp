// Model::fit under MultiWorkerMirroredStrategy: `mpirun -np 2 multi_worker_fit_driver` fits the
// seed Keras model on two processes; each rank matches a one-process fit on the same global
// batches (the driver checks), the ranks end bit-identical, and only rank 0 prints progress
// and writes files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/testing/temp_dir.h"

namespace {

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(MultiWorkerFitTest, TwoRanksFitLikeOneProcessAndOnlyRankZeroPrints) {
  const std::string mpiexec = KILN_MPIEXEC;
  if (mpiexec.empty() || !std::filesystem::exists(mpiexec)) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  if (!KILN_HAS_MPI_BUILD) GTEST_SKIP() << "this build has no MPI (libopenmpi-dev)";
  kiln::testing::TempDir dir;
  const std::string cmd = "env OMPI_MCA_btl=self,vader OMP_NUM_THREADS=1 " + mpiexec +
                          " --allow-run-as-root --oversubscribe -np 2 " KILN_FIT_DRIVER " " + dir.path().string() +
                          " > " + (dir.path() / "log.txt").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string log = read(dir.path() / "log.txt");
  ASSERT_EQ(rc, 0) << cmd << "\n" << log;
  EXPECT_NE(log.find("worker 0: loss"), std::string::npos) << log;
  EXPECT_NE(log.find("worker 1: loss"), std::string::npos) << log;
  // The progress bar ("Epoch 1/2") and the resolver's report come from rank 0 alone.
  size_t epochs = 0;
  for (size_t at = log.find("Epoch 1/2"); at != std::string::npos; at = log.find("Epoch 1/2", at + 1)) ++epochs;
  EXPECT_EQ(epochs, 1u) << log;
  EXPECT_NE(log.find("MultiWorkerMirroredStrategy: 2 replicas in sync"), std::string::npos) << log;
  const std::string r0 = read(dir.path() / "rank0.bin"), r1 = read(dir.path() / "rank1.bin");
  ASSERT_FALSE(r0.empty());
  EXPECT_TRUE(r0 == r1) << "the ranks' weights differ";
  // File-writing callbacks write (and report) on worker 0 only: one line per epoch.
  size_t saves = 0;
  for (size_t at = log.find("saving model to"); at != std::string::npos; at = log.find("saving model to", at + 1)) ++saves;
  EXPECT_EQ(saves, 2u) << log;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "w0_history.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "w0_02.weights.h5"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "w1_history.csv"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "w1_02.weights.h5"));
}

// The seed program (examples/mnist_mlp, one epoch) on two ranks over loopback: auto_detect()
// picks MultiWorkerMirroredStrategy, rank 0 alone reports, trains, saves and reloads.
TEST(MultiWorkerFitTest, TheSeedExampleTrainsOnTwoRanks) {
#ifndef KILN_MNIST_MLP_EXAMPLE
  GTEST_SKIP() << "examples are not built (KILN_BUILD_EXAMPLES=OFF)";
#else
  const std::string mpiexec = KILN_MPIEXEC;
  if (mpiexec.empty() || !std::filesystem::exists(mpiexec)) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  if (!KILN_HAS_MPI_BUILD) GTEST_SKIP() << "this build has no MPI (libopenmpi-dev)";
  kiln::testing::TempDir dir;
  const std::string cmd = "cd " + dir.path().string() + " && env OMPI_MCA_btl=self,vader OMP_NUM_THREADS=1 " + mpiexec +
                          " --allow-run-as-root --oversubscribe -np 2 " KILN_MNIST_MLP_EXAMPLE " 1 > log.txt 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string log = read(dir.path() / "log.txt");
  ASSERT_EQ(rc, 0) << cmd << "\n" << log;
  EXPECT_NE(log.find("REPLICAS: 2"), std::string::npos) << log;
  size_t reloads = 0;  // worker 0 alone saves and reloads
  for (size_t at = log.find("Reloaded from"); at != std::string::npos; at = log.find("Reloaded from", at + 1)) ++reloads;
  EXPECT_EQ(reloads, 1u) << log;
  const size_t test = log.find("test accuracy ");
  ASSERT_NE(test, std::string::npos) << log;
  EXPECT_GT(std::stod(log.substr(test + 14, 6)), 0.9) << log;  // one epoch on 60,000 images
  EXPECT_NE(log.find("(same)"), std::string::npos) << log;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "kiln_output" / "mnist_mlp.h5"));
#endif
}

}  // namespace
