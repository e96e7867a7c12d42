// decode_image: TF's magic-byte dispatch (decode_image_op.cc) and its dtype scalings.
#include "kiln/data/image/decode_image.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "kiln/core/check.h"
#include "kiln/data/image/image_input_impl.h"

namespace kiln::data {
namespace {

bool starts_with(const image_detail::EncodedImage& in, std::string_view magic) {
  return in.size >= magic.size() && std::memcmp(in.data, magic.data(), magic.size()) == 0;
}

// x * scale in f32, as TF's Eigen cast-and-multiply (scale = float(1.0 / max)).
template <typename T>
HostTensor scale_to_f32(const HostTensor& image, double max) {
  HostTensor out = HostTensor::uninitialized(Shape(DType::kF32, image.dims()));
  const auto scale = static_cast<float>(1.0 / max);
  auto src = image.data<T>();
  auto dst = out.data<float>();
  for (size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<float>(src[i]) * scale;
  return out;
}

HostTensor decode_jpeg_as(const HostTensor& contents, const std::string& where, const DecodeImageOptions& options) {
  if (options.channels == 4)
    KILN_THROW(ValueError, "[decode_image] ", where,
               ": a JPEG has no alpha channel: channels must be 0, 1 or 3, received channels=4.");
  HostTensor image = decode_jpeg(contents, {.channels = options.channels});
  if (options.dtype == DType::kF32) return scale_to_f32<uint8_t>(image, 255.0);
  if (options.dtype == DType::kI32) {
    HostTensor wide = image.astype(DType::kI32);
    for (int32_t& v : wide.data<int32_t>()) v *= 256;  // TF: floor(65536 / 256)
    return wide;
  }
  return image;
}

}  // namespace

HostTensor decode_image(const HostTensor& contents, const DecodeImageOptions& options) {
  if (options.channels != 0 && options.channels != 1 && options.channels != 3 && options.channels != 4)
    KILN_THROW(ValueError, "[decode_image] channels must be 0 (the file's), 1, 3 or 4, received channels=",
               options.channels, ".");
  if (options.dtype != DType::kU8 && options.dtype != DType::kI32 && options.dtype != DType::kF32)
    KILN_THROW(DTypeError, "[decode_image] dtype must be u8, i32 (tf.uint16's samples) or f32, received dtype=",
               options.dtype, ".");
  const auto in = image_detail::encoded_image("decode_image", contents);
  if (starts_with(in, "\xFF\xD8\xFF")) return decode_jpeg_as(contents, in.where, options);
  if (starts_with(in, "\x89PNG\r\n\x1A\n")) {
    if (options.dtype == DType::kF32)
      return scale_to_f32<int32_t>(decode_png(contents, {.channels = options.channels, .dtype = DType::kI32}), 65535.0);
    return decode_png(contents, {.channels = options.channels, .dtype = options.dtype});
  }
  const char* other = starts_with(in, "GIF8") ? "GIF" : starts_with(in, "BM") ? "BMP" : nullptr;
  if (other != nullptr)
    KILN_THROW(DataError, "[decode_image] ", in.where, ": a ", other,
               " file; Kiln decodes JPEG and PNG only. Hint: convert the files to PNG.");
  std::string head;
  for (size_t i = 0; i < std::min<size_t>(in.size, 4); ++i) {
    const char* hex = "0123456789ABCDEF";
    if (i) head += ' ';
    head += {hex[in.data[i] >> 4], hex[in.data[i] & 15]};
  }
  KILN_THROW(DataError, "[decode_image] ", in.where, ": unknown image format (first bytes ", head,
             "): expected JPEG (FF D8 FF) or PNG (89 50 4E 47 ...).");
}

}  // namespace kiln::data
