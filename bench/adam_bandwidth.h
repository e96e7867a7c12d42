// The optimizer's share of a step against memory bandwidth: the seed's Adam update alone (one
// compiled program over the model's variables, fixed gradients) timed against a plain OpenMP
// loop that moves the same bytes the same way (per variable: read g, m, v and the weights,
// write m, v and the weights; the same arrays, so the same caches, on the same threads).
#pragma once

#include <omp.h>

#include <algorithm>
#include <vector>

#include "bench/bench_main.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/trace/function.h"
#include "tests/testing/seed_training.h"

namespace kiln::bench {

inline JsonLine adam_vs_bandwidth(const std::vector<Variable>& model_params, int runs) {
  constexpr int64_t kCalls = 500;
  std::vector<Variable> params;
  std::vector<HostTensor> grads;
  int64_t bytes = 0;
  for (const Variable& p : model_params) {
    params.emplace_back(p.name(), p.storage().clone());
    grads.push_back(p.storage().clone());
    bytes += 7 * p.storage().byte_size();  // read g, m, v, p; write m, v, p
  }
  testing::KerasAdam adam(params);
  Function update("adam_update", [&](const std::vector<Tensor>& g) {
    adam.apply(params, g);
    return std::vector<Tensor>{};
  }, {.backend = runtime::default_backend()});
  update(grads);
  const double adam_ms = median_ms_per_step(runs, kCalls, [] {}, [&](int64_t) { update(grads); });

  // The same footprint streamed: four arrays read, three written, per variable.
  struct Arrays {
    std::vector<float> x[4], y[3];
  };
  std::vector<Arrays> arrays(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const size_t n = static_cast<size_t>(params[i].shape().num_elements());
    for (auto& a : arrays[i].x) a.assign(n, 0.5f);
    for (auto& a : arrays[i].y) a.assign(n, 0.25f);
  }
  auto stream = [&] {
#pragma omp parallel
    for (Arrays& a : arrays) {
      const int64_t n = static_cast<int64_t>(a.x[0].size());
      const float *x0 = a.x[0].data(), *x1 = a.x[1].data(), *x2 = a.x[2].data(), *x3 = a.x[3].data();
      float *y0 = a.y[0].data(), *y1 = a.y[1].data(), *y2 = a.y[2].data();
#pragma omp for schedule(static)
      for (int64_t j = 0; j < n; ++j) {
        y0[j] = x0[j] + 0.5f * x3[j];
        y1[j] = x1[j] + 0.5f * x3[j];
        y2[j] = x2[j] + 0.5f * x3[j];
      }
    }
  };
  stream();
  const double stream_ms = median_ms_per_step(runs, kCalls, [] {}, [&](int64_t) { stream(); });
  JsonLine line;
  line.add("bench", "train_step_mlp.adam")
      .add("adam_us", adam_ms * 1e3)
      .add("adam_bytes", bytes)
      .add("bandwidth_gb_s", static_cast<double>(bytes) / (stream_ms * 1e-3) / 1e9)
      .add("bytes_us_at_bandwidth", stream_ms * 1e3)
      .add("adam_over_bytes_time", adam_ms / stream_ms)
      .add("target", 1.5)
      .add("threads", static_cast<int64_t>(omp_get_max_threads()));
  return line;
}

}  // namespace kiln::bench
