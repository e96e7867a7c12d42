// resize: each method as TensorFlow 2's kernel computes it, in f32 and in the same order of
// operations (tensorflow/core/kernels/image/resize_{bilinear,nearest_neighbor,bicubic,area}_op
// and scale_and_translate_op), so results match TF's to f32 rounding.
#include "kiln/data/image/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/data/image/image_layout_impl.h"

namespace kiln::data {
namespace {

// Images as [batch, height, width, channels], f32.
struct Images {
  int64_t batch, height, width, channels;
};

int64_t bound(int64_t v, int64_t limit) { return std::min(limit - 1, std::max<int64_t>(0, v)); }

// --- bilinear (resize_bilinear, half_pixel_centers) -------------------------------------------

struct Lerp {
  int64_t lower, upper;
  float lerp;
};

std::vector<Lerp> bilinear_weights(int64_t out_size, int64_t in_size) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  std::vector<Lerp> w(static_cast<size_t>(out_size));
  for (int64_t i = 0; i < out_size; ++i) {
    const float in = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const float in_f = std::floor(in);
    w[i] = {std::max(static_cast<int64_t>(in_f), int64_t{0}),
            std::min(static_cast<int64_t>(std::ceil(in)), in_size - 1), in - in_f};
  }
  return w;
}

void resize_bilinear(const float* src, const Images& in, int64_t oh, int64_t ow, float* dst) {
  const auto ys = bilinear_weights(oh, in.height), xs = bilinear_weights(ow, in.width);
  const int64_t c = in.channels, row = in.width * c;
  for (int64_t b = 0; b < in.batch; ++b) {
    const float* image = src + b * in.height * row;
    for (int64_t y = 0; y < oh; ++y) {
      const float* top = image + ys[y].lower * row;
      const float* bottom = image + ys[y].upper * row;
      for (int64_t x = 0; x < ow; ++x) {
        for (int64_t k = 0; k < c; ++k) {
          const float tl = top[xs[x].lower * c + k], tr = top[xs[x].upper * c + k];
          const float bl = bottom[xs[x].lower * c + k], br = bottom[xs[x].upper * c + k];
          const float t = tl + (tr - tl) * xs[x].lerp;
          const float bo = bl + (br - bl) * xs[x].lerp;
          *dst++ = t + (bo - t) * ys[y].lerp;
        }
      }
    }
  }
}

// --- nearest (resize_nearest_neighbor, half_pixel_centers): any dtype, copied by bytes ---------

std::vector<int64_t> nearest_indices(int64_t out_size, int64_t in_size) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  std::vector<int64_t> idx(static_cast<size_t>(out_size));
  for (int64_t i = 0; i < out_size; ++i) {
    const auto in = static_cast<int64_t>(std::floor((static_cast<float>(i) + 0.5f) * scale));
    idx[i] = std::max<int64_t>(0, std::min(in, in_size - 1));
  }
  return idx;
}

void resize_nearest(const std::byte* src, const Images& in, int64_t oh, int64_t ow, size_t element_bytes,
                    std::byte* dst) {
  const auto ys = nearest_indices(oh, in.height), xs = nearest_indices(ow, in.width);
  const auto pixel = static_cast<size_t>(in.channels) * element_bytes;
  for (int64_t b = 0; b < in.batch; ++b) {
    const std::byte* image = src + static_cast<size_t>(b * in.height * in.width) * pixel;
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x, dst += pixel)
        std::memcpy(dst, image + static_cast<size_t>(ys[y] * in.width + xs[x]) * pixel, pixel);
    }
  }
}

// --- bicubic (resize_bicubic, half_pixel_centers: Keys' a = -0.5, a 1024-entry table) -------

constexpr int64_t kTableSize = 1024;

std::vector<float> keys_table() {
  constexpr double a = -0.5;
  std::vector<float> t((kTableSize + 1) * 2);
  for (int64_t i = 0; i <= kTableSize; ++i) {
    float x = static_cast<float>(static_cast<double>(i) * 1.0 / kTableSize);
    t[i * 2] = static_cast<float>(((a + 2) * x - (a + 3)) * x * x + 1);
    x += 1.0f;
    t[i * 2 + 1] = static_cast<float>(((a * x - 5 * a) * x + 8 * a) * x - 4 * a);
  }
  return t;
}

struct CubicTaps {
  int64_t index[4];
  float weight[4];
};

