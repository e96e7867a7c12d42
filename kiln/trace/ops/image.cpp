// tf.image's traced ops: flips are gathers with reversed indices, crops are slices, colour
// adjustments are reductions and elementwise ops, resize is two matmuls, and the projective
// transform is a gather of the four bilinear neighbours from the flattened batch.
#include "kiln/trace/ops/image.h"

#include <cmath>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/trace/emit.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln {
namespace {

// The images as a [batch, height, width, channels] batch, and how to give a result back
// the rank the caller passed.
struct Batch {
  Tensor x;
  bool unbatched;
  Tensor restore(const Tensor& y) const { return unbatched ? squeeze(y, 0) : y; }
};

Batch as_batch(const Tensor& images, const char* op, bool need_float = true) {
  if (images.rank() != 3 && images.rank() != 4)
    KILN_THROW(ShapeError, "[", trace::where(op), "] expected images [height, width, channels] or [batch, height, ",
               "width, channels], received ", images.shape(), ".");
  if (need_float && !is_floating(images.dtype()))
    KILN_THROW(DTypeError, "[", trace::where(op), "] expected floating images, received ", images.shape(),
               ". Hint: cast first, or use the host op (kiln/data/image/) in a host map, which converts as TF does.");
  if (images.rank() == 4) return {images, false};
  return {expand_dims(images, 0), true};
}

Tensor reversed(const Tensor& x, int axis) {
  const int64_t n = x.dim(axis);
  std::vector<int32_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(n - 1 - i);
  return take(x, constant(HostTensor::from_vector<int32_t>({n}, idx)), axis);
}

// floor and trunc from the IR's convert (which truncates toward zero).
Tensor trunc_f(const Tensor& v) { return cast(cast(v, DType::kI32), v.dtype()); }
Tensor floor_f(const Tensor& v) {
  const Tensor t = trunc_f(v);
  return where(greater(t, v), t - 1.0, t);
}
Tensor clamp(const Tensor& v, double lo, double hi) { return minimum(maximum(v, lo), hi); }

// TF's MapCoordinate<mode>: an input coordinate outside [0, len - 1] mapped back in.
Tensor map_coordinate(const Tensor& v, int64_t len, const std::string& mode) {
  const auto l = static_cast<double>(len);
  if (mode == "constant") return v;
  if (mode == "nearest" || len <= 1) return clamp(v, 0.0, l - 1);
  if (mode == "reflect") {
    const double sz2 = 2 * l;
    // TF's branch for v < 0 always adds the whole periods (its `in < sz2` test holds there).
    const Tensor n = trunc_f(neg(v) / sz2) * sz2 + v;
    const Tensor below = where(less(n, -l), n + sz2, neg(n) - 1.0);
    const Tensor p = v - trunc_f(v / sz2) * sz2;
    const Tensor above = where(greater_equal(p, l), sz2 - p - 1.0, p);
    return clamp(where(less(v, 0.0), below, where(greater(v, l - 1), above, v)), 0.0, l - 1);
  }
  // wrap: TF divides by len - 1 here (its code, kept for equal results).
  const double sz = l - 1;
  const Tensor below = v + (trunc_f(neg(v) / sz) + 1.0) * l;
  const Tensor above = v - trunc_f(v / sz) * l;
  return clamp(where(less(v, 0.0), below, where(greater(v, l - 1), above, v)), 0.0, l - 1);
}

}  // namespace

Tensor flip_left_right(const Tensor& images) {
  const Batch b = as_batch(images, "flip_left_right", false);
  return b.restore(reversed(b.x, 2));
}

Tensor flip_up_down(const Tensor& images) {
  const Batch b = as_batch(images, "flip_up_down", false);
  return b.restore(reversed(b.x, 1));
}

