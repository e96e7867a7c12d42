// Keras's folder listing, seeded shuffle and split (kiln/keras/utils/dataset_utils.h): the
// permutations against numpy's, the listing and the subset ranges against Keras's rules.
#include "kiln/keras/utils/dataset_utils.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kiln/core/error.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras::utils {
namespace {

// numpy 1.24.2: x = list(range(n)); np.random.RandomState(seed).shuffle(x); print(x)
TEST(DatasetUtilsTest, ShufflePermutationEqualsNumpyRandomState) {
  EXPECT_EQ(numpy_shuffle_permutation(7, 1337), (std::vector<int64_t>{6, 2, 1, 3, 0, 4, 5}));
  EXPECT_EQ(numpy_shuffle_permutation(10, 42), (std::vector<int64_t>{8, 1, 5, 0, 7, 2, 9, 4, 3, 6}));
  EXPECT_EQ(numpy_shuffle_permutation(13, 0), (std::vector<int64_t>{6, 11, 4, 10, 2, 8, 1, 7, 9, 3, 0, 5, 12}));
  EXPECT_EQ(numpy_shuffle_permutation(5, 4294967295u), (std::vector<int64_t>{4, 1, 0, 2, 3}));
  const std::vector<int64_t> big = numpy_shuffle_permutation(1000, 123456);
  EXPECT_EQ(std::vector<int64_t>(big.begin(), big.begin() + 8),
            (std::vector<int64_t>{602, 357, 946, 829, 650, 232, 394, 680}));
  EXPECT_EQ(std::vector<int64_t>(big.end() - 5, big.end()), (std::vector<int64_t>{568, 49, 498, 746, 65}));
  EXPECT_TRUE(numpy_shuffle_permutation(0, 1).empty());
  EXPECT_EQ(numpy_shuffle_permutation(1, 1), (std::vector<int64_t>{0}));
  KILN_EXPECT_ERROR(numpy_shuffle_permutation(3, 1ULL << 32), ValueError, "seed=4294967296");
}

void touch(const std::filesystem::path& p) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << "x";
}

// A tree with nested folders, upper-case extensions, files of other formats, an empty class, a
// hidden folder and a file beside the class folders.
class IndexDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& r = dir_.path();
    for (const char* f : {"cat/b.png", "cat/A.JPG", "cat/notes.txt", "cat/nested/c.jpeg", "cat/nested/deeper/d.Png",
                          "cat/nested b/e.gif", "dog/x.bmp", "dog/readme.md", ".hidden/h.png", "top.png"})
      touch(r / f);
    std::filesystem::create_directories(r / "empty");
    root_ = r.string();
  }
  std::vector<std::string> formats_ = {".bmp", ".gif", ".jpeg", ".jpg", ".png"};
  kiln::testing::TempDir dir_;
  std::string root_;
};

TEST_F(IndexDirectoryTest, ListsClassFoldersAndFilesAsKeras) {
  const DirectoryIndex index = index_directory(root_, "inferred", formats_, {}, /*shuffle=*/false, 0, false);
  EXPECT_EQ(index.class_names, (std::vector<std::string>{"cat", "dog", "empty"}));
  // Folders sorted by path text ("nested b" before "nested/deeper": ' ' < '/'), names sorted
  // byte-wise (upper case first), extensions matched case-insensitively.
  const std::vector<std::string> expected = {root_ + "/cat/A.JPG", root_ + "/cat/b.png",
                                             root_ + "/cat/nested/c.jpeg", root_ + "/cat/nested b/e.gif",
                                             root_ + "/cat/nested/deeper/d.Png", root_ + "/dog/x.bmp"};
  EXPECT_EQ(index.file_paths, expected);
  EXPECT_EQ(index.labels, (std::vector<int64_t>{0, 0, 0, 0, 0, 1}));
}

TEST_F(IndexDirectoryTest, ClassNamesChooseAndOrderTheClasses) {
  const DirectoryIndex index = index_directory(root_, "inferred", formats_, {"dog", "cat"}, false, 0, false);
  EXPECT_EQ(index.class_names, (std::vector<std::string>{"dog", "cat"}));
  ASSERT_EQ(index.file_paths.size(), 6u);
  EXPECT_EQ(index.file_paths.front(), root_ + "/dog/x.bmp");
  EXPECT_EQ(index.labels, (std::vector<int64_t>{0, 1, 1, 1, 1, 1}));
  KILN_EXPECT_ERROR(index_directory(root_, "inferred", formats_, {"cat", "cow"}, false, 0, false, "f"), ValueError,
                    "'cow', which is not a subfolder");
}

TEST_F(IndexDirectoryTest, ShuffleAppliesNumpysPermutationToFilesAndLabels) {
  const DirectoryIndex sorted = index_directory(root_, "inferred", formats_, {}, false, 0, false);
  const DirectoryIndex shuffled = index_directory(root_, "inferred", formats_, {}, true, 42, false);
  const std::vector<int64_t> perm = numpy_shuffle_permutation(6, 42);
  for (size_t i = 0; i < perm.size(); ++i) {
    EXPECT_EQ(shuffled.file_paths[i], sorted.file_paths[static_cast<size_t>(perm[i])]);
    EXPECT_EQ(shuffled.labels[i], sorted.labels[static_cast<size_t>(perm[i])]);
  }
}

