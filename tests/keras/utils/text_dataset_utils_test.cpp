// text_dataset_from_directory on a small tree (nested folders, other files, an upper-case
// extension, an empty class, a hidden folder): class names, labels, contents, max_length and
// Keras's subset sizes.
#include "kiln/keras/utils/text_dataset_utils.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras::utils {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// neg: a.txt, b.TXT, sub/c.txt (+ notes.md); pos: d.txt, e.txt, deep/er/f.txt; zz_empty: none;
// .hidden/x.txt and top.txt outside any class.
const std::map<std::string, std::string> kTexts = {
    {"a.txt", "bad movie"},   {"b.TXT", "awful"},    {"c.txt", "terrible plot"},
    {"d.txt", "great film"},  {"e.txt", "loved it"}, {"f.txt", "wonderful \xc3\xa9t\xc3\xa9"},
    {"x.txt", "hidden"},      {"top.txt", "top"}};

class TextDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path r = dir_.path();
    write(r / "neg/a.txt", kTexts.at("a.txt"));
    write(r / "neg/b.TXT", kTexts.at("b.TXT"));
    write(r / "neg/sub/c.txt", kTexts.at("c.txt"));
    write(r / "neg/notes.md", "not a text file for Keras");
    write(r / "pos/d.txt", kTexts.at("d.txt"));
    write(r / "pos/e.txt", kTexts.at("e.txt"));
    write(r / "pos/deep/er/f.txt", kTexts.at("f.txt"));
    fs::create_directories(r / "zz_empty");
    write(r / ".hidden/x.txt", kTexts.at("x.txt"));
    write(r / "top.txt", kTexts.at("top.txt"));
    root_ = r.string();
  }
  static TextDatasetOptions quiet(TextDatasetOptions o) {
    o.verbose = false;
    return o;
  }
  // (text, label) of every element, batches unbatched.
  static std::vector<std::pair<std::string, int32_t>> rows(const data::Dataset& ds) {
    std::vector<std::pair<std::string, int32_t>> out;
    data::Iterator it = ds.iterator();
    while (auto e = it.next()) {
      const auto texts = (*e)[0].to_vector<std::string>();
      const auto labels = (*e)[1].to_vector<int32_t>();
      for (size_t i = 0; i < texts.size(); ++i) out.emplace_back(texts[i], labels[i]);
    }
    return out;
  }
  kiln::testing::TempDir dir_;
  std::string root_;
};

TEST_F(TextDatasetTest, ClassNamesLabelsAndTextsInSortedOrder) {
  const DirectoryDataset ds = text_dataset_from_directory(root_, quiet({.batch_size = 4, .shuffle = false}));
  EXPECT_EQ(ds.class_names, (std::vector<std::string>{"neg", "pos", "zz_empty"}));
  EXPECT_EQ(ds.file_paths, (std::vector<std::string>{root_ + "/neg/a.txt", root_ + "/neg/b.TXT", root_ + "/neg/sub/c.txt",
                                                     root_ + "/pos/d.txt", root_ + "/pos/e.txt",
                                                     root_ + "/pos/deep/er/f.txt"}));
  data::Iterator it = ds.iterator();
  const auto first = it.next();
  EXPECT_EQ(first->shapes_string(), "(string[4], i32[4])");
  const auto got = rows(ds);
  const std::vector<std::pair<std::string, int32_t>> want = {
      {"bad movie", 0}, {"awful", 0}, {"terrible plot", 0}, {"great film", 1}, {"loved it", 1}, {kTexts.at("f.txt"), 1}};
  EXPECT_EQ(got, want);
}