// Taps outside the image get weight 0 and the rest are renormalized (TF's use_keys_cubic).
std::vector<CubicTaps> bicubic_taps(int64_t out_size, int64_t in_size, const std::vector<float>& table) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  std::vector<CubicTaps> taps(static_cast<size_t>(out_size));
  for (int64_t i = 0; i < out_size; ++i) {
    const float in_f = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const auto in = static_cast<int64_t>(std::floor(in_f));
    const float delta = in_f - static_cast<float>(in);
    const int64_t offset = lrintf(delta * kTableSize);
    const float w[4] = {table[offset * 2 + 1], table[offset * 2], table[(kTableSize - offset) * 2],
                        table[(kTableSize - offset) * 2 + 1]};
    CubicTaps& t = taps[i];
    float sum = 0;
    for (int k = 0; k < 4; ++k) {
      t.index[k] = bound(in - 1 + k, in_size);
      t.weight[k] = t.index[k] == in - 1 + k ? w[k] : 0.0f;
      sum += t.weight[k];
    }
    if (std::abs(sum) >= 1000.0f * std::numeric_limits<float>::min()) {
      const float inv = 1.0f / sum;
      for (float& v : t.weight) v *= inv;
    }
  }
  return taps;
}

void resize_bicubic(const float* src, const Images& in, int64_t oh, int64_t ow, float* dst) {
  const auto table = keys_table();
  const auto ys = bicubic_taps(oh, in.height, table), xs = bicubic_taps(ow, in.width, table);
  const int64_t c = in.channels, row = in.width * c;
  for (int64_t b = 0; b < in.batch; ++b) {
    const float* image = src + b * in.height * row;
    for (int64_t y = 0; y < oh; ++y) {
      const CubicTaps& ty = ys[y];
      for (int64_t x = 0; x < ow; ++x) {
        const CubicTaps& tx = xs[x];
        for (int64_t k = 0; k < c; ++k) {
          // Down each of the 4 columns with the y weights, then across with the x weights.
          float column[4];
          for (int j = 0; j < 4; ++j) {
            const int64_t at = tx.index[j] * c + k;
            column[j] = image[ty.index[0] * row + at] * ty.weight[0] + image[ty.index[1] * row + at] * ty.weight[1] +
                        image[ty.index[2] * row + at] * ty.weight[2] + image[ty.index[3] * row + at] * ty.weight[3];
          }
          *dst++ = column[0] * tx.weight[0] + column[1] * tx.weight[1] + column[2] * tx.weight[2] +
                   column[3] * tx.weight[3];
        }
      }
    }
  }
}

// --- area (resize_area): each output pixel averages the input area it covers ------------------

struct AreaSpan {
  int64_t start, end;  // input cells [start, end), bounded when read
  std::vector<float> scales;
};

AreaSpan area_span(int64_t i, float scale) {
  const float in0 = static_cast<float>(i) * scale, in1 = static_cast<float>(i + 1) * scale;
  AreaSpan s{static_cast<int64_t>(std::floor(in0)), static_cast<int64_t>(std::ceil(in1)), {}};
  for (int64_t v = s.start; v < s.end; ++v) {
    const auto fv = static_cast<float>(v);
    s.scales.push_back(fv < in0 ? (fv + 1 > in1 ? scale : fv + 1 - in0) : (fv + 1 > in1 ? in1 - fv : 1.0f));
  }
  return s;
}

void resize_area(const float* src, const Images& in, int64_t oh, int64_t ow, float* dst) {
  const float sy = static_cast<float>(in.height) / static_cast<float>(oh);
  const float sx = static_cast<float>(in.width) / static_cast<float>(ow);
  const auto norm = static_cast<float>(1.0 / (sy * sx));
  std::vector<AreaSpan> xs;
  for (int64_t x = 0; x < ow; ++x) xs.push_back(area_span(x, sx));
  const int64_t c = in.channels, row = in.width * c;
  for (int64_t b = 0; b < in.batch; ++b) {
    const float* image = src + b * in.height * row;
    for (int64_t y = 0; y < oh; ++y) {
      const AreaSpan ys = area_span(y, sy);
      for (int64_t x = 0; x < ow; ++x) {
        const AreaSpan& sxs = xs[x];
        for (int64_t k = 0; k < c; ++k) {
          float sum = 0;
          for (size_t i = 0; i < ys.scales.size(); ++i) {
            const float* r = image + bound(ys.start + static_cast<int64_t>(i), in.height) * row;
            // TF's order: first cell scaled, the middle ones added, the last one scaled.
            float sum_y = r[bound(sxs.start, in.width) * c + k] * sxs.scales.front();
            if (sxs.start + 1 != sxs.end) {
              for (int64_t v = sxs.start + 1; v < sxs.end - 1; ++v) sum_y += r[bound(v, in.width) * c + k];
              sum_y += r[bound(sxs.end - 1, in.width) * c + k] * sxs.scales.back();
            }
            sum += sum_y * ys.scales[i];
          }
          *dst++ = sum * norm;
        }
      }
    }
  }
}

