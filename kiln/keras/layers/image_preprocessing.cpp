// Resizing and CenterCrop: static crops and pads (slice, pad) and tf.image.resize as two
// matmuls with data::resize_weights' matrices (gathers for "nearest"), so the layers trace
// into the compiled step.
#include "kiln/keras/layers/image_preprocessing.h"

#include <algorithm>

#include "kiln/core/check.h"
#include "kiln/data/image/image_geometry.h"
#include "kiln/data/image/resize.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/keras/layers/preprocessing_config_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/image.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace internal {

Tensor resize_images(const Tensor& x, int64_t height, int64_t width, const std::string& method) {
  if (x.dim(1) == height && x.dim(2) == width) return x;  // every method keeps an image of the same size
  const data::ResizeOptions o{.method = method};
  const HostTensor wy = data::resize_weights(x.dim(1), height, o), wx = data::resize_weights(x.dim(2), width, o);
  if (method != "nearest") return resize_separable(x, constant(wy), constant(wx));
  // One 1 per row: gather those rows and columns, exact in any dtype.
  auto picks = [](const HostTensor& w) {
    const int64_t rows = w.dims()[0], cols = w.dims()[1];
    std::vector<int32_t> idx(static_cast<size_t>(rows));
    const float* d = w.data<float>().data();
    for (int64_t r = 0; r < rows; ++r)
      idx[static_cast<size_t>(r)] = static_cast<int32_t>(std::max_element(d + r * cols, d + (r + 1) * cols) - (d + r * cols));
    return constant(HostTensor::from_vector<int32_t>({rows}, idx));
  };
  return take(take(x, picks(wy), 1), picks(wx), 2);
}

Tensor smart_resize(const Tensor& x, int64_t height, int64_t width) {
  const data::CropWindow c = data::aspect_ratio_crop_window(x.dim(1), x.dim(2), height, width);
  return resize_images(crop_to_bounding_box(x, c.top, c.left, c.height, c.width), height, width, "bilinear");
}

}  // namespace internal

namespace {

void check_size(const std::string& at, int64_t height, int64_t width) {
  if (height < 1 || width < 1)
    KILN_THROW(ValueError, "[", at, "] height and width must be at least 1, received height=", height, ", width=", width,
               ".");
}

Dims with_size(const std::string& layer, const Dims& input_shape, int64_t height, int64_t width) {
  internal::check_image_input(layer, input_shape);
  return {height, width, input_shape[2]};
}

}  // namespace

// ---- Resizing --------------------------------------------------------------------------------

Resizing::Resizing(int64_t height, int64_t width, ResizingOptions options)
    : Layer(options.name, options.input_shape, options.dtype), height_(height), width_(width),
      options_(std::move(options)) {
  const std::string at = options_.name.empty() ? "Resizing" : options_.name;
  check_size(at, height, width);
  // resize_weights names the methods it knows; check now rather than at the first call.
  data::resize_weights(1, 1, {.method = options_.interpolation});
  if (options_.crop_to_aspect_ratio && options_.pad_to_aspect_ratio)
    KILN_THROW(ValueError, "[", at, "] crop_to_aspect_ratio and pad_to_aspect_ratio cannot both be true.");
  if (options_.fill_mode != "constant")
    KILN_THROW(ValueError, "[", at, "] fill_mode must be \"constant\" (Keras's only padding mode), received \"",
               options_.fill_mode, "\".");
}

Dims Resizing::compute_output_shape(const Dims& input_shape) const {
  return with_size(name(), input_shape, height_, width_);
}