TEST_F(TextDatasetTest, SubsetsHoldKerasCountsAfterTheSeededShuffle) {
  // 6 files, validation_split 0.34: int(0.34 * 6) = 2 validation files, 4 training files, cut
  // from numpy's RandomState(11).shuffle order.
  const std::vector<std::string> sorted = text_dataset_from_directory(root_, quiet({.shuffle = false})).file_paths;
  std::vector<std::string> shuffled;
  for (int64_t i : numpy_shuffle_permutation(6, 11)) shuffled.push_back(sorted[static_cast<size_t>(i)]);
  auto [train, val] =
      text_dataset_from_directory(root_, quiet({.batch_size = 3, .seed = 11, .validation_split = 0.34, .subset = "both"}));
  EXPECT_EQ(train.file_paths, std::vector<std::string>(shuffled.begin(), shuffled.begin() + 4));
  EXPECT_EQ(val.file_paths, std::vector<std::string>(shuffled.begin() + 4, shuffled.end()));
  EXPECT_EQ(train.cardinality(), 2);  // 3 + 1
  EXPECT_EQ(val.cardinality(), 1);
  const auto training_alone =
      text_dataset_from_directory(root_, quiet({.seed = 11, .validation_split = 0.34, .subset = "training"}));
  const auto validation_alone =
      text_dataset_from_directory(root_, quiet({.seed = 11, .validation_split = 0.34, .subset = "validation"}));
  EXPECT_EQ(training_alone.file_paths, train.file_paths);
  EXPECT_EQ(validation_alone.file_paths, val.file_paths);
  // Each subset's texts and labels are its files'.
  for (const DirectoryDataset* ds : {&train, &val}) {
    std::multiset<std::pair<std::string, int32_t>> want;
    for (const std::string& p : ds->file_paths)
      want.insert({kTexts.at(fs::path(p).filename().string()), p.find("/pos/") != std::string::npos ? 1 : 0});
    const auto got = rows(*ds);
    EXPECT_EQ((std::multiset<std::pair<std::string, int32_t>>(got.begin(), got.end())), want);
  }
}

TEST_F(TextDatasetTest, LabelModesMaxLengthAndNoLabels) {
  const auto categorical = text_dataset_from_directory(
      root_, quiet({.label_mode = "categorical", .batch_size = 6, .max_length = 4, .shuffle = false}));
  data::Iterator it = categorical.iterator();
  const auto batch = it.next();
  EXPECT_EQ(batch->shapes_string(), "(string[6], f32[6,3])");
  EXPECT_EQ((*batch)[0].to_vector<std::string>(),
            (std::vector<std::string>{"bad ", "awfu", "terr", "grea", "love", "wond"}));
  EXPECT_EQ((*batch)[1].slice_rows(3, 4).to_vector<float>(), (std::vector<float>{0, 1, 0}));
  // max_length counts bytes: "wonderful \xc3\xa9" keeps the 2-byte character's first byte at 11.
  const auto cut = text_dataset_from_directory(
      root_, quiet({.batch_size = std::nullopt, .max_length = 11, .shuffle = false, .verbose = false}));
  data::Iterator ci = cut.iterator();
  std::string last;
  while (auto e = ci.next()) {
    EXPECT_EQ((*e)[0].shape(), Shape(DType::kString, {}));
    last = (*e)[0].data<std::string>()[0];
  }
  EXPECT_EQ(last, "wonderful \xc3");
  // Without labels the whole folder is walked (hidden folder and top-level file included).
  const auto unlabeled = text_dataset_from_directory(root_, quiet({.labels = std::nullopt, .shuffle = false}));
  EXPECT_EQ(unlabeled.file_paths.size(), 8u);
  data::Iterator ui = unlabeled.iterator();
  EXPECT_EQ(ui.next()->shapes_string(), "(string[8])");
  // Two classes for binary.
  const auto binary = text_dataset_from_directory(
      root_, quiet({.label_mode = "binary", .class_names = {"pos", "neg"}, .batch_size = 6, .shuffle = false}));
  data::Iterator bi = binary.iterator();
  const auto b = bi.next();
  EXPECT_EQ((*b)[1].to_vector<float>(), (std::vector<float>{0, 0, 0, 1, 1, 1}));  // pos is class 0
  EXPECT_EQ((*b)[0].to_vector<std::string>()[0], "great film");
}

TEST_F(TextDatasetTest, BadArgumentsAreValueErrorsNamingThem) {
  KILN_EXPECT_ERROR(text_dataset_from_directory(root_, quiet({.label_mode = "binary"})), ValueError,
                    "needs exactly 2 classes, received 3");
  KILN_EXPECT_ERROR(text_dataset_from_directory(root_, quiet({.validation_split = 0.5, .subset = "training"})),
                    ValueError, "needs a seed");
  KILN_EXPECT_ERROR(text_dataset_from_directory(root_, quiet({.class_names = {"zz_empty"}})), ValueError,
                    "no text files found in " + root_ + ". Allowed formats: .txt");
  KILN_EXPECT_ERROR(text_dataset_from_directory(root_, quiet({.max_length = -1})), ValueError, "max_length=-1");
  KILN_EXPECT_ERROR(text_dataset_from_directory(root_ + "/missing", quiet({})), DataError, "is not a folder");
}

}  // namespace
}  // namespace kiln::keras::utils
