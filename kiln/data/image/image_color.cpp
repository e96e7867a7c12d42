// Colour ops in f32, following tensorflow/python/ops/image_ops_impl.py and the CPU kernels
// adjust_{contrast,saturation,hue}_op.cc (HSV as TF's rgb_to_hsv / hsv_to_rgb compute it).
#include "kiln/data/image/image_color.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kiln/core/check.h"
#include "kiln/data/image/image_layout_impl.h"

namespace kiln::data {
namespace {

using image_detail::ImageLayout;
using image_detail::image_layout;

// The largest value of an integer dtype, as TF's dtype.max.
double dtype_max(DType t) {
  switch (t) {
    case DType::kU8: return 255.0;
    case DType::kI32: return 2147483647.0;
    case DType::kI64: return 9223372036854775807.0;
    default: return 1.0;
  }
}

bool is_image_integer(DType t) { return t == DType::kU8 || t == DType::kI32 || t == DType::kI64; }

void check_dtype(const char* op, DType t) {
  if (t == DType::kBool) KILN_THROW(DTypeError, "[", op, "] expected a numeric image, received dtype=", t, ".");
}

// The image in f32 on TF's scale (integers to [0, 1]); f32 images are returned as they are.
HostTensor to_float(const HostTensor& image) {
  return image.dtype() == DType::kF32 ? image : convert_image_dtype(image, DType::kF32);
}

// Applies `fn(float* pixels_of_one_image, int64_t pixels, int64_t channels)` to a copy of each
// image in f32 and converts back to the input's dtype.
template <typename Fn>
HostTensor adjust(const char* op, const HostTensor& image, Fn fn) {
  check_dtype(op, image.dtype());
  const ImageLayout l = image_layout(op, image);
  HostTensor f = to_float(image);
  if (f.shares_storage_with(image)) f = f.clone();
  float* p = f.data<float>().data();
  const int64_t per_image = l.height * l.width * l.channels;
  for (int64_t b = 0; b < l.batch; ++b) fn(p + b * per_image, l.height * l.width, l.channels);
  return convert_image_dtype(f, image.dtype());
}

void check_rgb(const char* op, const HostTensor& image) {
  if (image.rank() < 1 || image.dims().back() != 3)
    KILN_THROW(ShapeError, "[", op, "] expected RGB images (last dimension 3), received ", image.shape(), ".");
}

// TF's adjust_saturation_op.cc conversions.
void rgb_to_hsv(float r, float g, float b, float* h, float* s, float* v) {
  const float vv = std::max(r, std::max(g, b));
  const float range = vv - std::min(r, std::min(g, b));
  *s = vv > 0 ? range / vv : 0;
  const float norm = 1.0f / (6.0f * range);
  float hh;
  if (r == vv) {
    hh = norm * (g - b);
  } else if (g == vv) {
    hh = norm * (b - r) + 2.0f / 6.0f;
  } else {
    hh = norm * (r - g) + 4.0f / 6.0f;
  }
  if (range <= 0.0f) hh = 0;
  if (hh < 0.0f) hh += 1;
  *v = vv, *h = hh;
}

void hsv_to_rgb(float h, float s, float v, float* r, float* g, float* b) {
  const float c = s * v, m = v - c, dh = h * 6;
  const int category = static_cast<int>(dh);
  float fmodu = dh;
  while (fmodu <= 0) fmodu += 2.0f;
  while (fmodu >= 2.0f) fmodu -= 2.0f;
  const float x = c * (1 - std::abs(fmodu - 1));
  float rr = 0, gg = 0, bb = 0;
  switch (category) {
    case 0: rr = c, gg = x; break;
    case 1: rr = x, gg = c; break;
    case 2: gg = c, bb = x; break;
    case 3: gg = x, bb = c; break;
    case 4: rr = x, bb = c; break;
    case 5: rr = c, bb = x; break;
    default: break;
  }
  *r = rr + m, *g = gg + m, *b = bb + m;
}

template <typename Fn>
HostTensor adjust_hsv(const char* op, const HostTensor& image, Fn fn) {
  check_rgb(op, image);
  return adjust(op, image, [&](float* p, int64_t pixels, int64_t) {
    for (int64_t i = 0; i < pixels; ++i, p += 3) {
      float h, s, v;
      rgb_to_hsv(p[0], p[1], p[2], &h, &s, &v);
      fn(h, s);
      hsv_to_rgb(h, s, v, &p[0], &p[1], &p[2]);
    }
  });
}

// The smallest value of an integer dtype, and the largest as a double that converts back
// without overflow (i64's 2^63 - 1 rounds up to 2^63 in a double).
double dtype_min(DType t) { return t == DType::kU8 ? 0.0 : -dtype_max(t) - 1; }
double dtype_max_saturating(DType t) { return t == DType::kI64 ? 9223372036854774784.0 : dtype_max(t); }

// Float to integer: x * (max + 0.5) in the input's float type, saturated, then truncated
// (as a double in [min, max], which the final astype truncates).
template <typename From>
HostTensor float_to_int(const HostTensor& in, DType dtype) {
  auto src = in.data<From>();
  HostTensor wide = HostTensor::uninitialized(Shape(DType::kF64, in.dims()));
  auto dst = wide.data<double>();
  const auto scale = static_cast<From>(dtype_max(dtype) + 0.5);
  for (size_t i = 0; i < src.size(); ++i)
    dst[i] = std::trunc(std::clamp(static_cast<double>(static_cast<From>(src[i] * scale)), dtype_min(dtype),
                                   dtype_max_saturating(dtype)));
  return wide.astype(dtype);
}

// Integer to float: cast, then times 1 / max in the float type.
template <typename To>
HostTensor int_to_float(const HostTensor& in, DType from) {
  HostTensor out = in.astype(dtype_of<To>);
  const auto scale = static_cast<To>(1.0 / dtype_max(from));
  for (To& v : out.data<To>()) v *= scale;
  return out;
}

}  // namespace

HostTensor convert_image_dtype(const HostTensor& image, DType dtype) {
  check_dtype("convert_image_dtype", image.dtype());
  check_dtype("convert_image_dtype", dtype);
  const DType from = image.dtype();
  if (from == dtype) return image;
  if (is_floating(from) && is_floating(dtype)) return image.astype(dtype);
  if (is_image_integer(from) && is_image_integer(dtype)) {
    // TF: divide (floor) or multiply by the ratio of (max + 1)s.
    const HostTensor wide = image.astype(DType::kI64);
    HostTensor out = HostTensor::uninitialized(Shape(DType::kI64, image.dims()));
    const double in_max = dtype_max(from), out_max = dtype_max(dtype);
    auto src = wide.data<int64_t>();
    auto dst = out.data<int64_t>();
    if (in_max > out_max) {
      const auto ratio = static_cast<int64_t>((in_max + 1) / (out_max + 1));
      for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i] / ratio - (src[i] % ratio < 0 ? 1 : 0);
    } else {
      const auto ratio = static_cast<int64_t>((out_max + 1) / (in_max + 1));
      for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i] * ratio;
    }
    return out.astype(dtype);
  }
  // Between integers and floats, computed in f32 (f64 for f64) as TF's cast-and-multiply.
  if (is_image_integer(dtype)) {
    return from == DType::kF64 ? float_to_int<double>(image, dtype) : float_to_int<float>(image.astype(DType::kF32), dtype);
  }
  return dtype == DType::kF64 ? int_to_float<double>(image, from) : int_to_float<float>(image, from).astype(dtype);
}

