// The time of fit's step as a user's program sees it: between on_train_batch_begin and
// on_train_batch_end (the step program and its logs), without the first step (trace and
// compile). Benches of whole Keras models compare this with their peers' step.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/keras/keras.h"

namespace kiln::bench {

/// Median ms per fit step of the compiled `model` over `steps` batches of `train` after one.
inline double median_fit_step_ms(keras::Model& model, const data::Dataset& train, int64_t steps) {
  std::vector<double> ms;
  std::chrono::steady_clock::time_point begin;
  auto timer = std::make_shared<keras::LambdaCallback>(keras::LambdaCallbackOptions{
      .on_train_batch_begin = [&](int64_t, const keras::Logs&) { begin = std::chrono::steady_clock::now(); },
      .on_train_batch_end = [&](int64_t batch, const keras::Logs&) {
        if (batch > 0) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count());
      }});
  model.fit(train, {.epochs = 1, .steps_per_epoch = steps + 1, .callbacks = {timer}, .verbose = 0});
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0 : ms[ms.size() / 2];
}

}  // namespace kiln::bench
