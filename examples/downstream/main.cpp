// Trains a small Dense model on random data against an installed Kiln, using only installed
// headers; exits 1 unless the loss went down. Built by examples/downstream/CMakeLists.txt or
// with pkg-config:  g++ -std=c++20 main.cpp $(pkg-config --cflags --libs kiln)
#include <cstdio>
#include <random>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/keras/keras.h"
#include "kiln/version.h"

int main() {
  using namespace kiln;
  // y = x @ w + noise for a fixed random w: a regression a Dense stack learns in a few epochs.
  constexpr int64_t kRows = 256, kFeatures = 8;
  std::mt19937 gen(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(kFeatures), xs(kRows * kFeatures), ys(kRows);
  for (float& v : w) v = normal(gen);
  for (int64_t r = 0; r < kRows; ++r) {
    float sum = 0.0f;
    for (int64_t c = 0; c < kFeatures; ++c) {
      xs[r * kFeatures + c] = normal(gen);
      sum += xs[r * kFeatures + c] * w[c];
    }
    ys[r] = sum + 0.01f * normal(gen);
  }
  const HostTensor x = HostTensor::from_vector<float>({kRows, kFeatures}, xs);
  const HostTensor y = HostTensor::from_vector<float>({kRows, 1}, ys);

  keras::models::Sequential model({keras::layers::Dense(16, {.activation = "relu", .input_shape = {kFeatures}}),
                                   keras::layers::Dense(1)});
  model.compile({.optimizer = keras::optimizers::Adam({.learning_rate = 0.01}),
                 .loss = keras::losses::MeanSquaredError()});
  const keras::History history = model.fit(x, y, {.batch_size = 32, .epochs = 5, .verbose = 0});

  const std::vector<double>& loss = history.history.at("loss");
  std::printf("kiln %s: loss %.4f after epoch 1, %.4f after epoch %zu\n", kiln::version(), loss.front(),
              loss.back(), loss.size());
  if (!(loss.back() < 0.5 * loss.front())) {
    std::fprintf(stderr, "downstream: the loss did not go down enough\n");
    return 1;
  }
  return 0;
}
