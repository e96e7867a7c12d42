// The image fixtures of tests/fixtures/images/make_image_fixtures.py, generated once per test
// process by Debian's /usr/bin/python3 with PIL (the independent encoder and decoder), and
// what the codec tests share: the manifest's cases, pixel comparison, a PIL check of files.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "tests/testing/temp_dir.h"

namespace kiln::data::testing {

/// One manifest line: `png FILE EXPECTED [CHANNELS]`,
/// `jpeg FILE EXPECTED CHANNELS DCT_METHOD RATIO` or `resize SOURCE EXPECTED METHOD HEIGHT WIDTH` (or resize_tf).
struct ImageCase {
  std::string kind, file, expected;
  int channels = 0;
  std::string dct_method;
  int ratio = 1;
  std::string method;
  int64_t height = 0, width = 0;
};

inline bool python_has_pil() {
  return std::system("/usr/bin/python3 -c 'import PIL, numpy' 2>/dev/null") == 0;
}

inline std::string fixture_script() { return KILN_IMAGE_FIXTURES_PY; }

/// Runs the script's --check-encoded on `dir` (enc_*.png/jpg beside enc_*.npy sources): true
/// when PIL decodes every file to its source (PNG exactly, JPEG above 30 dB PSNR). The
/// script prints a line per file to the test log.
inline bool pil_reads_encoded_files(const std::string& dir) {
  return std::system(("/usr/bin/python3 " + fixture_script() + " --check-encoded " + dir).c_str()) == 0;
}

/// The generated fixtures: a directory shared by the process's tests (generated on first use).
class ImageFixtures {
 public:
  /// nullptr (with `why` set) when /usr/bin/python3 lacks PIL or the script fails.
  static const ImageFixtures* get(std::string* why) {
    static std::unique_ptr<ImageFixtures> fixtures;  // test-only: one generation per process
    static std::string failure;
    if (!fixtures && failure.empty()) {
      if (!python_has_pil()) {
        failure = "/usr/bin/python3 lacks PIL (apt install python3-pil; scripts/install_deps.sh --test)";
      } else {
        auto f = std::make_unique<ImageFixtures>();
        const std::string command = "/usr/bin/python3 " + fixture_script() + " " + f->dir.path().string() + " >/dev/null";
        if (std::system(command.c_str()) != 0) {
          failure = "the fixture script failed: " + command;
        } else {
          f->load_manifest();
          fixtures = std::move(f);
        }
      }
    }
    if (why) *why = failure;
    return fixtures.get();
  }

  std::string file(const std::string& name) const { return dir.file(name); }
  std::vector<ImageCase> cases(const std::string& kind) const {
    std::vector<ImageCase> out;
    for (const auto& c : all) if (c.kind == kind) out.push_back(c);
    return out;
  }

  kiln::testing::TempDir dir;
  std::vector<ImageCase> all;

 private:
  void load_manifest() {
    std::ifstream in(dir.file("manifest.txt"));
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      ImageCase c;
      fields >> c.kind >> c.file >> c.expected;
      if (c.kind == "resize" || c.kind == "resize_tf") {
        fields >> c.method >> c.height >> c.width;
      } else {
        if (!(fields >> c.channels)) c.channels = 0;
        fields >> c.dct_method >> c.ratio;
      }
      all.push_back(c);
    }
  }
};

#define KILN_IMAGE_FIXTURES(var)                               \
  std::string var##_why;                                       \
  const auto* var = ImageFixtures::get(&var##_why);            \
  if (var == nullptr) GTEST_SKIP() << var##_why

/// Largest |a - b| over the elements (both converted to i64); -1 if the shapes differ.
inline int64_t max_abs_diff(const HostTensor& a, const HostTensor& b) {
  if (a.dims() != b.dims()) return -1;
  auto x = a.to_vector<int64_t>(), y = b.to_vector<int64_t>();
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

/// Mean |a - b| over the elements (same shapes).
inline double mean_abs_diff(const HostTensor& a, const HostTensor& b) {
  auto x = a.to_vector<int64_t>(), y = b.to_vector<int64_t>();
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += static_cast<double>(std::abs(x[i] - y[i]));
  return x.empty() ? 0 : sum / static_cast<double>(x.size());
}

}  // namespace kiln::data::testing
