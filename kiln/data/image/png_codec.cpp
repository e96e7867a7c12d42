// decode_png / encode_png over libspng. spng decodes to the file's own sample layout
// (SPNG_FMT_PNG: packed sub-byte samples, palette indices, host-endian 16-bit), and the
// channel and depth rules of TensorFlow's png_io.cc (which sets libpng transforms) are applied
// here in one loop, so they read in one place instead of as a sequence of library flags.
#include "kiln/data/image/png_codec.h"

#include <spng.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/data/image/image_input_impl.h"
#include "kiln/data/image/image_limits.h"

namespace kiln::data {
namespace {

using image_detail::EncodedImage;

struct SpngFree {
  void operator()(spng_ctx* c) const { spng_ctx_free(c); }
};
using SpngContext = std::unique_ptr<spng_ctx, SpngFree>;

// spng keeps text, ICC and EXIF chunks (inflated); more than this is refused, so a
// compressed-text bomb cannot inflate without bound. Real files carry kilobytes.
constexpr size_t kMaxMetadataBytes = size_t{16} << 20;

// PNG colour types (the IHDR byte).
constexpr int kGray = 0, kRgb = 2, kPalette = 3, kGrayAlpha = 4, kRgba = 6;

const char* color_type_name(int t) {
  switch (t) {
    case kGray: return "grey";
    case kRgb: return "RGB";
    case kPalette: return "palette";
    case kGrayAlpha: return "grey+alpha";
    case kRgba: return "RGBA";
  }
  return "unknown";
}

[[noreturn]] void fail(const EncodedImage& in, const std::string& what) {
  KILN_THROW(DataError, "[decode_png] ", in.where, ": ", what);
}

void check(int rc, const EncodedImage& in, const char* stage) {
  if (rc == SPNG_OK) return;
  const bool truncated = rc == SPNG_IO_EOF || rc == SPNG_EOF || rc == SPNG_EIDAT_TOO_SHORT;
  fail(in, str_cat(truncated ? "truncated: " : "damaged: ", stage, ": ", spng_strerror(rc), " (libspng error ", rc,
                   ")."));
}

// The file's layout and the chunks that change its samples.
struct PngSource {
  spng_ihdr ihdr{};
  spng_plte plte{};
  spng_trns trns{};
  bool has_trns = false;

