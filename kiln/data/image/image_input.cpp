// Shared input checks of the image codecs (image_input_impl.h).
#include "kiln/data/image/image_input_impl.h"

#include "kiln/core/check.h"
#include "kiln/data/image/image_limits.h"
#include "kiln/data/readers/read_file.h"

namespace kiln::data::image_detail {

EncodedImage encoded_image(std::string_view op, const HostTensor& contents) {
  if (contents.dtype() != DType::kU8 || contents.rank() != 1)
    KILN_THROW(DTypeError, "[", op, "] expected the encoded file as a u8[n] string tensor, received ",
               contents.shape(), ". Hint: read_file(path) gives one.");
  EncodedImage in{static_cast<const uint8_t*>(contents.raw_data()), static_cast<size_t>(contents.byte_size()),
                  contents_source(contents)};
  if (in.size == 0) KILN_THROW(DataError, "[", op, "] ", in.where, ": empty (0 bytes).");
  return in;
}

void check_image_size(std::string_view op, const EncodedImage& in, int64_t width, int64_t height,
                      bool file_can_hold, std::string_view bound_reason) {
  if (width < 1 || height < 1)
    KILN_THROW(DataError, "[", op, "] ", in.where, ": the header gives an empty image (width=", width,
               ", height=", height, ").");
  // Both are at most 2^32, so the product fits in 64 bits.
  const int64_t pixels = width * height;
  if (pixels > kMaxImagePixels)
    KILN_THROW(DataError, "[", op, "] ", in.where, ": the header gives ", width, "x", height, " = ", pixels,
               " pixels, over the limit of ", kMaxImagePixels, " (kMaxImagePixels, TensorFlow's).");
  if (!file_can_hold)
    KILN_THROW(DataError, "[", op, "] ", in.where, ": the header gives ", width, "x", height,
               " pixels, more than its ", in.size, " bytes can hold (", bound_reason,
               "): a damaged or lying header.");
}

ImageDims image_dims(std::string_view op, const HostTensor& image) {
  if (image.rank() != 3 || image.dims()[0] < 1 || image.dims()[1] < 1)
    KILN_THROW(ShapeError, "[", op, "] expected an image [height, width, channels] with at least one pixel, received ",
               image.shape(), ".");
  const int64_t pixels = image.dims()[0] * image.dims()[1];
  if (pixels > kMaxImagePixels)
    KILN_THROW(ShapeError, "[", op, "] ", image.shape(), " has ", pixels, " pixels, over the limit of ",
               kMaxImagePixels, " (kMaxImagePixels).");
  return {image.dims()[0], image.dims()[1], image.dims()[2]};
}

}  // namespace kiln::data::image_detail
