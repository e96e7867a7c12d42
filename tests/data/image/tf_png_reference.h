// TensorFlow's PNG decoding, for comparison: libpng driven with the transforms
// tensorflow/core/lib/png/png_io.cc (CommonInitDecode) sets for a channels/bit-depth request.
// Test-only (links libpng); Kiln's decoder (libspng + its own conversion loop) must agree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::data::testing {

struct TfPngResult {
  bool ok = false;
  std::string error;
  int height = 0, width = 0, channels = 0;
  std::vector<int32_t> samples;  // height * width * channels, at `bits` bits
};

/// channels: 0 (TF's auto: palette 3 or 4 with tRNS, else the file's), 1-4; bits: 8 or 16.
TfPngResult tf_reference_decode_png(const uint8_t* data, size_t size, int channels, int bits);

}  // namespace kiln::data::testing
