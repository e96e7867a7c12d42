// bench/pipeline_images: the canonical image input pipeline (issue 36): JPEG files read and
// decoded, randomly cropped to 224 x 224, randomly flipped, normalized to [-1, 1] floats and
// batched by 32, in a parallel stateless map (AUTOTUNE) with prefetch; images/s beside
// torchvision's ImageFolder + DataLoader(num_workers=2) with the same transforms on the same
// files in the same run (bench/torch_pipeline_images.py).
//
// The files: `--images` (default 512) JPEGs of 256 x 256 RGB (quality 90, 4:2:0, as cameras and
// ImageNet's files are), smooth colour fields with noise so they compress as photographs do,
// written by Kiln's encoder into 8 class folders of a temporary directory. Each side runs
// `--epochs` (default 3) epochs; the figure is the median epoch's images/s after the first
// (which reads the files into the page cache).
//
//   build/bench/pipeline_images [--images N] [--epochs E] [--no-peer] [peers dir]
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "kiln/core/str_cat.h"
#include "kiln/data/dataset.h"
#include "kiln/data/image/image_geometry.h"
#include "kiln/data/image/jpeg_codec.h"
#include "kiln/data/readers/read_file.h"

namespace {

using namespace kiln;

constexpr int64_t kSide = 256, kCrop = 224, kBatch = 32, kClasses = 8;

// A photograph-like image: two smooth colour gradients and per-pixel noise.
HostTensor synthetic_photo(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::normal_distribution<float> noise(0.0f, 6.0f);
  const float a[3] = {u(rng), u(rng), u(rng)}, b[3] = {u(rng), u(rng), u(rng)}, f = 2.0f + 6.0f * u(rng);
  std::vector<uint8_t> px(static_cast<size_t>(kSide * kSide * 3));
  for (int64_t y = 0; y < kSide; ++y)
    for (int64_t x = 0; x < kSide; ++x)
      for (int c = 0; c < 3; ++c) {
        const float s = std::sin(f * static_cast<float>(x + c * 7) / kSide) * std::cos(f * static_cast<float>(y) / kSide);
        const float v = 255.0f * (a[c] * (0.5f + 0.5f * s) + b[c] * static_cast<float>(y) / kSide) / 2.0f + noise(rng);
        px[static_cast<size_t>((y * kSide + x) * 3 + c)] = static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
      }
  return HostTensor::from_vector<uint8_t>({kSide, kSide, 3}, px);
}

std::vector<std::string> write_files(const std::filesystem::path& root, int64_t n) {
  std::mt19937 rng(36);
  std::vector<std::string> paths;
  for (int64_t i = 0; i < n; ++i) {
    const std::filesystem::path dir = root / str_cat("class_", i % kClasses);
    std::filesystem::create_directories(dir);
    const std::string path = (dir / str_cat("img_", i, ".jpg")).string();
    data::write_file(path, data::encode_jpeg(synthetic_photo(rng), {.quality = 90}));
    paths.push_back(path);
  }
  return paths;
}

// u8 (224, 224, 3) -> f32 in [-1, 1], as transforms.ToTensor + Normalize(0.5, 0.5) compute.
HostTensor normalize(const HostTensor& image) {
  HostTensor out = HostTensor::uninitialized(Shape(DType::kF32, image.dims()));
  const auto* src = static_cast<const uint8_t*>(image.raw_data());
  auto* dst = static_cast<float*>(out.raw_data());
  for (int64_t i = 0; i < image.num_elements(); ++i) dst[i] = static_cast<float>(src[i]) * (2.0f / 255.0f) - 1.0f;
  return out;
}

// Median images/s over the epochs after the first.
double kiln_images_per_s(const std::vector<std::string>& files, int epochs) {
  auto paths = std::make_shared<const std::vector<std::string>>(files);
  const auto n = static_cast<int64_t>(files.size());
  std::vector<int64_t> index(static_cast<size_t>(n)), labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    index[static_cast<size_t>(i)] = i;
    labels[static_cast<size_t>(i)] = i % kClasses;
  }
  data::MapFn load = [paths](data::Element e) {
    const int64_t i = e[0].data<int64_t>()[0];
    const data::StatelessSeed seed = {36, i};  // per file, reproducible whatever thread runs it
    HostTensor image = data::decode_jpeg(data::read_file((*paths)[static_cast<size_t>(i)]), {.channels = 3});
    image = data::random_crop(image, kCrop, kCrop, seed);
    image = data::random_flip_left_right(image, seed);
    e[0] = normalize(image);
    return e;
  };
  data::Dataset ds = data::Dataset::from_tensor_slices({HostTensor::from_vector<int64_t>({n}, index),
                                                       HostTensor::from_vector<int64_t>({n}, labels)})
                         .shuffle(n, /*seed=*/1)
                         .map(std::move(load), {.num_parallel_calls = data::kAutotune, .stateless = true})
                         .batch(kBatch)
                         .prefetch(data::kAutotune);
  std::vector<double> rates;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    data::Iterator it = ds.iterator();
    bench::Stopwatch clock;
    int64_t images = 0;
    while (std::optional<data::Element> batch = it.next()) images += (*batch)[0].dims()[0];
    if (epoch > 0) rates.push_back(static_cast<double>(images) / clock.seconds());
  }
  std::sort(rates.begin(), rates.end());
  return rates.empty() ? 0.0 : rates[rates.size() / 2];
}

}  // namespace

int main(int argc, char** argv) try {
  int64_t images = 512;
  int epochs = 3;
  bool peer = true;
  std::string peers = "../shared/peers";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-peer") peer = false;
    else if (a == "--images" && i + 1 < argc) images = std::atoll(argv[++i]);
    else if (a == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else peers = a;
  }
  epochs = std::max(epochs, 2);
  const std::filesystem::path root = std::filesystem::temp_directory_path() / str_cat("kiln_pipeline_images_", getpid());
  const std::vector<std::string> files = write_files(root, images);
  const double kiln_rate = kiln_images_per_s(files, epochs);
  bench::JsonLine line;
  line.add("bench", "pipeline_images").add("images", images).add("side", kSide).add("crop", kCrop)
      .add("batch", kBatch).add("epochs", static_cast<int64_t>(epochs)).add("kiln_images_per_s", kiln_rate);
  if (peer) {
    const std::string json = bench::run_pytorch_script(
        KILN_TORCH_PIPELINE_IMAGES, str_cat("--root ", root.string(), " --crop ", kCrop, " --batch ", kBatch,
                                            " --epochs ", epochs, " --workers 2 --peers ", peers));
    const double torch_rate = bench::json_number(json, "images_per_s");
    line.add("pytorch_images_per_s", torch_rate)
        .add("pytorch_image_backend", bench::json_string(json, "image_backend", "unavailable"))
        .add("kiln_over_pytorch", torch_rate > 0 ? kiln_rate / torch_rate : 0.0);
  }
  std::filesystem::remove_all(root);
  line.print();
  return 0;
} catch (const kiln::Error& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
