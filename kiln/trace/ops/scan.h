// kiln/trace/ops/scan.h
#pragma once
#include <functional>
#include <utility>
#include <vector>
#include "kiln/trace/tensor.h"
namespace kiln {
/// jax.lax.scan: for t over the leading axis of every xs tensor (all the same length T,
/// T >= 1; reverse=true walks t = T-1 .. 0), (carry, y_t) = body(carry, x_t). Returns the
/// final carry and the ys stacked along a new leading axis (in t order, also when reversed).
struct ScanResult { std::vector<Tensor> carry; std::vector<Tensor> ys; };
using ScanBody = std::function<std::pair<std::vector<Tensor>, std::vector<Tensor>>(
    const std::vector<Tensor>& carry, const std::vector<Tensor>& x_t)>;
ScanResult scan(const ScanBody& body, const std::vector<Tensor>& init,
                const std::vector<Tensor>& xs, bool reverse = false);
}  // namespace kiln