// --- kernel methods (scale_and_translate): separable spans, rows then columns ----------------

float kernel_value(const std::string& kernel, float x) {
  x = std::abs(x);
  if (kernel == "triangle") return x < 1.0f ? 1.0f - x : 0.0f;
  if (kernel == "keyscubic") {
    if (x >= 2.0f) return 0.0f;
    if (x >= 1.0f) return ((-0.5f * x + 2.5f) * x - 4.0f) * x + 2.0f;
    return ((1.5f * x - 2.5f) * x) * x + 1.0f;
  }
  if (kernel == "mitchellcubic") {
    if (x >= 2.0f) return 0.0f;
    if (x >= 1.0f) return (((-7.0f / 18.0f) * x + 2.0f) * x - 10.0f / 3.0f) * x + 16.0f / 9.0f;
    return (((7.0f / 6.0f) * x - 2.0f) * x) * x + 8.0f / 9.0f;
  }
  if (kernel == "gaussian") {
    constexpr float kRadius = 1.5f, kSigma = kRadius / 3.0f;
    if (x >= kRadius) return 0.0f;
    return static_cast<float>(std::exp(-x * x / (2.0 * kSigma * kSigma)));
  }
  // lanczos3, lanczos5
  const float radius = kernel == "lanczos3" ? 3.0f : 5.0f;
  constexpr float kPi = 3.14159265359f;
  if (x > radius) return 0.0f;
  if (x <= 1e-3f) return 1.0f;
  return radius * std::sin(kPi * x) * std::sin(kPi * x / radius) / (kPi * kPi * x * x);
}

float kernel_radius(const std::string& kernel) {
  if (kernel == "triangle") return 1.0f;
  if (kernel == "gaussian") return 1.5f;
  if (kernel == "lanczos3") return 3.0f;
  if (kernel == "lanczos5") return 5.0f;
  return 2.0f;  // keyscubic, mitchellcubic
}

struct Span {
  int64_t start = 0;
  std::vector<float> weights;  // empty: the sample falls outside the input (all zero)
};

std::vector<Span> kernel_spans(const std::string& kernel, int64_t out_size, int64_t in_size, bool antialias) {
  const float scale = static_cast<float>(out_size) / static_cast<float>(in_size);
  const auto inv_scale = static_cast<float>(1.0 / scale);
  const float kernel_scale = antialias ? std::max(inv_scale, 1.0f) : 1.0f;
  const float one_over_kernel_scale = 1.0f / kernel_scale;
  const float radius = kernel_radius(kernel);
  std::vector<Span> spans(static_cast<size_t>(out_size));
  for (int64_t x = 0; x < out_size; ++x) {
    const float sample = (static_cast<float>(x) + 0.5f) * inv_scale;
    if (sample < 0 || sample > static_cast<float>(in_size)) continue;
    const auto first = static_cast<int64_t>(std::ceil(sample - radius * kernel_scale - 0.5f));
    const auto last = static_cast<int64_t>(std::floor(sample + radius * kernel_scale - 0.5f));
    Span& s = spans[x];
    s.start = std::clamp<int64_t>(first, 0, in_size - 1);
    const int64_t end = std::clamp<int64_t>(last, 0, in_size - 1) + 1;
    float total = 0;
    for (int64_t source = s.start; source < end; ++source) {
      const float w = kernel_value(kernel, (static_cast<float>(source) + 0.5f - sample) * one_over_kernel_scale);
      total += w;
      s.weights.push_back(w);
    }
    if (std::abs(total) >= 1000.0f * std::numeric_limits<float>::min()) {
      const float inv = 1.0f / total;
      for (float& w : s.weights) w *= inv;
    } else {
      std::fill(s.weights.begin(), s.weights.end(), 0.0f);
    }
  }
  return spans;
}