Tensor crop_to_bounding_box(const Tensor& images, int64_t offset_height, int64_t offset_width, int64_t target_height,
                            int64_t target_width) {
  const Batch b = as_batch(images, "crop_to_bounding_box", false);
  const int64_t h = b.x.dim(1), w = b.x.dim(2);
  if (offset_height < 0 || offset_width < 0 || target_height < 1 || target_width < 1 ||
      offset_height + target_height > h || offset_width + target_width > w)
    KILN_THROW(ValueError, "[", trace::where("crop_to_bounding_box"), "] the window offset_height=", offset_height,
               ", offset_width=", offset_width, ", target_height=", target_height, ", target_width=", target_width,
               " must lie inside the ", h, "x", w, " images ", images.shape(), ".");
  return b.restore(slice(b.x, {0, offset_height, offset_width, 0},
                         {b.x.dim(0), offset_height + target_height, offset_width + target_width, b.x.dim(3)}));
}

Tensor adjust_brightness(const Tensor& images, const Tensor& delta) {
  const Batch b = as_batch(images, "adjust_brightness");
  return b.restore(b.x + cast(delta, images.dtype()));
}

Tensor adjust_contrast(const Tensor& images, const Tensor& contrast_factor) {
  const Batch b = as_batch(images, "adjust_contrast");
  const Tensor m = mean(b.x, {1, 2}, /*keepdims=*/true);
  return b.restore((b.x - m) * cast(contrast_factor, images.dtype()) + m);
}

Tensor per_image_standardization(const Tensor& images) {
  const Batch b = as_batch(images, "per_image_standardization");
  const auto n = static_cast<double>(b.x.dim(1) * b.x.dim(2) * b.x.dim(3));
  const Tensor m = mean(b.x, {1, 2, 3}, true);
  const Tensor centred = b.x - m;
  const Tensor stddev = sqrt(mean(centred * centred, {1, 2, 3}, true));
  return b.restore(centred / maximum(stddev, 1.0 / std::sqrt(n)));
}

Tensor rgb_to_grayscale(const Tensor& images) {
  const Batch b = as_batch(images, "rgb_to_grayscale");
  if (b.x.dim(3) != 3)
    KILN_THROW(ShapeError, "[", trace::where("rgb_to_grayscale"), "] expected 3 channels, received ", images.shape(),
               ".");
  const Tensor w = cast(constant(HostTensor::from_vector<float>({3}, {0.2989f, 0.5870f, 0.1140f})), images.dtype());
  return b.restore(reduce_sum(b.x * w, {3}, true));
}

Tensor grayscale_to_rgb(const Tensor& images) {
  const Batch b = as_batch(images, "grayscale_to_rgb", false);
  if (b.x.dim(3) != 1)
    KILN_THROW(ShapeError, "[", trace::where("grayscale_to_rgb"), "] expected 1 channel, received ", images.shape(),
               ".");
  return b.restore(concat({b.x, b.x, b.x}, 3));
}

Tensor resize_separable(const Tensor& images, const Tensor& height_weights, const Tensor& width_weights) {
  const Batch b = as_batch(images, "resize");
  const int64_t n = b.x.dim(0), h = b.x.dim(1), w = b.x.dim(2), c = b.x.dim(3);
  if (height_weights.rank() != 2 || height_weights.dim(1) != h || width_weights.rank() != 2 ||
      width_weights.dim(1) != w)
    KILN_THROW(ShapeError, "[", trace::where("resize"), "] weights ", height_weights.shape(), " and ",
               width_weights.shape(), " do not take ", h, " rows and ", w, " columns of ", images.shape(), ".");
  const int64_t oh = height_weights.dim(0), ow = width_weights.dim(0);
  const Tensor wy = cast(height_weights, images.dtype()), wx = cast(width_weights, images.dtype());
  // Rows: [h, n*w*c] -> [oh, n, w, c]; columns: [w, n*oh*c] -> [ow, n, oh, c] -> [n, oh, ow, c].
  const Tensor rows = reshape(matmul(wy, reshape(transpose(b.x, {1, 0, 2, 3}), {h, n * w * c})), {oh, n, w, c});
  const Tensor cols = matmul(wx, reshape(transpose(rows, {2, 1, 0, 3}), {w, n * oh * c}));
  return b.restore(transpose(reshape(cols, {ow, n, oh, c}), {1, 2, 0, 3}));
}