HostTensor adjust_brightness(const HostTensor& image, float delta) {
  return adjust("adjust_brightness", image, [&](float* p, int64_t pixels, int64_t channels) {
    for (int64_t i = 0; i < pixels * channels; ++i) p[i] += delta;
  });
}

HostTensor adjust_contrast(const HostTensor& image, float contrast_factor) {
  return adjust("adjust_contrast", image, [&](float* p, int64_t pixels, int64_t channels) {
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < pixels; ++i) sum += p[i * channels + c];
      const auto mean = static_cast<float>(sum / static_cast<double>(pixels));
      for (int64_t i = 0; i < pixels; ++i) p[i * channels + c] = (p[i * channels + c] - mean) * contrast_factor + mean;
    }
  });
}

HostTensor adjust_saturation(const HostTensor& image, float saturation_factor) {
  return adjust_hsv("adjust_saturation", image,
                    [&](float&, float& s) { s = std::min(1.0f, std::max(0.0f, s * saturation_factor)); });
}

HostTensor adjust_hue(const HostTensor& image, float delta) {
  if (!(delta >= -1.0f && delta <= 1.0f))
    KILN_THROW(ValueError, "[adjust_hue] delta must be in [-1, 1], received delta=", delta, ".");
  return adjust_hsv("adjust_hue", image, [&](float& h, float&) {
    h = std::fmod(h + delta, 1.0f);
    if (h < 0) h += 1.0f;
  });
}

