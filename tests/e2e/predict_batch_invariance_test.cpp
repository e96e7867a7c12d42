// Batch-invariant inference (docs/numerics.md): predict({.batch_invariant = true}) gives each
// sample the same bits with batch_size 1, 7, 32 and 128 (7 leaves a last batch of 2), on one thread as on two, for the
// seed MLP, the convnet and the LSTM text model; and its values stay those of the default
// (oneDNN) kernels within float rounding.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>

#include "tests/testing/inference_models.h"

namespace kiln {
namespace {

constexpr int64_t kRows = 128;

bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.byte_size())) == 0;
}

TEST(PredictBatchInvarianceTest, EverySampleHasTheSameBitsWhateverTheBatchSize) {
  for (testing::InferenceModel& m : testing::inference_models(kRows)) {
    const HostTensor whole = m.model->predict(m.x, {.batch_size = kRows, .batch_invariant = true});
    for (int64_t batch : {1, 7, 32})
      EXPECT_TRUE(same_bytes(m.model->predict(m.x, {.batch_size = batch, .batch_invariant = true}), whole))
          << m.name << " batch_size " << batch;
    // Samples 5..11 alone, as one batch of 7.
    const HostTensor part = m.model->predict(m.x.slice_rows(5, 12), {.batch_size = 7, .batch_invariant = true});
    EXPECT_TRUE(same_bytes(part, whole.slice_rows(5, 12))) << m.name << " rows 5..11";
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    EXPECT_TRUE(same_bytes(m.model->predict(m.x, {.batch_size = 32, .batch_invariant = true}), whole)) << m.name << " on one thread";
    omp_set_num_threads(saved);
  }
}

TEST(PredictBatchInvarianceTest, TheFixedOrderKernelsAgreeWithTheDefaultOnes) {
  for (testing::InferenceModel& m : testing::inference_models(kRows)) {
    const std::vector<float> fixed =
        m.model->predict(m.x, {.batch_size = 32, .batch_invariant = true}).to_vector<float>();
    const std::vector<float> fast =
        m.model->predict(m.x, {.batch_size = 32, .batch_invariant = false}).to_vector<float>();
    ASSERT_EQ(fixed.size(), fast.size());
    for (size_t i = 0; i < fixed.size(); ++i)
      ASSERT_NEAR(fixed[i], fast[i], 1e-4 * (1 + std::fabs(fast[i]))) << m.name << " element " << i;
  }
}

}  // namespace
}  // namespace kiln
