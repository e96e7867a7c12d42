// keras.applications: every builder's parameter count equals the one Keras publishes for it
// (keras.io/api/applications, and the no-top counts Keras's summary prints), its layers carry
// Keras's names (the ones the official weight files use), and the family helpers compute what
// imagenet_utils.py computes.
#include "kiln/keras/applications/applications.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "kiln/keras/layers/layer.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/raw_tensor_file.h"

namespace kiln::keras::applications {
namespace {

struct Published {
  std::string model;
  std::function<Functional()> build;
  int64_t params;
};

TEST(ApplicationsTest, ParameterCountsEqualKerasPublishedOnes) {
  const std::vector<Published> table = {
      {"MobileNet", [] { return MobileNet(); }, 4253864},
      {"MobileNet no top", [] { return MobileNet({.include_top = false}); }, 3228864},
      {"MobileNetV2", [] { return MobileNetV2(); }, 3538984},
      {"MobileNetV2 no top", [] { return MobileNetV2({.include_top = false}); }, 2257984},
      {"MobileNetV3Small", [] { return MobileNetV3Small(); }, 2554968},
      {"MobileNetV3Large", [] { return MobileNetV3Large(); }, 5507432},
      {"ResNet50", [] { return ResNet50(); }, 25636712},
      {"ResNet50 no top", [] { return ResNet50({.include_top = false}); }, 23587712},
      {"ResNet101", [] { return ResNet101(); }, 44707176},
      {"ResNet152", [] { return ResNet152(); }, 60419944},
      {"ResNet50V2", [] { return ResNet50V2(); }, 25613800},
      {"ResNet101V2", [] { return ResNet101V2(); }, 44675560},
      {"ResNet152V2", [] { return ResNet152V2(); }, 60380648},
      {"VGG16 no top", [] { return VGG16({.include_top = false}); }, 14714688},
      {"VGG16", [] { return VGG16(); }, 138357544},
      {"DenseNet121", [] { return DenseNet121(); }, 8062504},
      {"DenseNet121 no top", [] { return DenseNet121({.include_top = false}); }, 7037504},
      // Normalization's mean, variance and count (3 + 3 + 1) included, as Keras counts them.
      {"EfficientNetB0", [] { return EfficientNetB0(); }, 5330571},
      {"EfficientNetB0 no top", [] { return EfficientNetB0({.include_top = false}); }, 4049571},
      {"EfficientNetB1", [] { return EfficientNetB1(); }, 7856239},
      {"EfficientNetB2", [] { return EfficientNetB2(); }, 9177569},
      {"EfficientNetB3", [] { return EfficientNetB3(); }, 12320535},
  };
  for (const Published& p : table) {
    SCOPED_TRACE(p.model);
    EXPECT_EQ(p.build().count_params(), p.params);
  }
}

std::vector<std::string> layer_names(const Functional& model) {
  std::vector<std::string> names;
  for (const auto& layer : model.layers()) names.push_back(layer->name());
  return names;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Keras's summaries of MobileNetV3Small and Large: the weight count and the non-trainable part
// (BatchNormalization's moving statistics) besides the total; and the names of the
// squeeze-and-excite blocks, which Keras 3 spells with underscores.
TEST(ApplicationsTest, MobileNetV3MatchesKerasSummaryAndNames) {
  auto non_trainable = [](const Functional& m) {
    int64_t n = 0;
    for (const Variable& v : m.non_trainable_weights()) n += v.shape().num_elements();
    return n;
  };
  const Functional small = MobileNetV3Small();
  EXPECT_EQ(small.name(), "MobileNetV3Small");
  EXPECT_EQ(small.weights().size(), 210u);
  EXPECT_EQ(non_trainable(small), 12112);
  const Functional large = MobileNetV3Large();
  EXPECT_EQ(large.weights().size(), 266u);
  EXPECT_EQ(non_trainable(large), 24400);
  const std::vector<std::string> names = layer_names(small);
  for (const char* n : {"conv", "conv_bn", "expanded_conv_depthwise_pad", "expanded_conv_squeeze_excite_conv",
                        "expanded_conv_squeeze_excite_mul", "expanded_conv_1_expand", "expanded_conv_10_add",
                        "conv_1", "conv_1_bn", "conv_2", "logits", "predictions"})
    EXPECT_TRUE(has(names, n)) << n;
  EXPECT_FALSE(has(layer_names(MobileNetV3Small({.minimalistic = true})), "expanded_conv_squeeze_excite_conv"));
  const Functional no_top = MobileNetV3Large({.input_shape = {96, 96, 3}, .include_top = false, .pooling = "avg"});
  EXPECT_EQ(no_top.output().shape(), (Dims{960}));
  EXPECT_TRUE(has(layer_names(no_top), "avg_pool"));
}

int64_t non_trainable_count(const Functional& m) {
  int64_t n = 0;
  for (const Variable& v : m.non_trainable_weights()) n += v.shape().num_elements();
  return n;
}

// Keras's summary of EfficientNetB0: 314 weights, 42,023 of the parameters non-trainable
// (BatchNormalization's moving statistics and Normalization's mean, variance and count); the
// layer names the official weight files use; the stem's per-channel Rescaling only with
// ImageNet weights; drop-connect Dropouts only on the residual blocks after the first.
TEST(ApplicationsTest, EfficientNetMatchesKerasSummaryAndNames) {
  const Functional b0 = EfficientNetB0();
  EXPECT_EQ(b0.name(), "efficientnetb0");
  EXPECT_EQ(b0.weights().size(), 314u);
  EXPECT_EQ(non_trainable_count(b0), 42023);
  EXPECT_EQ(b0.inputs().at(0).shape(), (Dims{224, 224, 3}));
  const std::vector<std::string> names = layer_names(b0);
  for (const char* n : {"rescaling", "normalization", "stem_conv_pad", "stem_conv", "stem_bn", "stem_activation",
                        "block1a_dwconv", "block1a_bn", "block1a_activation", "block1a_se_squeeze", "block1a_se_reshape",
                        "block1a_se_reduce", "block1a_se_expand", "block1a_se_excite", "block1a_project_conv",
                        "block1a_project_bn", "block2a_expand_conv", "block2a_expand_bn", "block2a_expand_activation",
                        "block2a_dwconv_pad", "block2b_drop", "block2b_add", "block6d_add", "block7a_project_bn",
                        "top_conv", "top_bn", "top_activation", "avg_pool", "top_dropout", "predictions"})
    EXPECT_TRUE(has(names, n)) << n;
  for (const char* n : {"block1a_add", "block1a_drop", "block2a_add", "block1a_expand_conv", "rescaling_1", "block7b_add"})
    EXPECT_FALSE(has(names, n)) << n;
  const Functional stem = EfficientNetB0({.include_top = false, .input_shape = {64, 64, 3}, .pooling = "max",
                                          .imagenet_rescaling = true});
  EXPECT_TRUE(has(layer_names(stem), "rescaling_1"));
  EXPECT_TRUE(has(layer_names(stem), "max_pool"));
  EXPECT_EQ(stem.output().shape(), (Dims{1280}));
  EXPECT_EQ(EfficientNetB2({.include_top = false, .input_shape = {64, 64, 3}}).output().shape(), (Dims{2, 2, 1408}));
  const HostTensor px = HostTensor::from_vector<float>({1, 1, 1, 3}, std::vector<float>{0.0f, 127.5f, 255.0f});
  EXPECT_EQ(efficientnet::preprocess_input(px).to_vector<float>(), px.to_vector<float>());
}

TEST(ApplicationsTest, LayersAndModelsCarryKerasNames) {
  const Functional v2 = MobileNetV2({.input_shape = {96, 96, 3}, .include_top = false});
  EXPECT_EQ(v2.name(), "mobilenetv2_1.00_96");
  const std::vector<std::string> v2_names = layer_names(v2);
  for (const char* n : {"Conv1", "bn_Conv1", "Conv1_relu", "expanded_conv_depthwise", "expanded_conv_project_BN",
                        "block_1_pad", "block_2_add", "block_16_project_BN", "Conv_1", "Conv_1_bn", "out_relu"})
    EXPECT_TRUE(has(v2_names, n)) << n;
  EXPECT_FALSE(has(v2_names, "block_1_add"));  // stride 2: no residual
  EXPECT_EQ(v2.output().shape(), (Dims{3, 3, 1280}));

  const Functional r50 = ResNet50({.include_top = false, .input_shape = {64, 64, 3}, .pooling = "avg"});
  EXPECT_EQ(r50.name(), "resnet50");
  const std::vector<std::string> r50_names = layer_names(r50);
  for (const char* n : {"conv1_pad", "conv1_conv", "conv1_bn", "pool1_pool", "conv2_block1_0_conv",
                        "conv2_block1_0_bn", "conv3_block4_3_bn", "conv5_block3_out", "avg_pool"})
    EXPECT_TRUE(has(r50_names, n)) << n;
  EXPECT_EQ(r50.output().shape(), (Dims{2048}));

  const Functional v1 = MobileNet({.input_shape = {128, 128, 3}, .alpha = 0.5, .classes = 7});
  EXPECT_EQ(v1.name(), "mobilenet_0.50_128");
  const std::vector<std::string> v1_names = layer_names(v1);
  for (const char* n : {"conv1", "conv_pad_2", "conv_dw_13", "conv_pw_13_bn", "dropout", "conv_preds", "reshape_2",
                        "predictions"})
    EXPECT_TRUE(has(v1_names, n)) << n;
  EXPECT_EQ(v1.output().shape(), (Dims{7}));

  const Functional dn = DenseNet121({.include_top = false, .input_shape = {64, 64, 3}});
  const std::vector<std::string> dn_names = layer_names(dn);
  for (const char* n : {"conv1_conv", "pool1", "conv2_block6_concat", "pool4_pool", "conv5_block16_2_conv", "bn", "relu"})
    EXPECT_TRUE(has(dn_names, n)) << n;
  EXPECT_EQ(dn.output().shape(), (Dims{2, 2, 1024}));
}

TEST(ApplicationsTest, BadArgumentsAreValueErrors) {
  KILN_EXPECT_ERROR(ResNet50({.input_shape = {16, 16, 3}}), ValueError, "rows and cols >= 32");
  KILN_EXPECT_ERROR(MobileNetV2({.include_top = false, .pooling = "mean"}), ValueError, "pooling must be");
  KILN_EXPECT_ERROR(VGG16({.input_shape = {32, 32, 3}, .classifier_activation = "relu"}), ValueError,
                    "classifier_activation must be");
}


// imagenet_utils.py's three modes by hand on one pixel (R, G, B) = (0, 127.5, 255).
TEST(ApplicationsTest, PreprocessInputModesMatchKerasByHand) {
  HostTensor px = HostTensor::from_vector<float>({1, 1, 1, 3}, std::vector<float>{0.0f, 127.5f, 255.0f});
  EXPECT_EQ(mobilenet_v2::preprocess_input(px).to_vector<float>(), (std::vector<float>{-1.0f, 0.0f, 1.0f}));
  const std::vector<float> caffe = resnet::preprocess_input(px).to_vector<float>();  // BGR less the BGR mean
  EXPECT_FLOAT_EQ(caffe[0], 255.0f - 103.939f);
  EXPECT_FLOAT_EQ(caffe[1], 127.5f - 116.779f);
  EXPECT_FLOAT_EQ(caffe[2], 0.0f - 123.68f);
  const std::vector<float> torch = densenet::preprocess_input(px).to_vector<float>();
  EXPECT_NEAR(torch[0], (0.0 - 0.485) / 0.229, 1e-5);
  EXPECT_NEAR(torch[1], (0.5 - 0.456) / 0.224, 1e-5);
  EXPECT_NEAR(torch[2], (1.0 - 0.406) / 0.225, 1e-5);
  KILN_EXPECT_ERROR(preprocess_input(HostTensor(Shape(DType::kF32, {2, 4})), "tf"), ValueError, "RGB images");
}

TEST(ApplicationsTest, DecodePredictionsNamesTheBestClassesFromKerasClassIndex) {
  const std::filesystem::path index = std::filesystem::temp_directory_path() / "kiln_imagenet_class_index_test.json";
  std::ofstream(index) << R"({"0": ["n01440764", "tench"], "1": ["n01443537", "goldfish"], "2": ["n01484850", "great_white_shark"]})";
  const HostTensor preds = HostTensor::from_vector<float>({2, 3}, std::vector<float>{0.1f, 0.7f, 0.2f, 0.5f, 0.2f, 0.3f});
  const auto best = decode_predictions(preds, index.string(), 2);
  ASSERT_EQ(best.size(), 2u);
  ASSERT_EQ(best[0].size(), 2u);
  EXPECT_EQ(best[0][0].class_id, "n01443537");
  EXPECT_EQ(best[0][0].name, "goldfish");
  EXPECT_FLOAT_EQ(best[0][0].score, 0.7f);
  EXPECT_EQ(best[0][1].name, "great_white_shark");
  EXPECT_EQ(best[1][0].name, "tench");
  KILN_EXPECT_ERROR(decode_predictions(HostTensor(Shape(DType::kF32, {1, 5})), index.string()), ValueError, "names 3 classes");
  KILN_EXPECT_ERROR(decode_predictions(preds, "/nonexistent/index.json"), IOError, "cannot open");
  std::filesystem::remove(index);
}

// Keras's weight files load into the builders: make_applications_fixtures.py writes random
// weights for MobileNetV2, ResNet50 and MobileNetV3Small (32 x 32 inputs, 10 classes) in the
// layout of Keras's official files, with the predictions of its own float64 numpy forward pass.
TEST(ApplicationsTest, KerasWeightFilesLoadAndPredictAsNumpyComputes) {
  const char* dir = std::getenv("KILN_APPLICATIONS_FIXTURES");
  ASSERT_NE(dir, nullptr) << "run under ctest (the fixture generator sets KILN_APPLICATIONS_FIXTURES)";
  for (const std::string name : {"mobilenet_v2", "resnet50", "mobilenet_v3_small"}) {
    SCOPED_TRACE(name);
    const std::string base = std::string(dir) + "/" + name;
    Functional model =
        name == "resnet50" ? ResNet50({.weights = base + ".h5", .input_shape = {32, 32, 3}, .classes = 10})
        : name == "mobilenet_v2"
            ? MobileNetV2({.input_shape = {32, 32, 3}, .weights = base + ".h5", .classes = 10})
            : MobileNetV3Small({.input_shape = {32, 32, 3}, .weights = base + ".h5", .classes = 10});
    const HostTensor x = testing::read_raw_tensor(base + ".x.bin", {2, 32, 32, 3});
    const std::vector<float> want = testing::read_raw_tensor(base + ".y.bin", {2, 10}).to_vector<float>();
    const std::vector<float> got = model.predict(x).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "output " << i;
  }
  // A file of another architecture is an error naming it, not a silent partial load.
  KILN_EXPECT_ERROR(EfficientNetB0({.weights = std::string(dir) + "/mobilenet_v2.h5", .input_shape = {32, 32, 3},
                                    .classes = 10}),
                    Error, "mobilenet_v2.h5");
  KILN_EXPECT_ERROR(MobileNetV2({.input_shape = {32, 32, 3}, .weights = std::string(dir) + "/resnet50.h5", .classes = 10}),
                    Error, "resnet50.h5");
}

// EfficientNetB0 with ImageNet-layout weights (Normalization's mean, the stddev as its variance,
// an int64 count; random BatchNormalization statistics calibrated in numpy) predicts what the
// float64 numpy forward pass does, to 1e-5 relative: loaded by the builder (by the layers'
// order, as Keras's load_weights) and by name into a model built without weights.
TEST(ApplicationsTest, EfficientNetWeightFileLoadsByOrderAndByName) {
  const char* dir = std::getenv("KILN_APPLICATIONS_FIXTURES");
  ASSERT_NE(dir, nullptr) << "run under ctest (the fixture generator sets KILN_APPLICATIONS_FIXTURES)";
  const std::string base = std::string(dir) + "/efficientnet_b0";
  const HostTensor x = testing::read_raw_tensor(base + ".x.bin", {2, 32, 32, 3});
  const std::vector<float> want = testing::read_raw_tensor(base + ".y.bin", {2, 10}).to_vector<float>();
  Functional by_order = EfficientNetB0({.weights = base + ".h5", .input_shape = {32, 32, 3}, .classes = 10});
  Functional by_name = EfficientNetB0({.input_shape = {32, 32, 3}, .classes = 10, .imagenet_rescaling = true});
  by_name.load_weights(base + ".h5", {.by_name = true});
  for (Functional* model : {&by_order, &by_name}) {
    SCOPED_TRACE(model == &by_order ? "by order" : "by name");
    const std::vector<float> got = model->predict(x).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * std::fabs(want[i])) << "output " << i;
    for (const auto& layer : model->layers()) {
      if (layer->name() != "normalization") continue;
      EXPECT_EQ(layer->weights().at(2).read().to_vector<int64_t>(), (std::vector<int64_t>{150528000}));
      EXPECT_EQ(layer->weights().at(1).read().to_vector<float>(), (std::vector<float>{0.229f, 0.224f, 0.225f}));
    }
  }
  // Without the stem's extra Rescaling the same weights predict something else.
  Functional plain = EfficientNetB0({.weights = base + ".h5", .input_shape = {32, 32, 3}, .classes = 10,
                                     .imagenet_rescaling = false});
  EXPECT_GT(std::fabs(plain.predict(x).to_vector<float>()[0] - want[0]), 1e-3);
}

}  // namespace
}  // namespace kiln::keras::applications
