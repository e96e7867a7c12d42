// libpng with TensorFlow's transform recipe (png_io.cc), rewritten compactly. libpng reports
// errors by longjmp, so the decoding function holds only C objects between setjmp and the
// libpng calls; the C++ result is filled after it returns.
#include "tests/data/image/tf_png_reference.h"

#include <png.h>

#include <cstdlib>
#include <cstring>

namespace kiln::data::testing {
namespace {

struct Reader {
  const uint8_t* data;
  size_t left;
};

void read_fn(png_structp png, png_bytep out, png_size_t length) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (r->left < length) png_error(png, "read past the end");
  std::memcpy(out, r->data, length);
  r->data += length, r->left -= length;
}

void silent_warning(png_structp, png_const_charp) {}

struct Decoded {
  png_uint_32 width, height;
  int channels;
  unsigned char* pixels;  // malloc'd, row-major, 1 or 2 bytes per sample (host-endian)
  char error[200];
};

// Returns 0 on success. Mirrors CommonInitDecode + CommonFinishDecode.
int decode(const uint8_t* data, size_t size, int desired_channels, int desired_bits, Decoded* d) {
  Reader reader{data, size};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, silent_warning);
  png_infop info = png_create_info_struct(png);
  unsigned char* volatile pixels = nullptr;
  if (setjmp(png_jmpbuf(png))) {
    std::free(pixels);
    png_destroy_read_struct(&png, &info, nullptr);
    std::strcpy(d->error, "libpng error");
    return 1;
  }
  png_set_read_fn(png, &reader, read_fn);
  png_read_info(png, info);
  int bit_depth, color_type;
  png_get_IHDR(png, info, &d->width, &d->height, &bit_depth, &color_type, nullptr, nullptr, nullptr);
  const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  int channels = desired_channels;
  if (channels == 0) channels = color_type == PNG_COLOR_TYPE_PALETTE ? (has_trns ? 4 : 3) : png_get_channels(png, info);
  const bool has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0;
  if ((channels & 1) == 0) {
    if (has_alpha) {
    } else if (has_trns) {
      png_set_tRNS_to_alpha(png);
    } else {
      png_set_add_alpha(png, (1 << bit_depth) - 1, PNG_FILLER_AFTER);
    }
  } else if (has_alpha || has_trns) {
    png_set_strip_alpha(png);
  }
  if (bit_depth > 8 && desired_bits <= 8) png_set_strip_16(png);
  const bool synthesize_16 = bit_depth <= 8 && desired_bits == 16;
  png_set_packing(png);
  const int passes = png_set_interlace_handling(png);
  if (desired_bits > 8) png_set_swap(png);  // little-endian host
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  const bool want_gray = channels < 3;
  const bool is_gray = (color_type & PNG_COLOR_MASK_COLOR) == 0;
  if (is_gray && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (want_gray) {
    if (!is_gray) png_set_rgb_to_gray(png, 1, 0.299, 0.587);
  } else if (is_gray) {
    png_set_gray_to_rgb(png);
  }
  png_read_update_info(png, info);
  const size_t sample_bytes = desired_bits == 16 ? 2 : 1;
  const size_t row_bytes = d->width * static_cast<size_t>(channels) * sample_bytes;
  pixels = static_cast<unsigned char*>(std::malloc(row_bytes * d->height));
  for (int p = 0; p < passes; ++p)
    for (png_uint_32 y = 0; y < d->height; ++y) png_read_row(png, pixels + y * row_bytes, nullptr);
  png_read_end(png, info);
  png_destroy_read_struct(&png, &info, nullptr);
  if (synthesize_16) {
    // TF's Convert8to16: each row holds 8-bit samples at the start of its 16-bit-wide slot;
    // widen x -> x | x << 8 in place, from the back.
    const size_t row_samples = d->width * static_cast<size_t>(channels);
    for (size_t y = d->height; y-- > 0;) {
      for (size_t x = row_samples; x-- > 0;) {
        const unsigned char v = pixels[y * row_bytes + x];
        const auto wide = static_cast<uint16_t>(v | v << 8);
        std::memcpy(pixels + y * row_bytes + 2 * x, &wide, 2);
      }
    }
  }
  d->channels = channels;
  d->pixels = pixels;
  return 0;
}

}  // namespace

TfPngResult tf_reference_decode_png(const uint8_t* data, size_t size, int channels, int bits) {
  Decoded d{};
  TfPngResult r;
  if (decode(data, size, channels, bits, &d) != 0) {
    r.error = d.error;
    return r;
  }
  r.ok = true;
  r.height = static_cast<int>(d.height), r.width = static_cast<int>(d.width), r.channels = d.channels;
  const size_t n = size_t{d.height} * d.width * static_cast<size_t>(d.channels);
  r.samples.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (bits == 16) {
      uint16_t v;
      std::memcpy(&v, d.pixels + 2 * i, 2);
      r.samples[i] = v;
    } else {
      r.samples[i] = d.pixels[i];
    }
  }
  std::free(d.pixels);
  return r;
}

}  // namespace kiln::data::testing
