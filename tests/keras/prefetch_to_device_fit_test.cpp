// fit, evaluate and predict over Dataset::prefetch_to_device, and fit's default of prefetching
// to a device other than the host (FitOptions::device_prefetch). Under ctest's GuardedDevice
// run (KILN_DEVICE=guarded_cpu) the batches are copies in the guarded arena, which host code
// cannot read, and the results must match per-step copies bit for bit; on cpu:0 the device
// path is the host batches themselves. MirroredStrategy splits each batch on the host and
// copies each replica's rows.
#include <gtest/gtest.h>

#include "kiln/core/str_cat.h"
#include "kiln/distribute/logical_devices.h"
#include "kiln/distribute/strategy.h"
#include "kiln/runtime/host_device.h"
#include "kiln/trace/eager.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

std::unique_ptr<Sequential> small_model() {
  auto model = std::make_unique<Sequential>(std::vector<LayerHandle>{
      Flatten({.input_shape = {28, 28}}), Dense(16, {.activation = "relu"}), Dense(10)});
  model->compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}});
  return model;
}

data::Dataset train_data() {
  auto [x, y] = testing::synthetic_mnist(64, 3);
  return data::Dataset::from_tensor_slices({x, y}).batch(16, /*drop_remainder=*/true);
}

runtime::Device& step_device() { return trace::default_backend()->device(); }

void expect_bitwise_equal(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_vector<float>(), b[i].to_vector<float>()) << "weight " << i;
}

// `n` built models with the same weights.
std::vector<std::unique_ptr<Sequential>> same_models(size_t n) {
  std::vector<std::unique_ptr<Sequential>> models;
  for (size_t i = 0; i < n; ++i) {
    models.push_back(small_model());
    models.back()->predict(train_data().map([](data::Element e) { return e[0]; }), {.steps = 1});  // builds
    if (i > 0) models.back()->set_weights(models[0]->get_weights());
  }
  return models;
}

TEST(PrefetchToDeviceFitTest, MatchesPerStepCopiesBitForBit) {
  std::vector<std::unique_ptr<Sequential>> m = same_models(3);
  const std::vector<HostTensor> initial = m[0]->get_weights();
  const History copied = m[0]->fit(train_data(), {.epochs = 2, .verbose = 0, .device_prefetch = 0});
  const History by_default = m[1]->fit(train_data(), {.epochs = 2, .verbose = 0});
  const History prefetched = m[2]->fit(train_data().prefetch_to_device(step_device()), {.epochs = 2, .verbose = 0});
  expect_bitwise_equal(m[1]->get_weights(), m[0]->get_weights());
  expect_bitwise_equal(m[2]->get_weights(), m[0]->get_weights());
  EXPECT_EQ(by_default.history.at("loss"), copied.history.at("loss"));
  EXPECT_EQ(prefetched.history.at("loss"), copied.history.at("loss"));
  EXPECT_NE(m[0]->get_weights()[0].to_vector<float>(), initial[0].to_vector<float>()) << "fit must have trained";

  const Logs host = m[0]->evaluate(train_data(), {.verbose = 0});
  const Logs device = m[0]->evaluate(train_data().prefetch_to_device(step_device(), 3), {.verbose = 0});
  EXPECT_EQ(device.at("loss"), host.at("loss"));
  EXPECT_EQ(device.at("accuracy"), host.at("accuracy"));
  EXPECT_EQ(m[0]->predict(train_data().prefetch_to_device(step_device())).to_vector<float>(),
            m[0]->predict(train_data()).to_vector<float>());
}

TEST(PrefetchToDeviceFitTest, ADatasetOnAnotherDeviceNegativePrefetchAndKStepsAreErrors) {
  runtime::Device& other =
      &step_device() == &runtime::host_device() ? runtime::guarded_device() : runtime::host_device();
  std::unique_ptr<Sequential> model = small_model();
  KILN_EXPECT_ERROR(model->fit(train_data().prefetch_to_device(other), {.verbose = 0}), ValueError,
                    str_cat("the dataset is prefetched to ", other.name(), ", but the model's steps run on ",
                            step_device().name()));
  KILN_EXPECT_ERROR((model->fit(train_data(), {.verbose = 0, .device_prefetch = -1})), ValueError,
                    "device_prefetch must be >= 0");
  model->compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                  .steps_per_execution = 2});
  KILN_EXPECT_ERROR(model->fit(train_data().prefetch_to_device(step_device()), {.verbose = 0}), ValueError,
                    "steps_per_execution = 2 over a prefetch_to_device dataset is not built");
}

class PrefetchToDeviceMirroredFitTest : public ::testing::Test {
 protected:
  void SetUp() override { config::set_logical_cpu_devices(2); }
  void TearDown() override { config::set_logical_cpu_devices(1); }
};

TEST_F(PrefetchToDeviceMirroredFitTest, SplitsOnTheHostThenCopiesEachReplicasRows) {
  std::vector<std::unique_ptr<Sequential>> single = same_models(1);
  auto strategy = std::make_shared<distribute::MirroredStrategy>();
  std::vector<std::unique_ptr<Sequential>> mirrored;
  {
    auto scope = strategy->scope();
    mirrored.push_back(small_model());
    mirrored.push_back(small_model());
  }
  for (auto& m : mirrored) {
    m->predict(train_data().map([](data::Element e) { return e[0]; }), {.steps = 1});
    m->set_weights(single[0]->get_weights());
  }
  ASSERT_EQ(strategy->num_replicas_in_sync(), 2);
  mirrored[0]->fit(train_data(), {.epochs = 2, .verbose = 0, .device_prefetch = 0});
  mirrored[1]->fit(train_data().prefetch_to_device(step_device()), {.epochs = 2, .verbose = 0});
  expect_bitwise_equal(mirrored[1]->get_weights(), mirrored[0]->get_weights());
}

}  // namespace
}  // namespace kiln::keras
