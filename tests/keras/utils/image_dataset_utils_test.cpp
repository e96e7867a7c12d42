// image_dataset_from_directory on folders of PNG and JPEG files written by Kiln's encoders:
// class names, labels, subsets, label modes, colour modes, resizing and the errors.
#include "kiln/keras/utils/image_dataset_utils.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "kiln/data/image/jpeg_codec.h"
#include "kiln/data/image/png_codec.h"
#include "kiln/data/readers/read_file.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras::utils {
namespace {

namespace fs = std::filesystem;

// A 6x6 image of `channels` with every colour sample `value` (alpha `alpha`).
HostTensor flat_image(int channels, uint8_t value, uint8_t alpha = 255) {
  std::vector<uint8_t> v(6 * 6 * static_cast<size_t>(channels), value);
  if (channels == 4)
    for (size_t i = 3; i < v.size(); i += 4) v[i] = alpha;
  return HostTensor::from_vector<uint8_t>({6, 6, channels}, v);
}

void write(const fs::path& path, const HostTensor& bytes) {
  fs::create_directories(path.parent_path());
  data::write_file(path.string(), bytes);
}

// Each image's mean sample, rounded to the 10 its file was written with (JPEG is lossy).
int image_value(const HostTensor& image) {
  double sum = 0;
  for (float v : image.data<float>()) sum += v;
  return static_cast<int>(std::lround(sum / static_cast<double>(image.num_elements()) / 10.0) * 10);
}

std::vector<data::Element> all_elements(const data::Dataset& ds) {
  std::vector<data::Element> out;
  data::Iterator it = ds.iterator();
  while (auto e = it.next()) out.push_back(std::move(*e));
  return out;
}

// a_class: 10 (png), 30 (jpg), sub/20 (PNG); b_class: 40 (png), deep/er/50 (JPEG); c_empty: none.
class ImageDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path r = dir_.path();
    write(r / "a_class/one.png", data::encode_png(flat_image(3, 10)));
    write(r / "a_class/three.jpg", data::encode_jpeg(flat_image(3, 30), {.quality = 100}));
    write(r / "a_class/sub/two.PNG", data::encode_png(flat_image(3, 20)));
    std::ofstream(r / "a_class/skip.txt") << "not an image";
    write(r / "b_class/four.png", data::encode_png(flat_image(3, 40)));
    write(r / "b_class/deep/er/five.JPEG", data::encode_jpeg(flat_image(3, 50), {.quality = 100}));
    fs::create_directories(r / "c_empty");
    root_ = r.string();
  }
  ImageDatasetOptions options(ImageDatasetOptions o) const {
    o.image_size = {6, 6};
    o.verbose = false;
    return o;
  }
  kiln::testing::TempDir dir_;
  std::string root_;
};

TEST_F(ImageDatasetTest, ClassNamesLabelsAndImagesInSortedOrder) {
  const DirectoryDataset ds = image_dataset_from_directory(root_, options({.batch_size = std::nullopt, .shuffle = false}));
  EXPECT_EQ(ds.class_names, (std::vector<std::string>{"a_class", "b_class", "c_empty"}));
  EXPECT_EQ(ds.file_paths, (std::vector<std::string>{root_ + "/a_class/one.png", root_ + "/a_class/three.jpg",
                                                     root_ + "/a_class/sub/two.PNG", root_ + "/b_class/four.png",
                                                     root_ + "/b_class/deep/er/five.JPEG"}));
  const std::vector<data::Element> elements = all_elements(ds);
  ASSERT_EQ(elements.size(), 5u);
  const std::vector<std::pair<int, int32_t>> expected = {{10, 0}, {30, 0}, {20, 0}, {40, 1}, {50, 1}};
  for (size_t i = 0; i < elements.size(); ++i) {
    EXPECT_EQ(elements[i].shapes_string(), "(f32[6,6,3], i32[])");
    EXPECT_EQ(image_value(elements[i][0]), expected[i].first) << i;
    EXPECT_EQ(elements[i][1].data<int32_t>()[0], expected[i].second) << i;
  }
  // A PNG at its own size is resized by the identity: its samples exactly.
  for (float v : elements[0][0].data<float>()) ASSERT_EQ(v, 10.0f);
}