Tensor projective_transform(const Tensor& images, const Tensor& transforms,
                            const ProjectiveTransformOptions& options) {
  const Batch b = as_batch(images, "projective_transform");
  const std::string& mode = options.fill_mode;
  if (mode != "reflect" && mode != "wrap" && mode != "constant" && mode != "nearest")
    KILN_THROW(ValueError, "[", trace::where("projective_transform"), "] fill_mode must be \"reflect\", \"wrap\", ",
               "\"constant\" or \"nearest\", received \"", mode, "\".");
  if (options.interpolation != "bilinear" && options.interpolation != "nearest")
    KILN_THROW(ValueError, "[", trace::where("projective_transform"), "] interpolation must be \"bilinear\" or ",
               "\"nearest\", received \"", options.interpolation, "\".");
  const int64_t n = b.x.dim(0), h = b.x.dim(1), w = b.x.dim(2), c = b.x.dim(3);
  if (transforms.rank() != 2 || transforms.dim(1) != 8 || (transforms.dim(0) != n && transforms.dim(0) != 1))
    KILN_THROW(ShapeError, "[", trace::where("projective_transform"), "] expected transforms [", n, ", 8] or [1, 8] ",
               "for ", images.shape(), ", received ", transforms.shape(), ".");
  // Coordinates in f32 as TF computes them, whatever the images' dtype.
  const Tensor t = cast(transforms, DType::kF32);
  const int64_t tn = t.dim(0);
  auto coef = [&](int64_t i) { return reshape(slice(t, {0, i}, {tn, i + 1}), {tn, 1, 1}); };
  const Tensor xs = reshape(iota(Shape(DType::kF32, {h, w}), 1), {1, h, w});
  const Tensor ys = reshape(iota(Shape(DType::kF32, {h, w}), 0), {1, h, w});
  const Tensor k = coef(6) * xs + coef(7) * ys + 1.0;
  const Tensor x = map_coordinate((coef(0) * xs + coef(1) * ys + coef(2)) / k, w, mode);
  const Tensor y = map_coordinate((coef(3) * xs + coef(4) * ys + coef(5)) / k, h, mode);

  const Tensor flat = reshape(b.x, {n * h * w, c});
  // Flat indices in i32: b * h * w + y * w + x stays exact past f32's 2^24.
  const Tensor base = iota(Shape(DType::kI32, {n, 1, 1}), 0) * static_cast<double>(h * w);
  const Tensor fill = Tensor::scalar(options.fill_value, images.dtype());
  // The input at integer-valued (yi, xi) [tn or n, h, w], or fill_value outside the image.
  auto read = [&](const Tensor& yi, const Tensor& xi) {
    const auto hl = static_cast<double>(h - 1), wl = static_cast<double>(w - 1);
    const Tensor inside = greater_equal(minimum(minimum(yi, hl - yi), minimum(xi, wl - xi)), 0.0);
    const Tensor index = base + cast(clamp(yi, 0.0, hl), DType::kI32) * static_cast<double>(w) +
                         cast(clamp(xi, 0.0, wl), DType::kI32);
    return where(expand_dims(inside, 3), take(flat, index, 0), fill);
  };
  if (options.interpolation == "nearest") {
    // std::round: half away from zero.
    auto round = [](const Tensor& v) { return where(less(v, 0.0), neg(floor_f(neg(v) + 0.5)), floor_f(v + 0.5)); };
    return b.restore(read(round(y), round(x)));
  }
  const Tensor xf = floor_f(x), yf = floor_f(y);
  const Tensor xc = xf + 1.0, yc = yf + 1.0;
  auto weight = [&](const Tensor& v) { return cast(expand_dims(v, 3), images.dtype()); };
  const Tensor top = weight(xc - x) * read(yf, xf) + weight(x - xf) * read(yf, xc);
  const Tensor bottom = weight(xc - x) * read(yc, xf) + weight(x - xf) * read(yc, xc);
  return b.restore(weight(yc - y) * top + weight(y - yf) * bottom);
}

}  // namespace kiln