  int color_type() const { return ihdr.color_type; }
  int depth() const { return ihdr.bit_depth; }
  bool is_gray() const { return color_type() == kGray || color_type() == kGrayAlpha; }
  /// Samples per pixel in the file (a palette index is one).
  int file_samples() const {
    switch (color_type()) {
      case kRgb: return 3;
      case kGrayAlpha: return 2;
      case kRgba: return 4;
      default: return 1;
    }
  }
  /// channels=0 of TF: the file's own, palette as RGB (RGBA with tRNS).
  int native_channels() const {
    if (color_type() == kPalette) return has_trns ? 4 : 3;
    return file_samples();
  }
};

// Sample `i` (counted in samples along the scanline) of a scanline of `depth`-bit samples.
uint32_t sample(const uint8_t* scanline, int64_t i, int depth) {
  if (depth == 16) {
    uint16_t v;  // host-endian under SPNG_FMT_PNG
    std::memcpy(&v, scanline + 2 * i, 2);
    return v;
  }
  if (depth == 8) return scanline[i];
  const int64_t bit = i * depth;  // sub-byte samples are packed from the most significant bit
  return (scanline[bit / 8] >> (8 - depth - static_cast<int>(bit % 8))) & ((1u << depth) - 1);
}

// Adam7's passes: first column and row, column and row steps.
constexpr int kAdam7[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                              {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};

// Decodes the image data scanline by scanline into one unpacked sample per uint16, in image
// order. spng's own deinterlacing (spng_decode_image) misplaces sub-byte samples of Adam7
// images in 0.7.3 (Debian 12's), so Kiln places the interlaced passes' pixels itself.
std::unique_ptr<uint16_t[]> decode_samples(spng_ctx* ctx, const PngSource& src, const EncodedImage& in) {
  const uint32_t width = src.ihdr.width, height = src.ihdr.height;
  const int n = src.file_samples(), depth = src.depth();
  const size_t row_samples = size_t{width} * static_cast<size_t>(n);
  auto samples = std::make_unique_for_overwrite<uint16_t[]>(row_samples * height);
  std::vector<uint8_t> scanline((row_samples * static_cast<size_t>(depth) + 7) / 8);
  check(spng_decode_image(ctx, nullptr, 0, SPNG_FMT_PNG, SPNG_DECODE_PROGRESSIVE), in,
        str_cat("starting to decode the ", width, "x", height, " ", int{src.ihdr.bit_depth}, "-bit ",
                color_type_name(src.color_type()), " image data").c_str());
  const bool interlaced = src.ihdr.interlace_method != 0;
  while (true) {
    spng_row_info row{};
    const int info_rc = spng_get_row_info(ctx, &row);
    if (info_rc == SPNG_EOI) break;
    check(info_rc, in, "locating the next scanline");
    const int rc = spng_decode_scanline(ctx, scanline.data(), scanline.size());
    if (rc != SPNG_OK && rc != SPNG_EOI) check(rc, in, "decoding the image data");
    const int* pass = kAdam7[interlaced ? row.pass : 0];
    const uint32_t x0 = interlaced ? static_cast<uint32_t>(pass[0]) : 0, dx = interlaced ? static_cast<uint32_t>(pass[2]) : 1;
    KILN_CHECK(row.row_num < height, "libspng's row ", row.row_num, " outside ", height, " rows");
    uint16_t* out = samples.get() + size_t{row.row_num} * row_samples;
    int64_t i = 0;
    for (uint32_t x = x0; x < width; x += dx)
      for (int c = 0; c < n; ++c) out[size_t{x} * static_cast<size_t>(n) + static_cast<size_t>(c)] =
          static_cast<uint16_t>(sample(scanline.data(), i++, depth));
    if (rc == SPNG_EOI) break;
  }
  return samples;
}

// libpng's png_do_rgb_to_gray with TF's weights: png_set_rgb_to_gray(png, 1, 0.299, 0.587)
// stores them as 15-bit fixed point by truncation (29900 * 32768 / 100000 = 9797, 58700 * ... =
// 19234, blue the rest); 8-bit sums truncate, 16-bit sums round. Grey pixels pass unchanged.
uint32_t rgb_to_gray(uint32_t r, uint32_t g, uint32_t b, int bits) {
  constexpr uint32_t kRed = 9797, kGreen = 19234, kBlue = 32768 - kRed - kGreen;
  if (r == g && r == b) return r;
  const uint32_t sum = kRed * r + kGreen * g + kBlue * b;
  return bits == 16 ? (sum + 16384) >> 15 : sum >> 15;
}

// Converts the unpacked samples to `out_channels` channels of `out_bits` bits as TF does:
// sub-8-bit grey scaled to 8 bits, palette looked up, tRNS as alpha, alpha added (opaque) or
// dropped, RGB <-> grey, then 16 -> 8 bits by the high byte or 8 -> 16 by x * 257.
template <typename Out>
void convert(const PngSource& src, const uint16_t* samples, int out_channels, int out_bits, Out* dst,
             const EncodedImage& in) {
  const int depth = src.depth();
  const int bits = depth == 16 ? 16 : 8;  // sample depth after expanding sub-byte grey
  const uint32_t opaque = bits == 16 ? 65535 : 255;
  const int n = src.file_samples();
  const bool want_alpha = out_channels % 2 == 0;
  const bool want_gray = out_channels < 3;
  const uint32_t gray_scale = depth < 8 ? 255 / ((1u << depth) - 1) : 1;
  const auto& trns = src.trns;
  auto narrow = [&](uint32_t v) {
    if (bits == 16 && out_bits == 8) v >>= 8;
    if (bits == 8 && out_bits == 16) v *= 257;
    return static_cast<Out>(v);
  };
  for (uint32_t y = 0; y < src.ihdr.height; ++y) {
    for (uint32_t x = 0; x < src.ihdr.width; ++x, samples += n) {
      const uint16_t* p = samples;
      uint32_t r = 0, g = 0, b = 0, a = opaque;
      switch (src.color_type()) {
        case kGray:
          r = g = b = p[0] * gray_scale;
          if (src.has_trns && p[0] == trns.gray) a = 0;
          break;
        case kRgb:
          r = p[0], g = p[1], b = p[2];
          if (src.has_trns && r == trns.red && g == trns.green && b == trns.blue) a = 0;
          break;
        case kPalette: {
          const uint32_t index = p[0];
          if (index >= src.plte.n_entries)
            fail(in, str_cat("damaged: pixel (x=", x, ", y=", y, ") has palette index ", index, " but the PLTE chunk has ",
                             src.plte.n_entries, " entries."));
          const spng_plte_entry& e = src.plte.entries[index];
          r = e.red, g = e.green, b = e.blue;
          if (src.has_trns && index < trns.n_type3_entries) a = trns.type3_alpha[index];
          break;
        }
        case kGrayAlpha:
          r = g = b = p[0], a = p[1];
          break;
        case kRgba:
          r = p[0], g = p[1], b = p[2], a = p[3];
          break;
      }
      if (want_gray) {
        *dst++ = narrow(src.is_gray() ? r : rgb_to_gray(r, g, b, bits));
      } else {
        *dst++ = narrow(r), *dst++ = narrow(g), *dst++ = narrow(b);
      }
      if (want_alpha) *dst++ = narrow(a);
    }
  }
}

PngSource read_header(spng_ctx* ctx, const EncodedImage& in) {
  PngSource src;
  check(spng_get_ihdr(ctx, &src.ihdr), in, "reading the signature and IHDR");
  if (src.color_type() == kPalette) check(spng_get_plte(ctx, &src.plte), in, "reading PLTE");
  const int trns_rc = spng_get_trns(ctx, &src.trns);
  if (trns_rc != SPNG_ECHUNKAVAIL) check(trns_rc, in, "reading tRNS");
  src.has_trns = trns_rc == SPNG_OK;
  // The filtered image data: a filter byte per row plus the packed samples (interlacing adds
  // a little, so this is a lower bound on what the IDAT chunks must inflate to).
  const int64_t row_bytes = (int64_t{src.ihdr.width} * src.file_samples() * src.depth() + 7) / 8;
  const int64_t raw_bytes = int64_t{src.ihdr.height} * (1 + row_bytes);
  image_detail::check_image_size("decode_png", in, src.ihdr.width, src.ihdr.height,
                                 raw_bytes / kMaxPngExpansion <= static_cast<int64_t>(in.size),
                                 "deflate expands at most 1032:1");
  return src;
}

}  // namespace

HostTensor decode_png(const HostTensor& contents, const DecodePngOptions& options) {
  if (options.channels < 0 || options.channels > 4)
    KILN_THROW(ValueError, "[decode_png] channels must be 0 (the file's), 1, 2, 3 or 4, received channels=",
               options.channels, ".");
  if (options.dtype != DType::kU8 && options.dtype != DType::kI32)
    KILN_THROW(DTypeError, "[decode_png] dtype must be u8 or i32 (tf.uint16's samples), received dtype=",
               options.dtype, ".");
  const EncodedImage in = image_detail::encoded_image("decode_png", contents);
  SpngContext ctx(spng_ctx_new(0));
  if (!ctx) KILN_THROW(OutOfMemoryError, "[decode_png] ", in.where, ": cannot create a libspng context.");
  check(spng_set_png_buffer(ctx.get(), in.data, in.size), in, "opening");
  check(spng_set_chunk_limits(ctx.get(), in.size, kMaxMetadataBytes), in, "setting limits");
  const PngSource src = read_header(ctx.get(), in);

  const auto samples = decode_samples(ctx.get(), src, in);
  // The chunks after the image data, up to IEND: a truncated or damaged tail is an error, as
  // libpng's png_read_end makes it in TF.
  check(spng_decode_chunks(ctx.get()), in, "reading the chunks after the image data");

  const int channels = options.channels == 0 ? src.native_channels() : options.channels;
  HostTensor image = HostTensor::uninitialized(
      Shape(options.dtype, {int64_t{src.ihdr.height}, int64_t{src.ihdr.width}, int64_t{channels}}));
  if (options.dtype == DType::kU8) {
    convert(src, samples.get(), channels, 8, image.data<uint8_t>().data(), in);
  } else {
    convert(src, samples.get(), channels, 16, image.data<int32_t>().data(), in);
  }
  return image;
}

HostTensor encode_png(const HostTensor& image, const EncodePngOptions& options) {
  const auto dims = image_detail::image_dims("encode_png", image);
  if (dims.channels < 1 || dims.channels > 4)
    KILN_THROW(ShapeError, "[encode_png] expected 1 to 4 channels (grey, grey+alpha, RGB, RGBA), received ",
               image.shape(), ".");
  if (options.compression < -1 || options.compression > 9)
    KILN_THROW(ValueError, "[encode_png] compression must be -1 (zlib's default) or 0 to 9, received compression=",
               options.compression, ".");
  const int64_t samples = image.num_elements();
  std::vector<uint16_t> wide;  // 16-bit samples, host-endian as SPNG_FMT_PNG takes them
  const void* data = image.raw_data();
  size_t bytes = static_cast<size_t>(samples);
  uint8_t depth = 8;
  if (image.dtype() == DType::kI32) {
    depth = 16;
    wide.resize(static_cast<size_t>(samples));
    auto src = image.data<int32_t>();
    for (int64_t k = 0; k < samples; ++k) {
      if (src[k] < 0 || src[k] > 65535)
        KILN_THROW(ValueError, "[encode_png] an i32 image holds 16-bit samples in [0, 65535]; element ", k, " is ",
                   src[k], ".");
      wide[k] = static_cast<uint16_t>(src[k]);
    }
    data = wide.data(), bytes = wide.size() * 2;
  } else if (image.dtype() != DType::kU8) {
    KILN_THROW(DTypeError, "[encode_png] expected a u8 (8-bit) or i32 (16-bit) image, received ", image.shape(),
               ". Hint: convert_image_dtype to u8 first.");
  }
  constexpr uint8_t kColorTypes[] = {kGray, kGrayAlpha, kRgb, kRgba};
  spng_ihdr ihdr{static_cast<uint32_t>(dims.width), static_cast<uint32_t>(dims.height), depth,
                 kColorTypes[dims.channels - 1], 0, 0, 0};
  SpngContext ctx(spng_ctx_new(SPNG_CTX_ENCODER));
  if (!ctx) KILN_THROW(OutOfMemoryError, "[encode_png] cannot create a libspng context.");
  auto ok = [&](int rc, const char* stage) {
    KILN_CHECK(rc == SPNG_OK, "libspng failed ", stage, " for ", image.shape(), ": ", spng_strerror(rc));
  };
  ok(spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1), "to set a buffer output");
  if (options.compression >= 0)
    ok(spng_set_option(ctx.get(), SPNG_IMG_COMPRESSION_LEVEL, options.compression), "to set the level");
  ok(spng_set_ihdr(ctx.get(), &ihdr), "to set IHDR");
  ok(spng_encode_image(ctx.get(), data, bytes, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE), "to encode");
  size_t length = 0;
  int rc = SPNG_OK;
  std::unique_ptr<void, decltype(&std::free)> png(spng_get_png_buffer(ctx.get(), &length, &rc), &std::free);
  ok(rc, "to hand over the buffer");
  HostTensor out = HostTensor::uninitialized(Shape(DType::kU8, {static_cast<int64_t>(length)}));
  std::memcpy(out.raw_data(), png.get(), length);
  return out;
}

}  // namespace kiln::data
