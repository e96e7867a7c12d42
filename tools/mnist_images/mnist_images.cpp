// `mnist_images <out_dir> [per_class=100]`: writes the first per_class training images of each
// MNIST digit as image files in class folders, <out_dir>/0 ... <out_dir>/9, for
// image_dataset_from_directory (examples/image_folder.cpp). Alternate files are PNG and JPEG,
// and every fourth sits in a nested folder, so a run exercises both encoders, both decoders and
// the nested listing. Reads MNIST from KILN_DATA or ~/.cache/kiln (scripts/fetch_mnist.sh).
#include <array>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "kiln/core/error.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/data/image/jpeg_codec.h"
#include "kiln/data/image/png_codec.h"
#include "kiln/data/readers/read_file.h"

using namespace kiln;

int main(int argc, char** argv) try {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: mnist_images <out_dir> [per_class=100]\n";
    return 2;
  }
  const std::filesystem::path out = argv[1];
  const long per_class = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 100;
  if (per_class < 1 || per_class > 5000) {
    std::cerr << "mnist_images: per_class must be in [1, 5000] (the rarest digit has 5421 images), received "
              << argv[2] << "\n";
    return 2;
  }
  const datasets::mnist::Split train = datasets::mnist::load_data().train;
  const auto labels = train.y.data<uint8_t>();
  std::array<long, 10> written{};
  int64_t total = 0;
  for (int64_t i = 0; i < train.x.dims()[0] && total < 10 * per_class; ++i) {
    const int digit = labels[static_cast<size_t>(i)];
    long& n = written[static_cast<size_t>(digit)];
    if (n == per_class) continue;
    const HostTensor image = train.x.slice_rows(i, i + 1).reshape({28, 28, 1});
    std::filesystem::path dir = out / std::to_string(digit);
    if (n % 4 == 3) dir /= "more";
    std::filesystem::create_directories(dir);
    const bool png = n % 2 == 0;
    const std::string name = "train_" + std::to_string(i) + (png ? ".png" : ".jpg");
    data::write_file((dir / name).string(), png ? data::encode_png(image) : data::encode_jpeg(image, {.quality = 95}));
    ++n;
    ++total;
  }
  std::cout << "mnist_images: wrote " << total << " images (" << per_class << " per digit, PNG and JPEG) into "
            << out.string() << "\n";
  return 0;
} catch (const kiln::Error& e) {
  std::cerr << "mnist_images: " << e.kind() << ": " << e.what() << "\n";
  return 1;
}