TEST_F(ImageDatasetTest, SubsetsHoldKerasCountsAfterTheSeededShuffle) {
  // 5 files, validation_split 0.4: int(0.4 * 5) = 2 for validation, 3 for training, taken from
  // the files in numpy's RandomState(7).shuffle order.
  const std::vector<std::string> sorted =
      image_dataset_from_directory(root_, options({.shuffle = false})).file_paths;
  const std::vector<int64_t> perm = numpy_shuffle_permutation(5, 7);
  std::vector<std::string> shuffled;
  for (int64_t i : perm) shuffled.push_back(sorted[static_cast<size_t>(i)]);

  auto [train, val] = image_dataset_from_directory(
      root_, options({.batch_size = 2, .seed = 7, .validation_split = 0.4, .subset = "both"}));
  EXPECT_EQ(train.file_paths, std::vector<std::string>(shuffled.begin(), shuffled.begin() + 3));
  EXPECT_EQ(val.file_paths, std::vector<std::string>(shuffled.begin() + 3, shuffled.end()));
  EXPECT_EQ(train.class_names, (std::vector<std::string>{"a_class", "b_class", "c_empty"}));
  EXPECT_EQ(train.cardinality(), 2);  // batches of 2: 2 + 1, the remainder kept as Keras keeps it
  EXPECT_EQ(val.cardinality(), 1);

  // The subsets' images and labels are their files' (labels from the folder names).
  auto check = [](const DirectoryDataset& ds) {
    std::multiset<std::pair<int, int32_t>> got, want;
    for (const data::Element& batch : all_elements(ds)) {
      const int64_t n = batch[0].dims()[0];
      for (int64_t i = 0; i < n; ++i) {
        const HostTensor image = batch[0].slice_rows(i, i + 1);
        got.insert({image_value(image), batch[1].data<int32_t>()[static_cast<size_t>(i)]});
      }
    }
    const std::map<std::string, int> value = {{"one.png", 10}, {"three.jpg", 30}, {"two.PNG", 20},
                                              {"four.png", 40}, {"five.JPEG", 50}};
    for (const std::string& p : ds.file_paths)
      want.insert({value.at(fs::path(p).filename().string()), p.find("/b_class/") != std::string::npos ? 1 : 0});
    EXPECT_EQ(got, want);
  };
  check(train);
  check(val);
  // The validation half is read in file order every epoch (Keras: shuffle=False there).
  const std::map<int, std::string> file_of = {{10, "one.png"}, {30, "three.jpg"}, {20, "two.PNG"},
                                              {40, "four.png"}, {50, "five.JPEG"}};
  for (uint64_t epoch : {0, 1}) {
    std::vector<std::string> order;
    data::Iterator it = val.iterator(epoch);
    while (auto batch = it.next())
      for (int64_t i = 0; i < (*batch)[0].dims()[0]; ++i)
        order.push_back(file_of.at(image_value((*batch)[0].slice_rows(i, i + 1))));
    ASSERT_EQ(order.size(), val.file_paths.size());
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(fs::path(val.file_paths[i]).filename().string(), order[i]);
  }

  // "training" and "validation" alone give the same files as "both".
  EXPECT_EQ(image_dataset_from_directory(root_, options({.seed = 7, .validation_split = 0.4, .subset = "training"}))
                .file_paths,
            train.file_paths);
  EXPECT_EQ(image_dataset_from_directory(root_, options({.seed = 7, .validation_split = 0.4, .subset = "validation"}))
                .file_paths,
            val.file_paths);
  KILN_EXPECT_ERROR(image_dataset_from_directory(root_, options({.validation_split = 0.4, .subset = "training"})),
                    ValueError, "needs a seed");
  KILN_EXPECT_ERROR((void)train.get<1>(), ValueError, "only subset=\"both\"");
}

