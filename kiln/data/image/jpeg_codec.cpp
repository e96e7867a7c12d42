// decode_jpeg / encode_jpeg over the TurboJPEG API. TurboJPEG reports errors by return code
// (no setjmp in Kiln's frames); TJFLAG_STOPONWARNING turns libjpeg's warnings (corrupt or
// truncated entropy data) into errors, as TF does, and TJFLAG_LIMITSCANS refuses progressive
// files with absurd scan counts (a known way to make decoders spin).
#include "kiln/data/image/jpeg_codec.h"

#include <turbojpeg.h>

#include <cstring>
#include <memory>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/data/image/image_input_impl.h"
#include "kiln/data/image/image_limits.h"

namespace kiln::data {
namespace {

using image_detail::EncodedImage;

struct TjDestroy {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDestroy>;

struct TjFree {
  void operator()(unsigned char* buffer) const { tjFree(buffer); }
};

// JPEG's largest dimension (libjpeg's JPEG_MAX_DIMENSION).
constexpr int64_t kMaxJpegDimension = 65500;

[[noreturn]] void fail(const EncodedImage& in, const std::string& what) {
  KILN_THROW(DataError, "[decode_jpeg] ", in.where, ": ", what);
}

// TurboJPEG does not say whether the file has an Adobe APP14 marker, which decides how TF
// reads CMYK (Adobe files store it inverted): walk the marker segments before the first scan.
bool has_adobe_marker(const uint8_t* p, size_t n) {
  size_t at = 2;  // past SOI
  while (at + 4 <= n && p[at] == 0xFF) {
    const uint8_t marker = p[at + 1];
    if (marker == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) return false;  // SOS, EOI: the header is over
    const size_t length = size_t{p[at + 2]} << 8 | p[at + 3];
    if (length < 2) return false;
    // libjpeg's examine_app14: "Adobe" and at least 12 bytes of data.
    if (marker == 0xEE && length >= 14 && at + 9 <= n && std::memcmp(p + at + 4, "Adobe", 5) == 0) return true;
    at += 2 + length;
  }
  return false;
}

// TF's CMYK -> RGB (jpeg_mem.cc): Adobe files hold inverted CMYK.
void cmyk_to_rgb(const uint8_t* cmyk, int64_t pixels, bool adobe, uint8_t* rgb) {
  for (int64_t i = 0; i < pixels; ++i, cmyk += 4, rgb += 3) {
    const int c = cmyk[0], m = cmyk[1], y = cmyk[2], k = cmyk[3];
    if (adobe) {
      rgb[0] = static_cast<uint8_t>(k * c / 255), rgb[1] = static_cast<uint8_t>(k * m / 255);
      rgb[2] = static_cast<uint8_t>(k * y / 255);
    } else {
      rgb[0] = static_cast<uint8_t>((255 - k) * (255 - c) / 255);
      rgb[1] = static_cast<uint8_t>((255 - k) * (255 - m) / 255);
      rgb[2] = static_cast<uint8_t>((255 - k) * (255 - y) / 255);
    }
  }
}

void check_options(const DecodeJpegOptions& options) {
  if (options.channels != 0 && options.channels != 1 && options.channels != 3)
    KILN_THROW(ValueError, "[decode_jpeg] channels must be 0 (the file's), 1 or 3, received channels=",
               options.channels, ".");
  if (options.ratio != 1 && options.ratio != 2 && options.ratio != 4 && options.ratio != 8)
    KILN_THROW(ValueError, "[decode_jpeg] ratio must be 1, 2, 4 or 8, received ratio=", options.ratio, ".");
  if (!options.dct_method.empty() && options.dct_method != "INTEGER_FAST" && options.dct_method != "INTEGER_ACCURATE")
    KILN_THROW(ValueError, "[decode_jpeg] dct_method must be \"\", \"INTEGER_FAST\" or \"INTEGER_ACCURATE\", received \"",
               options.dct_method, "\".");
}

}  // namespace

HostTensor decode_jpeg(const HostTensor& contents, const DecodeJpegOptions& options) {
  check_options(options);
  const EncodedImage in = image_detail::encoded_image("decode_jpeg", contents);
  TjHandle tj(tjInitDecompress());
  if (!tj) KILN_THROW(OutOfMemoryError, "[decode_jpeg] ", in.where, ": cannot create a TurboJPEG decompressor.");
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(tj.get(), in.data, in.size, &width, &height, &subsampling, &colorspace) != 0)
    fail(in, str_cat("damaged header: ", tjGetErrorStr2(tj.get()), "."));
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  const int channels = options.channels != 0 ? options.channels : colorspace == TJCS_GRAY ? 1 : 3;
  if (cmyk && channels == 1)
    fail(in, "a CMYK JPEG decodes to RGB only (as in TensorFlow). Hint: pass channels=0 or 3, then rgb_to_grayscale.");
  image_detail::check_image_size("decode_jpeg", in, width, height,
                                 int64_t{width} * height / kMaxJpegPixelsPerByte <= static_cast<int64_t>(in.size),
                                 "a scan codes at least one bit per 8x8 block, and a block covers at most 32x32 pixels");
  const tjscalingfactor scale{1, options.ratio};
  const int out_width = TJSCALED(width, scale), out_height = TJSCALED(height, scale);
  const int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS |
                    (options.dct_method == "INTEGER_ACCURATE" ? TJFLAG_ACCURATEDCT : TJFLAG_FASTDCT) |
                    (options.fancy_upscaling ? 0 : TJFLAG_FASTUPSAMPLE);
  HostTensor image = HostTensor::uninitialized(Shape(DType::kU8, {out_height, out_width, channels}));
  auto* dst = static_cast<unsigned char*>(image.raw_data());
  std::vector<unsigned char> cmyk_pixels(cmyk ? static_cast<size_t>(out_width) * out_height * 4 : 0);
  const int rc = cmyk ? tjDecompress2(tj.get(), in.data, in.size, cmyk_pixels.data(), out_width, 0, out_height,
                                      TJPF_CMYK, flags)
                      : tjDecompress2(tj.get(), in.data, in.size, dst, out_width, 0, out_height,
                                      channels == 1 ? TJPF_GRAY : TJPF_RGB, flags);
  if (rc != 0) {
    const bool warning = tjGetErrorCode(tj.get()) == TJERR_WARNING;
    fail(in, str_cat(warning ? "damaged or truncated image data (a libjpeg warning, an error here as in TF): "
                             : "damaged: ",
                     tjGetErrorStr2(tj.get()), "."));
  }
  if (cmyk) cmyk_to_rgb(cmyk_pixels.data(), int64_t{out_width} * out_height, has_adobe_marker(in.data, in.size), dst);
  return image;
}

HostTensor encode_jpeg(const HostTensor& image, const EncodeJpegOptions& options) {
  const auto dims = image_detail::image_dims("encode_jpeg", image);
  if (image.dtype() != DType::kU8)
    KILN_THROW(DTypeError, "[encode_jpeg] expected a u8 image, received ", image.shape(),
               ". Hint: convert_image_dtype(image, DType::kU8).");
  if (dims.channels != 1 && dims.channels != 3)
    KILN_THROW(ShapeError, "[encode_jpeg] expected 1 (grey) or 3 (RGB) channels, received ", image.shape(), ".");
  if (options.format == "grayscale" || options.format == "rgb") {
    const int64_t wanted = options.format == "rgb" ? 3 : 1;
    if (dims.channels != wanted)
      KILN_THROW(ShapeError, "[encode_jpeg] format=\"", options.format, "\" expects ", wanted, " channels, received ",
                 image.shape(), ".");
  } else if (!options.format.empty()) {
    KILN_THROW(ValueError, "[encode_jpeg] format must be \"\", \"grayscale\" or \"rgb\", received \"", options.format,
               "\".");
  }
  if (options.quality < 0 || options.quality > 100)
    KILN_THROW(ValueError, "[encode_jpeg] quality must be in [0, 100], received quality=", options.quality, ".");
  if (dims.width > kMaxJpegDimension || dims.height > kMaxJpegDimension)
    KILN_THROW(ShapeError, "[encode_jpeg] JPEG holds at most ", kMaxJpegDimension, " pixels a side, received ",
               image.shape(), ".");
  TjHandle tj(tjInitCompress());
  if (!tj) KILN_THROW(OutOfMemoryError, "[encode_jpeg] cannot create a TurboJPEG compressor.");
  const int subsampling = dims.channels == 1 ? TJSAMP_GRAY : options.chroma_downsampling ? TJSAMP_420 : TJSAMP_444;
  // libjpeg's default (accurate) forward DCT, as TF's encoder uses; TurboJPEG would pick the fast one.
  const int flags = TJFLAG_ACCURATEDCT | (options.progressive ? TJFLAG_PROGRESSIVE : 0);
  unsigned char* buffer = nullptr;
  unsigned long length = 0;
  const int rc = tjCompress2(tj.get(), static_cast<const unsigned char*>(image.raw_data()), static_cast<int>(dims.width),
                             0, static_cast<int>(dims.height), dims.channels == 1 ? TJPF_GRAY : TJPF_RGB, &buffer,
                             &length, subsampling, options.quality, flags);
  std::unique_ptr<unsigned char, TjFree> owned(buffer);
  KILN_CHECK(rc == 0, "TurboJPEG failed to encode ", image.shape(), ": ", tjGetErrorStr2(tj.get()));
  HostTensor out = HostTensor::uninitialized(Shape(DType::kU8, {static_cast<int64_t>(length)}));
  std::memcpy(out.raw_data(), buffer, length);
  return out;
}

}  // namespace kiln::data
