// MNIST loader: four IDX files, validated against each other.
#include "kiln/data/datasets/mnist.h"

#include <cstdlib>
#include <filesystem>

#include "kiln/core/check.h"
#include "kiln/data/readers/idx_reader.h"

namespace kiln::datasets::mnist {
namespace {

namespace fs = std::filesystem;

std::string find_file(const std::string& dir, const std::string& base) {
  for (const char* suffix : {"", ".gz"}) {
    fs::path p = fs::path(dir) / (base + suffix);
    if (fs::exists(p)) return p.string();
  }
  KILN_THROW(DataError, "[mnist::load_data] ", (fs::path(dir) / base).string(),
             ": file not found (nor ", base, ".gz). Hint: run `bash scripts/fetch_mnist.sh` (or "
             "`make mnist`) to fetch the real MNIST files into ", default_dir(),
             ", or pass the folder that holds them.");
}

Split load_split(const std::string& dir, const std::string& images, const std::string& labels) {
  std::string image_path = find_file(dir, images);
  std::string label_path = find_file(dir, labels);
  Split s{data::read_idx(image_path), data::read_idx(label_path)};
  if (s.x.dtype() != DType::kU8 || s.x.rank() != 3 || s.x.dims()[1] != 28 || s.x.dims()[2] != 28)
    KILN_THROW(DataError, "[mnist::load_data] ", image_path, ": expected u8[N,28,28] images, received ",
               s.x.shape(), ".");
  if (s.y.dtype() != DType::kU8 || s.y.rank() != 1)
    KILN_THROW(DataError, "[mnist::load_data] ", label_path, ": expected u8[N] labels, received ",
               s.y.shape(), ".");
  if (s.x.dims()[0] != s.y.dims()[0])
    KILN_THROW(DataError, "[mnist::load_data] ", image_path, " holds ", s.x.dims()[0],
               " images but ", label_path, " holds ", s.y.dims()[0], " labels.");
  for (uint8_t label : s.y.data<uint8_t>())
    if (label > 9)
      KILN_THROW(DataError, "[mnist::load_data] ", label_path, ": label ", int{label},
                 " is outside 0..9.");
  return s;
}

}  // namespace

std::string default_dir() {
  if (const char* data = std::getenv("KILN_DATA"); data != nullptr && *data != '\0')
    return (fs::path(data) / "mnist").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home != nullptr ? home : ".") / ".cache" / "kiln" / "mnist").string();
}

Data load_data(const std::string& dir) {
  return Data{load_split(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
              load_split(dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")};
}

}  // namespace kiln::datasets::mnist
