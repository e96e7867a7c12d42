// Neural-network ops composed from the IR set: matmul/dot_general, activations, numerically
// stable softmax and cross-entropy, one_hot, and thin wrappers over convolution and pooling.
#pragma once

#include <string>

#include "kiln/ir/attrs.h"
#include "kiln/trace/tensor.h"

namespace kiln {

/// a @ b. 2-D: (M,K)@(K,N). Same-rank >2: leading dims are batch dims that must match.
/// Rank >2 with 2-D b: (...,K)@(K,N) -> (...,N).
Tensor matmul(const Tensor& a, const Tensor& b);
/// The IR op: batch dims first, then lhs free dims, then rhs free dims.
Tensor dot_general(const Tensor& lhs, const Tensor& rhs, ir::DotDims dims);

/// max(x, 0). Its gradient at exactly 0 is 0.5 (max splits ties, see elementwise_vjp.cpp).
Tensor relu(const Tensor& x);
/// exp(x - max) / sum(exp(x - max)) along `axis`.
Tensor softmax(const Tensor& x, int axis = -1);
/// x - logsumexp(x) along `axis`, computed stably.
Tensor log_softmax(const Tensor& x, int axis = -1);
/// log(sum(exp(x))) along `axis` (removed unless keepdims), shifted by the max for stability.
Tensor logsumexp(const Tensor& x, int axis = -1, bool keepdims = false);
/// Per-example loss (N) from integer labels (N) and logits (N, C): logsumexp(logits) - the
/// label's logit. The label's logit is picked with a one-hot mask (iota == label), not a
/// gather, so forward and backward fuse into elementwise+reduction kernels.
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);
/// (..., depth) with 1 where iota == index along the new last axis.
Tensor one_hot(const Tensor& indices, int64_t depth, DType dtype = DType::kF32);

/// Keras-style options: padding "valid" or "same" (TensorFlow's rule), or explicit
/// padding_low/padding_high (H, W) when those are non-empty.
struct Conv2DOptions {
  Dims strides{1, 1};
  std::string padding = "valid";
  Dims dilation{1, 1};
  int64_t groups = 1;
  Dims padding_low{}, padding_high{};
};
/// x: (N, H, W, C), w: (KH, KW, C/groups, F) -> (N, OH, OW, F).
Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2DOptions& options = {});
/// The transposed convolution, conv2d's gradient with respect to its input: y (N, OH, OW, F),
/// w (KH, KW, C/groups, F) -> (N, H, W, C) = `x_dims`, the input a conv2d with these options
/// would map to y's dims ("same" padding is worked out from x_dims, as TensorFlow does).
Tensor conv2d_transpose(const Tensor& y, const Tensor& w, const Dims& x_dims, const Conv2DOptions& options = {});

struct Pool2DOptions {
  Dims pool_size{2, 2};
  /// Defaults to pool_size.
  Dims strides{};
  std::string padding = "valid";
};
/// x: (N, H, W, C) -> (N, OH, OW, C).
Tensor max_pool2d(const Tensor& x, const Pool2DOptions& options = {});
Tensor avg_pool2d(const Tensor& x, const Pool2DOptions& options = {});

namespace trace {
/// TensorFlow "same" padding (low, high) of one spatial dim.
std::pair<int64_t, int64_t> same_padding(int64_t in, int64_t window, int64_t stride,
                                         int64_t dilation);
}  // namespace trace

}  // namespace kiln
