// scan by unrolling: one body call per step on slices of xs, the ys joined by concat. Every
// op is an ordinary traced op, so the tape differentiates through it as it stands; an IR loop
// op replaces this file later with the same header.
#include "kiln/trace/ops/scan.h"

#include "kiln/core/check.h"
#include "kiln/trace/ops/shape.h"

namespace kiln {

ScanResult scan(const ScanBody& body, const std::vector<Tensor>& init, const std::vector<Tensor>& xs,
                bool reverse) {
  if (xs.empty()) KILN_THROW(ValueError, "[scan] expected at least one xs tensor to scan over, received none.");
  for (const Tensor& x : xs)
    if (x.rank() < 1 || x.dim(0) < 1 || x.dim(0) != xs[0].dim(0))
      KILN_THROW(ShapeError, "[scan] every xs tensor must have the same leading length T >= 1; received ",
                 xs[0].shape(), " and ", x.shape(), ".");
  const int64_t steps = xs[0].dim(0);
  std::vector<Tensor> carry = init;
  std::vector<std::vector<Tensor>> ys_by_step(static_cast<size_t>(steps));
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t t = reverse ? steps - 1 - i : i;
    std::vector<Tensor> x_t;
    for (const Tensor& x : xs) {
      Dims starts(static_cast<size_t>(x.rank()), 0), limits = x.dims();
      starts[0] = t;
      limits[0] = t + 1;
      x_t.push_back(squeeze(slice(x, starts, limits), 0));
    }
    auto [next, y_t] = body(carry, x_t);
    if (next.size() != carry.size())
      KILN_THROW(ValueError, "[scan] the body returned ", next.size(), " carry tensors for ", carry.size(), " in.");
    for (size_t k = 0; k < next.size(); ++k)
      if (next[k].shape() != carry[k].shape())
        KILN_THROW(ShapeError, "[scan] carry ", k, " changed from ", carry[k].shape(), " to ", next[k].shape(),
                   " in the body; a carry must keep its shape and dtype.");
    if (i > 0 && y_t.size() != ys_by_step[static_cast<size_t>(reverse ? t + 1 : t - 1)].size())
      KILN_THROW(ValueError, "[scan] the body returned a different number of ys at step ", t, ".");
    carry = std::move(next);
    ys_by_step[static_cast<size_t>(t)] = std::move(y_t);
  }
  ScanResult result{std::move(carry), {}};
  for (size_t k = 0; k < ys_by_step[0].size(); ++k) {
    std::vector<Tensor> parts;
    for (const std::vector<Tensor>& step : ys_by_step) parts.push_back(expand_dims(step[k], 0));
    result.ys.push_back(parts.size() == 1 ? parts[0] : concat(parts, 0));
  }
  return result;
}

}  // namespace kiln