TEST_F(ImageDatasetTest, ReadsInAParallelMapFusedWithBatchThenPrefetches) {
  const DirectoryDataset ds = image_dataset_from_directory(root_, options({.batch_size = 2, .seed = 3}));
  data::Iterator it = ds.iterator();
  int64_t images = 0;
  while (auto batch = it.next()) images += (*batch)[0].dims()[0];
  EXPECT_EQ(images, 5);
  const std::string stats = it.stats().to_string();
  EXPECT_NE(stats.find("shuffle"), std::string::npos) << stats;
  EXPECT_NE(stats.find("map_and_batch"), std::string::npos) << stats;
  EXPECT_NE(stats.find("prefetch"), std::string::npos) << stats;
  EXPECT_NE(stats.find("(autotuned)"), std::string::npos) << stats;
}

TEST_F(ImageDatasetTest, LabelModes) {
  const auto categorical =
      all_elements(image_dataset_from_directory(root_, options({.label_mode = "categorical", .shuffle = false})));
  ASSERT_EQ(categorical.size(), 1u);
  EXPECT_EQ(categorical[0].shapes_string(), "(f32[5,6,6,3], f32[5,3])");
  EXPECT_EQ(std::vector<float>(categorical[0][1].data<float>().begin(), categorical[0][1].data<float>().end()),
            (std::vector<float>{1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0}));

  KILN_EXPECT_ERROR(image_dataset_from_directory(root_, options({.label_mode = "binary"})), ValueError,
                    "needs exactly 2 classes, received 3");
  const auto binary = all_elements(image_dataset_from_directory(
      root_, options({.label_mode = "binary", .class_names = {"a_class", "b_class"}, .shuffle = false})));
  EXPECT_EQ(binary[0].shapes_string(), "(f32[5,6,6,3], f32[5,1])");
  EXPECT_EQ(std::vector<float>(binary[0][1].data<float>().begin(), binary[0][1].data<float>().end()),
            (std::vector<float>{0, 0, 0, 1, 1}));

  const DirectoryDataset none = image_dataset_from_directory(root_, options({.label_mode = std::nullopt, .shuffle = false}));
  EXPECT_TRUE(none.class_names.empty());
  EXPECT_EQ(all_elements(none)[0].shapes_string(), "(f32[5,6,6,3])");

  KILN_EXPECT_ERROR(image_dataset_from_directory(root_, options({.label_mode = "sparse"})), ValueError,
                    "label_mode=\"sparse\"");
}

