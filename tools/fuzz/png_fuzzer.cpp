// libFuzzer target: decode_png on arbitrary bytes, as decoded (channels 0, u8) and converted
// (grey+alpha, 16-bit), and decode_image's dispatch. A DataError is the expected answer to
// damage; any other exception escapes and libFuzzer reports it, as it does a crash, a leak,
// a timeout or an allocation over its limit.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kiln/data/image/decode_image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln;
  HostTensor contents = HostTensor::uninitialized(Shape(DType::kU8, {static_cast<int64_t>(size)}));
  if (size > 0) std::memcpy(contents.raw_data(), data, size);
  try {
    data::decode_png(contents);
    data::decode_png(contents, {.channels = 2, .dtype = DType::kI32});
  } catch (const DataError&) {
  }
  try {
    data::decode_image(contents, {.dtype = DType::kF32});
  } catch (const DataError&) {
  }
  return 0;
}