TEST_F(IndexDirectoryTest, LabelsListWalksTheWholeFolder) {
  // Keras indexes from the folder itself: the file beside the classes and the hidden folder
  // count (8 files); the top folder's path ("root/") sorts before every other.
  const std::vector<int64_t> labels = {3, 1, 1, 1, 1, 1, 1, 3};
  const DirectoryIndex index = index_directory(root_, labels, formats_, {}, false, 0, false);
  ASSERT_EQ(index.file_paths.size(), 8u);
  EXPECT_EQ(index.file_paths[0], root_ + "/top.png");
  EXPECT_EQ(index.file_paths[1], root_ + "/.hidden/h.png");
  EXPECT_EQ(index.file_paths[2], root_ + "/cat/A.JPG");
  EXPECT_EQ(index.file_paths.back(), root_ + "/dog/x.bmp");
  EXPECT_EQ(index.class_names, (std::vector<std::string>{"1", "3"}));
  EXPECT_EQ(index.labels, labels);
  KILN_EXPECT_ERROR(index_directory(root_, std::vector<int64_t>{1, 2}, formats_, {}, false, 0, false, "f"), ValueError,
                    "labels has 2 entries, and " + root_ + " holds 8 files");
}

TEST_F(IndexDirectoryTest, MissingFolderIsADataErrorNamingIt) {
  KILN_EXPECT_ERROR(index_directory(root_ + "/nope", "inferred", formats_, {}, false, 0, false, "f"), DataError,
                    root_ + "/nope is not a folder (it does not exist)");
  KILN_EXPECT_ERROR(index_directory(root_, "guess", formats_, {}, false, 0, false, "f"), ValueError, "labels=\"guess\"");
}

TEST_F(IndexDirectoryTest, FollowLinksEntersLinkedFolders) {
  std::filesystem::create_directory_symlink(dir_.path() / "cat" / "nested", dir_.path() / "dog" / "link");
  EXPECT_EQ(index_directory(root_, "inferred", formats_, {"dog"}, false, 0, false).file_paths.size(), 1u);
  EXPECT_EQ(index_directory(root_, "inferred", formats_, {"dog"}, false, 0, true).file_paths.size(), 3u);
  // A link back to its own folder: each folder is entered once (os.walk would never end).
  std::filesystem::create_directory_symlink(dir_.path() / "dog", dir_.path() / "dog" / "loop");
  EXPECT_EQ(index_directory(root_, "inferred", formats_, {"dog"}, false, 0, true).file_paths.size(), 3u);
}

TEST(DatasetUtilsTest, SplitGivesTheLastIntFractionToValidation) {
  // int(0.2 * 7) = 1, int(0.3 * 10) = 3 (as Keras: num_val_samples = int(split * n)).
  EXPECT_EQ(training_or_validation_range(7, 0.2, "training", "d", "f"), (std::pair<int64_t, int64_t>{0, 6}));
  EXPECT_EQ(training_or_validation_range(7, 0.2, "validation", "d", "f"), (std::pair<int64_t, int64_t>{6, 7}));
  EXPECT_EQ(training_or_validation_range(10, 0.3, "training", "d", "f"), (std::pair<int64_t, int64_t>{0, 7}));
  EXPECT_EQ(training_or_validation_range(10, 0.3, "validation", "d", "f"), (std::pair<int64_t, int64_t>{7, 10}));
  EXPECT_EQ(training_or_validation_range(10, 0.0, "", "d", "f"), (std::pair<int64_t, int64_t>{0, 10}));
  KILN_EXPECT_ERROR(training_or_validation_range(4, 0.2, "validation", "d", "f"), ValueError,
                    "gives no validation files");
}

TEST(DatasetUtilsTest, ValidationSplitArgumentsAreCheckedAsKeras) {
  EXPECT_NO_THROW(check_validation_split_arg(0.2, "both", true, 1, "f"));
  EXPECT_NO_THROW(check_validation_split_arg(0.0, "", true, std::nullopt, "f"));
  KILN_EXPECT_ERROR(check_validation_split_arg(1.0, "training", true, 1, "f"), ValueError, "validation_split=1");
  KILN_EXPECT_ERROR(check_validation_split_arg(0.2, "", true, 1, "f"), ValueError, "give both, or neither");
  KILN_EXPECT_ERROR(check_validation_split_arg(0.0, "training", true, 1, "f"), ValueError, "give both, or neither");
  KILN_EXPECT_ERROR(check_validation_split_arg(0.2, "test", true, 1, "f"), ValueError, "subset=\"test\"");
  KILN_EXPECT_ERROR(check_validation_split_arg(0.2, "training", true, std::nullopt, "f"), ValueError, "needs a seed");
}

}  // namespace
}  // namespace kiln::keras::utils