TEST_F(ImageDatasetTest, LabelsAsAList) {
  // One label per file in the sorted order of the paths under the whole folder.
  const DirectoryDataset ds = image_dataset_from_directory(
      root_, options({.labels = std::vector<int64_t>{4, 3, 2, 1, 0}, .batch_size = std::nullopt, .shuffle = false}));
  EXPECT_EQ(ds.class_names, (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  std::vector<std::pair<int, int32_t>> got;
  for (const data::Element& e : all_elements(ds)) got.push_back({image_value(e[0]), e[1].data<int32_t>()[0]});
  EXPECT_EQ(got, (std::vector<std::pair<int, int32_t>>{{10, 4}, {30, 3}, {20, 2}, {40, 1}, {50, 0}}));

  KILN_EXPECT_ERROR(image_dataset_from_directory(root_, options({.labels = std::vector<int64_t>{0, 1, 0}})),
                    ValueError, "labels has 3 entries, and " + root_ + " holds 5 files");
  KILN_EXPECT_ERROR(image_dataset_from_directory(
                        root_, options({.labels = std::vector<int64_t>{0, 1, 0, 1, 7}, .label_mode = "categorical"})),
                    ValueError, "received the label 7");
  KILN_EXPECT_ERROR(image_dataset_from_directory(root_, options({.labels = std::vector<int64_t>{0, 1, 0, 1, 0},
                                                                 .class_names = {"a_class"}})),
                    ValueError, "class_names can only be given with labels=\"inferred\"");
}

TEST_F(ImageDatasetTest, ColorModes) {
  const fs::path r = dir_.path() / "pngs";
  write(r / "x/p.png", data::encode_png(flat_image(3, 10)));
  write(r / "y/q.png", data::encode_png(flat_image(4, 60, /*alpha=*/128)));
  auto first_pixels = [&](const std::string& mode) {
    std::vector<std::vector<float>> out;
    for (const data::Element& e : all_elements(image_dataset_from_directory(
             r.string(), options({.color_mode = mode, .batch_size = std::nullopt, .shuffle = false})))) {
      const auto d = e[0].data<float>();
      out.emplace_back(d.begin(), d.begin() + e[0].dims()[2]);
    }
    return out;
  };
  EXPECT_EQ(first_pixels("grayscale"), (std::vector<std::vector<float>>{{10}, {60}}));
  EXPECT_EQ(first_pixels("rgb"), (std::vector<std::vector<float>>{{10, 10, 10}, {60, 60, 60}}));
  EXPECT_EQ(first_pixels("rgba"), (std::vector<std::vector<float>>{{10, 10, 10, 255}, {60, 60, 60, 128}}));
  KILN_EXPECT_ERROR(image_dataset_from_directory(r.string(), options({.color_mode = "cmyk"})), ValueError,
                    "color_mode=\"cmyk\"");
  // TF decodes no alpha from a JPEG: rgba over a JPEG is an error naming the file.
  KILN_EXPECT_ERROR(all_elements(image_dataset_from_directory(root_, options({.color_mode = "rgba", .shuffle = false}))),
                    Error, "three.jpg");
}

TEST_F(ImageDatasetTest, ResizeAndCropToAspectRatio) {
  // A 4x8 grey image whose column c holds 10 * c.
  std::vector<uint8_t> v;
  for (int y = 0; y < 4; ++y)
    for (uint8_t x = 0; x < 8; ++x) v.push_back(static_cast<uint8_t>(10 * x));
  const fs::path r = dir_.path() / "wide";
  write(r / "k/w.png", data::encode_png(HostTensor::from_vector<uint8_t>({4, 8, 1}, v)));
  auto row = [&](bool crop) {
    auto e = all_elements(image_dataset_from_directory(
        r.string(), {.color_mode = "grayscale", .batch_size = std::nullopt, .image_size = {2, 2}, .shuffle = false,
                     .crop_to_aspect_ratio = crop, .verbose = false}));
    const auto d = e.at(0)[0].data<float>();
    return std::vector<float>(d.begin(), d.end());
  };
  // Half-pixel bilinear 8 -> 2 columns samples x = 1.5 and 5.5: (10 + 20) / 2, (50 + 60) / 2.
  EXPECT_EQ(row(false), (std::vector<float>{15, 55, 15, 55}));
  // The centred 4x4 window (columns 2..5) 4 -> 2 samples x = 0.5 and 2.5 in it: 25 and 45.
  EXPECT_EQ(row(true), (std::vector<float>{25, 45, 25, 45}));
}

TEST_F(ImageDatasetTest, BadInputIsAnErrorNamingWhatAndWhere) {
  KILN_EXPECT_ERROR(image_dataset_from_directory(root_ + "/missing", options({})), DataError,
                    root_ + "/missing is not a folder");
  write(dir_.path() / "b_class/bad.png", HostTensor::from_vector<uint8_t>({4}, {1, 2, 3, 4}));
  KILN_EXPECT_ERROR(all_elements(image_dataset_from_directory(root_, options({.shuffle = false}))), DataError,
                    "bad.png");
  KILN_EXPECT_ERROR(image_dataset_from_directory(root_, options({.class_names = {"a_class", "zebra"}})), ValueError,
                    "'zebra', which is not a subfolder");
  KILN_EXPECT_ERROR(image_dataset_from_directory(root_, options({.interpolation = "cubic"})), ValueError,
                    "interpolation=\"cubic\"");
  KILN_EXPECT_ERROR(image_dataset_from_directory(root_, options({.class_names = {"c_empty"}})), ValueError,
                    "no images found in " + root_);
}

}  // namespace
}  // namespace kiln::keras::utils