Tensor Resizing::call(const Tensor& x, bool /*training*/) {
  Tensor y = x.dtype() == compute_dtype() ? x : cast(x, compute_dtype());
  const int64_t h = y.dim(1), w = y.dim(2);
  if (options_.pad_to_aspect_ratio) {
    // Keras 3's pad: the smallest centred canvas of the target's aspect ratio holding the image.
    const int64_t ph = std::max(h, static_cast<int64_t>(static_cast<double>(w * height_) / width_));
    const int64_t pw = std::max(w, static_cast<int64_t>(static_cast<double>(h * width_) / height_));
    const auto top = static_cast<int64_t>(static_cast<double>(ph - h) / 2);
    const auto left = static_cast<int64_t>(static_cast<double>(pw - w) / 2);
    y = pad(y, {0, top, left, 0}, {0, ph - h - top, pw - w - left, 0}, options_.fill_value);
  } else if (options_.crop_to_aspect_ratio) {
    const data::CropWindow c = data::aspect_ratio_crop_window(h, w, height_, width_);
    y = crop_to_bounding_box(y, c.top, c.left, c.height, c.width);
  }
  return internal::resize_images(y, height_, width_, options_.interpolation);
}

std::string Resizing::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["height"] = height_;
  j["width"] = width_;
  j["interpolation"] = options_.interpolation;
  j["crop_to_aspect_ratio"] = options_.crop_to_aspect_ratio;
  j["pad_to_aspect_ratio"] = options_.pad_to_aspect_ratio;
  j["fill_mode"] = options_.fill_mode;
  j["fill_value"] = options_.fill_value;
  return j.dump();
}

// tf.keras 2 writes height, width, interpolation, crop_to_aspect_ratio; Keras 3 adds the rest.
constexpr internal::ConfigKey kResizingKeys[] = {{"height"},
                                                 {"width"},
                                                 {"interpolation"},
                                                 {"crop_to_aspect_ratio"},
                                                 {"pad_to_aspect_ratio"},
                                                 {"fill_mode"},
                                                 {"fill_value"},
                                                 {"antialias", "false", "Keras's Resizing does not antialias"},
                                                 internal::kChannelsLastKey,
                                                 internal::kNoBoundingBoxesKey};
Resizing Resizing::from_config(const std::string& config_json) {
  const char* where = "Resizing.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kResizingKeys}, "Resizing");
  ResizingOptions o = internal::guarded(where, [&] {
    return ResizingOptions{.interpolation = j.value("interpolation", "bilinear"),
                           .crop_to_aspect_ratio = j.value("crop_to_aspect_ratio", false),
                           .pad_to_aspect_ratio = j.value("pad_to_aspect_ratio", false),
                           .fill_mode = j.value("fill_mode", "constant"),
                           .fill_value = j.value("fill_value", 0.0),
                           .input_shape = internal::input_shape_from(j),
                           .name = j.value("name", "")};
  });
  Resizing l(internal::int_field(j, "height", where), internal::int_field(j, "width", where), std::move(o));
  l.set_trainable(j.value("trainable", true));
  return l;
}

// ---- CenterCrop ------------------------------------------------------------------------------

CenterCrop::CenterCrop(int64_t height, int64_t width, LayerOptions options)
    : Layer(options.name, options.input_shape, options.dtype), height_(height), width_(width) {
  check_size(options.name.empty() ? "CenterCrop" : options.name, height, width);
}

Dims CenterCrop::compute_output_shape(const Dims& input_shape) const {
  return with_size(name(), input_shape, height_, width_);
}

Tensor CenterCrop::call(const Tensor& x, bool /*training*/) {
  const Tensor y = x.dtype() == compute_dtype() ? x : cast(x, compute_dtype());
  const int64_t dh = y.dim(1) - height_, dw = y.dim(2) - width_;
  if (dh >= 0 && dw >= 0) return crop_to_bounding_box(y, dh / 2, dw / 2, height_, width_);
  return internal::smart_resize(y, height_, width_);
}

std::string CenterCrop::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["height"] = height_;
  j["width"] = width_;
  return j.dump();
}

constexpr internal::ConfigKey kCenterCropKeys[] = {{"height"}, {"width"}, internal::kChannelsLastKey,
                                                   internal::kNoBoundingBoxesKey};
CenterCrop CenterCrop::from_config(const std::string& config_json) {
  const char* where = "CenterCrop.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kCenterCropKeys}, "CenterCrop");
  CenterCrop l(internal::int_field(j, "height", where), internal::int_field(j, "width", where),
               {.input_shape = internal::input_shape_from(j), .name = j.value("name", "")});
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
