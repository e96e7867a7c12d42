// libFuzzer target: decode_jpeg on arbitrary bytes, with TF's defaults and with the accurate
// IDCT, luma only and DCT scaling. A DataError is the expected answer to damage; any other
// exception escapes and libFuzzer reports it, as it does a crash, a leak, a timeout or an
// allocation over its limit.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kiln/data/image/jpeg_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln;
  HostTensor contents = HostTensor::uninitialized(Shape(DType::kU8, {static_cast<int64_t>(size)}));
  if (size > 0) std::memcpy(contents.raw_data(), data, size);
  try {
    data::decode_jpeg(contents);
  } catch (const DataError&) {
  }
  try {
    data::decode_jpeg(contents, {.channels = 1, .ratio = 4, .fancy_upscaling = false, .dct_method = "INTEGER_ACCURATE"});
  } catch (const DataError&) {
  }
  return 0;
}