HostTensor per_image_standardization(const HostTensor& image) {
  check_dtype("per_image_standardization", image.dtype());
  const ImageLayout l = image_layout("per_image_standardization", image);
  HostTensor f = image.astype(DType::kF32);
  if (f.shares_storage_with(image)) f = f.clone();
  float* p = f.data<float>().data();
  const int64_t n = l.height * l.width * l.channels;
  const float min_stddev = 1.0f / std::sqrt(static_cast<float>(n));
  for (int64_t b = 0; b < l.batch; ++b, p += n) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i) sum += p[i];
    const double mean = sum / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) sq += (p[i] - mean) * (p[i] - mean);
    const auto stddev = static_cast<float>(std::sqrt(sq / static_cast<double>(n)));
    const float adjusted = std::max(stddev, min_stddev);
    for (int64_t i = 0; i < n; ++i) p[i] = (p[i] - static_cast<float>(mean)) / adjusted;
  }
  return f;
}

HostTensor rgb_to_grayscale(const HostTensor& image) {
  check_dtype("rgb_to_grayscale", image.dtype());
  check_rgb("rgb_to_grayscale", image);
  const ImageLayout l = image_layout("rgb_to_grayscale", image);
  const HostTensor f = to_float(image);
  Dims dims = l.dims_with(l.height, l.width);
  dims.back() = 1;
  HostTensor gray = HostTensor::uninitialized(Shape(DType::kF32, dims));
  const float* p = f.data<float>().data();
  float* g = gray.data<float>().data();
  for (int64_t i = 0; i < gray.num_elements(); ++i, p += 3) g[i] = p[0] * 0.2989f + p[1] * 0.5870f + p[2] * 0.1140f;
  return convert_image_dtype(gray, image.dtype());
}

HostTensor grayscale_to_rgb(const HostTensor& image) {
  if (image.rank() < 1 || image.dims().back() != 1)
    KILN_THROW(ShapeError, "[grayscale_to_rgb] expected one channel (last dimension 1), received ", image.shape(), ".");
  Dims dims = image.dims();
  dims.back() = 3;
  HostTensor out = HostTensor::uninitialized(Shape(image.dtype(), dims));
  const size_t e = size_of(image.dtype());
  const auto* src = static_cast<const std::byte*>(image.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (int64_t i = 0; i < image.num_elements(); ++i)
    for (int k = 0; k < 3; ++k) std::memcpy(dst + (static_cast<size_t>(i) * 3 + k) * e, src + static_cast<size_t>(i) * e, e);
  return out;
}

namespace {

float uniform_between(const StatelessSeed& seed, float lower, float upper) {
  return lower + (upper - lower) * stateless_uniform(seed, 0);
}

void check_range(const char* op, float lower, float upper) {
  if (!(lower >= 0.0f && lower < upper))
    KILN_THROW(ValueError, "[", op, "] expected 0 <= lower < upper, received lower=", lower, ", upper=", upper, ".");
}

}  // namespace

HostTensor random_brightness(const HostTensor& image, float max_delta, const StatelessSeed& seed) {
  if (!(max_delta >= 0.0f))
    KILN_THROW(ValueError, "[random_brightness] max_delta must be >= 0, received max_delta=", max_delta, ".");
  return adjust_brightness(image, uniform_between(seed, -max_delta, max_delta));
}

HostTensor random_contrast(const HostTensor& image, float lower, float upper, const StatelessSeed& seed) {
  check_range("random_contrast", lower, upper);
  return adjust_contrast(image, uniform_between(seed, lower, upper));
}

HostTensor random_saturation(const HostTensor& image, float lower, float upper, const StatelessSeed& seed) {
  check_range("random_saturation", lower, upper);
  return adjust_saturation(image, uniform_between(seed, lower, upper));
}

HostTensor random_hue(const HostTensor& image, float max_delta, const StatelessSeed& seed) {
  if (!(max_delta >= 0.0f && max_delta <= 0.5f))
    KILN_THROW(ValueError, "[random_hue] max_delta must be in [0, 0.5], received max_delta=", max_delta, ".");
  return adjust_hue(image, uniform_between(seed, -max_delta, max_delta));
}

}  // namespace kiln::data