void resize_kernel(const std::string& kernel, bool antialias, const float* src, const Images& in, int64_t oh,
                   int64_t ow, float* dst) {
  const auto rows = kernel_spans(kernel, oh, in.height, antialias);
  const auto cols = kernel_spans(kernel, ow, in.width, antialias);
  const int64_t c = in.channels;
  std::vector<float> mid(static_cast<size_t>(oh * in.width * c));  // [oh, in.width, c]
  for (int64_t b = 0; b < in.batch; ++b) {
    const float* image = src + b * in.height * in.width * c;
    for (int64_t y = 0; y < oh; ++y) {
      float* m = mid.data() + y * in.width * c;
      for (int64_t i = 0; i < in.width * c; ++i) {
        float sum = 0;
        for (size_t j = 0; j < rows[y].weights.size(); ++j)
          sum += rows[y].weights[j] * image[(rows[y].start + static_cast<int64_t>(j)) * in.width * c + i];
        m[i] = sum;
      }
    }
    for (int64_t y = 0; y < oh; ++y) {
      const float* m = mid.data() + y * in.width * c;
      for (int64_t x = 0; x < ow; ++x) {
        for (int64_t k = 0; k < c; ++k) {
          float sum = 0;
          for (size_t j = 0; j < cols[x].weights.size(); ++j)
            sum += cols[x].weights[j] * m[(cols[x].start + static_cast<int64_t>(j)) * c + k];
          *dst++ = sum;
        }
      }
    }
  }
}

constexpr const char* kMethods = "\"bilinear\", \"nearest\", \"bicubic\", \"area\", \"lanczos3\", \"lanczos5\", "
                                 "\"gaussian\" or \"mitchellcubic\"";

}  // namespace

HostTensor resize(const HostTensor& images, int64_t height, int64_t width, const ResizeOptions& options) {
  const std::string& method = options.method;
  const bool known = method == "bilinear" || method == "nearest" || method == "bicubic" || method == "area" ||
                     method == "lanczos3" || method == "lanczos5" || method == "gaussian" || method == "mitchellcubic";
  if (!known) KILN_THROW(ValueError, "[resize] method must be ", kMethods, ", received \"", method, "\".");
  if (height < 1 || width < 1)
    KILN_THROW(ValueError, "[resize] the size must be at least 1x1, received height=", height, ", width=", width, ".");
  const auto layout = image_detail::image_layout("resize", images);
  if (images.dtype() == DType::kBool)
    KILN_THROW(DTypeError, "[resize] expected a numeric image, received ", images.shape(), ".");
  const Images in{layout.batch, layout.height, layout.width, layout.channels};
  if (options.preserve_aspect_ratio) {
    const float fy = static_cast<float>(height) / static_cast<float>(in.height);
    const float fx = static_cast<float>(width) / static_cast<float>(in.width);
    const float f = std::min(fy, fx);
    height = static_cast<int64_t>(std::nearbyint(f * static_cast<float>(in.height)));
    width = static_cast<int64_t>(std::nearbyint(f * static_cast<float>(in.width)));
    height = std::max<int64_t>(height, 1), width = std::max<int64_t>(width, 1);
  }
  const Dims out_dims = layout.dims_with(height, width);
  if (method == "nearest") {
    HostTensor out = HostTensor::uninitialized(Shape(images.dtype(), out_dims));
    resize_nearest(static_cast<const std::byte*>(images.raw_data()), in, height, width, size_of(images.dtype()),
                   static_cast<std::byte*>(out.raw_data()));
    return out;
  }
  const HostTensor src = images.astype(DType::kF32);
  HostTensor out = HostTensor::uninitialized(Shape(DType::kF32, out_dims));
  const float* s = src.data<float>().data();
  float* o = out.data<float>().data();
  if (method == "area") {
    resize_area(s, in, height, width, o);
  } else if (method == "bilinear" && !options.antialias) {
    resize_bilinear(s, in, height, width, o);
  } else if (method == "bicubic" && !options.antialias) {
    resize_bicubic(s, in, height, width, o);
  } else {
    const std::string kernel = method == "bilinear" ? "triangle" : method == "bicubic" ? "keyscubic" : method;
    resize_kernel(kernel, options.antialias, s, in, height, width, o);
  }
  return out;
}

HostTensor resize_weights(int64_t in_size, int64_t out_size, const ResizeOptions& options) {
  if (options.preserve_aspect_ratio)
    KILN_THROW(ValueError, "[resize_weights] the weights of one axis cannot preserve the aspect ratio; pass "
               "preserve_aspect_ratio=false.");
  if (in_size < 1) KILN_THROW(ValueError, "[resize_weights] in_size must be at least 1, received ", in_size, ".");
  // The identity as an in_size x 1 image of in_size channels: channel j is the unit impulse at
  // row j, so output row i, channel j is the weight of input j in output i. A 1 -> 1 width is
  // the identity for every method.
  HostTensor identity = HostTensor::zeros(Shape(DType::kF32, {in_size, 1, in_size}));
  float* d = identity.data<float>().data();
  for (int64_t j = 0; j < in_size; ++j) d[j * in_size + j] = 1.0f;
  ResizeOptions axis = options;
  return resize(identity, out_size, 1, axis).reshape({out_size, in_size});
}

}  // namespace kiln::data
