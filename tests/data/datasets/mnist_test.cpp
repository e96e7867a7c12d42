// Loads the real MNIST files (scripts/fetch_mnist.sh puts them in place before the tests run).
#include "kiln/data/datasets/mnist.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <filesystem>

#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::datasets::mnist {
namespace {

std::array<int64_t, 10> histogram(const HostTensor& labels) {
  std::array<int64_t, 10> counts{};
  for (uint8_t y : labels.data<uint8_t>()) ++counts[y];
  return counts;
}

TEST(MnistTest, LoadsTheRealFilesWithKerasShapesAndLabelCounts) {
  auto [train, test] = load_data();
  EXPECT_EQ(train.x.shape(), Shape(DType::kU8, {60000, 28, 28}));
  EXPECT_EQ(train.y.shape(), Shape(DType::kU8, {60000}));
  EXPECT_EQ(test.x.shape(), Shape(DType::kU8, {10000, 28, 28}));
  EXPECT_EQ(test.y.shape(), Shape(DType::kU8, {10000}));
  // MNIST.md's counts.
  EXPECT_EQ(histogram(train.y),
            (std::array<int64_t, 10>{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949}));
  EXPECT_EQ(histogram(test.y),
            (std::array<int64_t, 10>{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}));
  EXPECT_EQ(histogram(train.y)[1], 6742);
  EXPECT_EQ(histogram(test.y)[5], 892);
}

TEST(MnistTest, MissingFolderNamesTheFetchCommand) {
  kiln::testing::TempDir empty;
  KILN_EXPECT_ERROR(load_data(empty.path().string()), DataError, "train-images-idx3-ubyte: file not found");
  KILN_EXPECT_ERROR(load_data(empty.path().string()), DataError, "scripts/fetch_mnist.sh");
}

TEST(MnistTest, ImageAndLabelCountsMustAgree) {
  kiln::testing::TempDir dir;
  auto idx = [](unsigned char rank, std::vector<uint32_t> dims, size_t n) {
    std::vector<unsigned char> b = {0, 0, 8, rank};
    for (uint32_t d : dims)
      for (int s : {24, 16, 8, 0}) b.push_back(static_cast<unsigned char>(d >> s));
    b.resize(b.size() + n, 1);
    return b;
  };
  dir.write("train-images-idx3-ubyte", idx(3, {2, 28, 28}, 2 * 784));
  dir.write("train-labels-idx1-ubyte", idx(1, {3}, 3));
  dir.write("t10k-images-idx3-ubyte", idx(3, {1, 28, 28}, 784));
  dir.write("t10k-labels-idx1-ubyte", idx(1, {1}, 1));
  KILN_EXPECT_ERROR(load_data(dir.path().string()), DataError, "holds 2 images but");
}

TEST(MnistTest, DefaultDirFollowsKilnData) {
  const char* saved = std::getenv("KILN_DATA");
  std::string previous = saved != nullptr ? saved : "";
  setenv("KILN_DATA", "/srv/datasets", 1);
  EXPECT_EQ(default_dir(), "/srv/datasets/mnist");
  unsetenv("KILN_DATA");
  const char* home = std::getenv("HOME");
  EXPECT_EQ(default_dir(), std::string(home != nullptr ? home : ".") + "/.cache/kiln/mnist");
  if (saved != nullptr) setenv("KILN_DATA", previous.c_str(), 1);
}

}  // namespace
}  // namespace kiln::datasets::mnist
