// The seed's MNIST input pipeline (S7-S10), shared by the examples and bench/fit_mnist_mlp:
// from_tensor_slices(u8 images, u8 labels) -> map(/255 to f32, labels to i32, optionally a
// channel dim) -> shuffle -> repeat -> batch(drop_remainder) -> prefetch. The map is declared
// stateless, so it runs after the shuffle and repeat (the same batches, a 4x smaller buffer).
#pragma once

#include "kiln/data/dataset.h"
#include "kiln/data/datasets/mnist.h"

namespace kiln::examples {

/// (u8[28,28], u8[]) -> (f32[28,28] / 255, i32[]): the seed's map function.
inline data::Element normalize_mnist(data::Element e) {
  // One pass from the u8 pixels into uninitialized f32 (astype then scaling would be two).
  HostTensor x = HostTensor::uninitialized(Shape(DType::kF32, e[0].dims()));
  const auto* src = static_cast<const uint8_t*>(e[0].raw_data());
  float* dst = x.data<float>().data();
  for (int64_t i = 0; i < x.num_elements(); ++i) dst[i] = static_cast<float>(src[i]) * (1.0f / 255.0f);
  return {std::move(x), e[1].astype(DType::kI32)};
}

/// The same with the channel dim convnets take: (u8[28,28], u8[]) -> (f32[28,28,1], i32[]).
inline data::Element normalize_mnist_image(data::Element e) {
  data::Element out = normalize_mnist(std::move(e));
  out[0] = out[0].reshape({28, 28, 1});
  return out;
}

struct MnistPipelineOptions {
  int64_t batch_size = 128;
  bool shuffle = true;  // shuffle(10000, seed)
  uint64_t seed = 42;
  bool repeat = true;
  bool channel_dim = false;  // images as (28, 28, 1): the seed's "add channel dim" for convnets
};

/// The pipeline over one split.
inline data::Dataset mnist_pipeline(const datasets::mnist::Split& split, MnistPipelineOptions o = {}) {
  data::Dataset ds = data::Dataset::from_tensor_slices({split.x, split.y})
                         .map(o.channel_dim ? normalize_mnist_image : normalize_mnist,
                              {.num_parallel_calls = data::kAutotune, .stateless = true});
  if (o.shuffle) ds = ds.shuffle(10000, o.seed);
  if (o.repeat) ds = ds.repeat();
  return ds.batch(o.batch_size, /*drop_remainder=*/true).prefetch(data::kAutotune);
}

}  // namespace kiln::examples
