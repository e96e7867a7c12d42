// load_weights(by_name, skip_mismatch), as Keras 2's: by layer name in .h5 files and by
// variable name in safetensors; layers the file lacks keep their values; a mismatch fails the
// whole load (nothing changes) unless skip_mismatch skips that layer.
#include <gtest/gtest.h>

#include "kiln/keras/saving/saving.h"
#include "tests/keras/saving/saving_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

using namespace testing;

// features (20 -> 8) and a head (8 -> `head_units`), with the given names.
std::unique_ptr<Sequential> two_layer(const std::string& head, int64_t head_units, int64_t feature_units = 8) {
  return std::make_unique<Sequential>(std::vector<LayerHandle>{
      InputLayer({.shape = {4, 5}}), Flatten(), Dense(feature_units, {.activation = "relu", .name = "features"}),
      Dense(head_units, {.name = head})});
}

class LoadWeightsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    source_ = two_layer("head", 3);
    compile_model(*source_, "adam");
    train(*source_, {4, 5}, 3);
    source_->save_weights(file());
  }
  std::string file() const { return dir_.file("w" + GetParam()); }
  std::vector<HostTensor> layer_values(const Model& m, const std::string& layer) const {
    return values_of(m.get_layer(layer).weights());
  }
  std::unique_ptr<Sequential> source_;
  kiln::testing::TempDir dir_;
};

TEST_P(LoadWeightsTest, ByNameLoadsTheSharedLayersAndKeepsTheOthers) {
  auto target = two_layer("new_head", 5);  // a new task's head over the same features
  const std::vector<HostTensor> head_before = layer_values(*target, "new_head");
  KILN_EXPECT_ERROR(target->load_weights(file()), IOError, file());  // by position: a mismatch
  target->load_weights(file(), {.by_name = true});
  expect_same_tensors(layer_values(*target, "features"), layer_values(*source_, "features"), "features");
  expect_same_tensors(layer_values(*target, "new_head"), head_before, "new_head kept its values");
}

TEST_P(LoadWeightsTest, ByNameMismatchFailsTheWholeLoadNamingTheLayer) {
  auto target = two_layer("head", 5);  // "head" is in the file, with 3 units
  const std::vector<HostTensor> before = values_of(target->weights());
  KILN_EXPECT_ERROR(target->load_weights(file(), {.by_name = true}), IOError, "f32[8,3]");
  expect_same_tensors(values_of(target->weights()), before, "no weight changed");
}

TEST_P(LoadWeightsTest, SkipMismatchSkipsOnlyTheMismatchedLayer) {
  auto target = two_layer("head", 5);
  const std::vector<HostTensor> head_before = layer_values(*target, "head");
  target->load_weights(file(), {.by_name = true, .skip_mismatch = true});
  expect_same_tensors(layer_values(*target, "features"), layer_values(*source_, "features"), "features");
  expect_same_tensors(layer_values(*target, "head"), head_before, "the mismatched head was skipped");
}

TEST_P(LoadWeightsTest, SkipMismatchNeedsByName) {
  auto target = two_layer("head", 3);
  KILN_EXPECT_ERROR(target->load_weights(file(), {.skip_mismatch = true}), ValueError,
                    "skip_mismatch can only be set when by_name is set");
}

INSTANTIATE_TEST_SUITE_P(H5AndSafetensors, LoadWeightsTest, ::testing::Values(".h5", ".safetensors"),
                         [](const auto& p) { return p.param == ".h5" ? std::string("H5") : std::string("Safetensors"); });

TEST(LoadWeightsH5Test, ByNameMatchesLayersInAnyOrder) {
  // Keras matches by name regardless of position: the file's layer order is reversed here.
  kiln::testing::TempDir dir;
  auto source = std::make_unique<Sequential>(std::vector<LayerHandle>{
      InputLayer({.shape = {6}}), Dense(6, {.name = "a"}), Dense(6, {.name = "b"})});
  compile_model(*source, "adam");
  train(*source, {6}, 2);
  source->save_weights(dir.file("w.h5"));
  auto target = std::make_unique<Sequential>(std::vector<LayerHandle>{
      InputLayer({.shape = {6}}), Dense(6, {.name = "b"}), Dense(6, {.name = "a"})});
  target->load_weights(dir.file("w.h5"), {.by_name = true});
  expect_same_tensors(values_of(target->get_layer("a").weights()), values_of(source->get_layer("a").weights()), "a");
  expect_same_tensors(values_of(target->get_layer("b").weights()), values_of(source->get_layer("b").weights()), "b");
}

}  // namespace
}  // namespace kiln::keras
