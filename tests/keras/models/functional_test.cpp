// Functional models: the layer graph of keras::Input tensors (naming, order, shared layers),
// residual and multi-input models that train, the "Connected to" summary, Keras 2 config JSON
// both ways, and the merge layers Add and Concatenate.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

HostTensor random_f32(Dims dims, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  HostTensor t(Shape(DType::kF32, std::move(dims)));
  for (float& v : t.data<float>()) v = dist(gen);
  return t;
}

// x -> dense(relu) -> add(x, .) -> dense_1: the smallest residual model.
std::unique_ptr<Functional> residual_model() {
  KerasTensor x = Input({8});
  KerasTensor h = Dense(8, {.activation = "relu"})(x);
  KerasTensor y = Add()({x, h});
  return std::make_unique<Functional>(std::vector<KerasTensor>{x}, Dense(1)(y));
}

std::vector<std::string> layer_names(const Model& m) {
  std::vector<std::string> names;
  for (const LayerHandle& l : m.layers()) names.push_back(l->name());
  return names;
}

TEST(FunctionalTest, NamesAndOrdersLayersLikeKeras) {
  auto model = residual_model();
  EXPECT_EQ(layer_names(*model), (std::vector<std::string>{"input_1", "dense", "add", "dense_1"}));
  EXPECT_EQ(model->count_params(), 8 * 8 + 8 + 8 + 1);
  EXPECT_EQ(model->get_layer("dense").weights()[0].name(), "dense/kernel");
  EXPECT_EQ(model->output().shape(), (Dims{1}));
}

TEST(FunctionalTest, SummaryHasTheConnectedToColumn) {
  const std::string expected =
      "Model: \"model\"\n"
      "__________________________________________________________________________________________________\n"
      "Layer (type)                    Output Shape         Param #     Connected to                     \n"
      "==================================================================================================\n"
      "input_1 (InputLayer)            [(None, 8)]          0                                            \n"
      "__________________________________________________________________________________________________\n"
      "dense (Dense)                   (None, 8)            72          input_1[0][0]                    \n"
      "__________________________________________________________________________________________________\n"
      "add (Add)                       (None, 8)            0           input_1[0][0]                    \n"
      "                                                                 dense[0][0]                      \n"
      "__________________________________________________________________________________________________\n"
      "dense_1 (Dense)                 (None, 1)            9           add[0][0]                        \n"
      "==================================================================================================\n"
      "Total params: 81\n"
      "Trainable params: 81\n"
      "Non-trainable params: 0\n"
      "__________________________________________________________________________________________________\n";
  EXPECT_EQ(residual_model()->summary_text(), expected);
}

TEST(FunctionalTest, AChainPrintsAsASequentialTableWithItsInputLayer) {
  KerasTensor x = Input({4}, {.name = "features"});
  Functional model({x}, Dense(2)(Dense(3)(x)), {.name = "chain"});
  const std::string text = model.summary_text();
  EXPECT_EQ(text.find("Connected to"), std::string::npos) << text;
  EXPECT_NE(text.find("features (InputLayer)        [(None, 4)]               0"), std::string::npos) << text;
  EXPECT_NE(text.find("dense_1 (Dense)              (None, 2)                 8"), std::string::npos) << text;
}

TEST(FunctionalTest, ResidualModelTrainsAndItsConfigRoundTrips) {
  // y = sum of the first two features: learnable by the residual model.
  const int64_t n = 512;
  HostTensor x = random_f32({n, 8}, 1);
  HostTensor y(Shape(DType::kF32, {n, 1}));
  for (int64_t i = 0; i < n; ++i) y.data<float>()[static_cast<size_t>(i)] = x.data<float>()[static_cast<size_t>(i * 8)] + x.data<float>()[static_cast<size_t>(i * 8 + 1)];
  auto model = residual_model();
  model->compile({.optimizer = Adam({.learning_rate = 0.01}), .loss = MeanSquaredError()});
  History h = model->fit(testing::batches(x, y, 32), {.epochs = 5, .verbose = 0});
  const std::vector<double>& loss = h.history.at("loss");
  EXPECT_LT(loss.back(), 0.2 * loss.front()) << "first " << loss.front() << " last " << loss.back();

  const std::string json = model->to_json();
  std::unique_ptr<Functional> copy = Functional::from_json(json);
  EXPECT_EQ(copy->to_json(), json);
  EXPECT_EQ(layer_names(*copy), layer_names(*model));
  copy->set_weights(model->get_weights());
  HostTensor a = model->predict(x.slice_rows(0, 64)), b = copy->predict(x.slice_rows(0, 64));
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
}

TEST(FunctionalTest, SavesAndLoadsInBothFormats) {
  auto model = residual_model();
  model->compile({.optimizer = Adam(), .loss = MeanSquaredError()});
  HostTensor x = random_f32({4, 8}, 9);
  const std::vector<float> want = model->predict(x).to_vector<float>();
  kiln::testing::TempDir dir;
  for (const std::string name : {"residual.h5", "residual_dir"}) {
    const std::string path = (dir.path() / name).string();
    model->save(path);
    std::unique_ptr<Model> loaded = load_model(path);
    ASSERT_NE(dynamic_cast<Functional*>(loaded.get()), nullptr) << name;
    EXPECT_EQ(loaded->to_json(), model->to_json()) << name;
    EXPECT_EQ(loaded->predict(x).to_vector<float>(), want) << name;
  }
}

TEST(FunctionalTest, ConfigIsKeras2Functional) {
  const std::string json = residual_model()->to_json();
  for (const char* part :
       {"\"class_name\":\"Functional\"", "\"input_layers\":[[\"input_1\",0,0]]", "\"output_layers\":[[\"dense_1\",0,0]]",
        "\"inbound_nodes\":[[[\"input_1\",0,0,{}],[\"dense\",0,0,{}]]]", "\"batch_input_shape\":[null,8]",
        "\"inbound_nodes\":[]", "\"ragged\":false"})
    EXPECT_NE(json.find(part), std::string::npos) << part << " not in " << json;
}

TEST(FunctionalTest, MultiInputModelFitsOnTupleElementsAndPredicts) {
  KerasTensor a = Input({3}), b = Input({5});
  KerasTensor joined = Concatenate()({a, b});
  EXPECT_EQ(joined.shape(), (Dims{8}));
  Functional model({a, b}, Dense(1)(Dense(16, {.activation = "relu"})(joined)));
  EXPECT_EQ(model.num_inputs(), 2u);
  const int64_t n = 256;
  HostTensor xa = random_f32({n, 3}, 2), xb = random_f32({n, 5}, 3), y(Shape(DType::kF32, {n, 1}));
  for (int64_t i = 0; i < n; ++i)
    y.data<float>()[static_cast<size_t>(i)] = xa.data<float>()[static_cast<size_t>(3 * i)] - xb.data<float>()[static_cast<size_t>(5 * i + 4)];
  model.compile({.optimizer = Adam({.learning_rate = 0.01}), .loss = MeanSquaredError()});
  data::Dataset ds = data::Dataset::from_tensor_slices({xa, xb, y}).batch(32, /*drop_remainder=*/true);
  History h = model.fit(ds, {.epochs = 6, .verbose = 0});
  EXPECT_LT(h.history.at("loss").back(), 0.3 * h.history.at("loss").front());
  HostTensor p = model.predict(ds);
  EXPECT_EQ(p.dims(), (Dims{n, 1}));
  const Logs logs = model.evaluate(ds, {.verbose = 0});
  EXPECT_NEAR(logs.at("loss"), h.history.at("loss").back(), 0.5);
  KILN_EXPECT_ERROR(model.predict(xa), ValueError, "[model] expected 2 inputs, received 1");
}

TEST(FunctionalTest, ASharedLayerHasOneSetOfWeightsAndTwoNodes) {
  KerasTensor a = Input({4}), b = Input({4});
  auto shared = std::make_shared<Dense>(4, DenseOptions{.name = "shared"});
  KerasTensor y = Add()({(*shared)(a), (*shared)(b)});
  Functional model({a, b}, y);
  EXPECT_EQ(layer_names(model), (std::vector<std::string>{"input_1", "input_2", "shared", "add"}));
  EXPECT_EQ(model.weights().size(), 2u);
  EXPECT_NE(model.summary_text().find("shared[1][0]"), std::string::npos) << model.summary_text();
  const std::string json = model.to_json();
  EXPECT_NE(json.find("\"inbound_nodes\":[[[\"input_1\",0,0,{}]],[[\"input_2\",0,0,{}]]]"), std::string::npos) << json;
  std::unique_ptr<Functional> copy = Functional::from_json(json);
  EXPECT_EQ(copy->to_json(), json);
  // f(a) + f(b) with one kernel: swapping the inputs gives the same output.
  HostTensor xa = random_f32({2, 4}, 4), xb = random_f32({2, 4}, 5);
  data::Dataset ab = data::Dataset::from_tensor_slices({xa, xb}).batch(2);
  data::Dataset ba = data::Dataset::from_tensor_slices({xb, xa}).batch(2);
  const std::vector<float> p = model.predict(ab).to_vector<float>(), q = model.predict(ba).to_vector<float>();
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], q[i], 1e-6);
}

TEST(FunctionalTest, ReadsATfKerasConfigWithCallKwargs) {
  // The shape tf.keras 2.x writes for x -> MultiHeadAttention(x, x, use_causal_mask) -> Add.
  const std::string json = R"({"class_name": "Functional", "config": {"name": "block", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 5, 8], "dtype": "float32", "sparse": false,
     "ragged": false, "name": "tokens"}, "name": "tokens", "inbound_nodes": []},
    {"class_name": "MultiHeadAttention", "config": {"name": "mha", "trainable": true, "dtype": "float32", "num_heads": 2,
     "key_dim": 4, "value_dim": 4, "dropout": 0.0, "use_bias": true, "output_shape": null, "attention_axes": [2],
     "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}},
     "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": null, "bias_regularizer": null,
     "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null, "query_shape": [null, 5, 8],
     "key_shape": [null, 5, 8], "value_shape": [null, 5, 8]},
     "name": "mha", "inbound_nodes": [[["tokens", 0, 0, {"value": ["tokens", 0, 0], "use_causal_mask": true}]]]},
    {"class_name": "Add", "config": {"name": "add", "trainable": true, "dtype": "float32"}, "name": "add",
     "inbound_nodes": [[["tokens", 0, 0, {}], ["mha", 0, 0, {}]]]}],
    "input_layers": [["tokens", 0, 0]], "output_layers": [["add", 0, 0]]}, "keras_version": "2.11.0", "backend": "tensorflow"})";
  KILN_EXPECT_ERROR(Functional::from_json(json), ConfigError, "attention_axes=[2]");
  std::string fixed = json;
  fixed.replace(fixed.find("\"attention_axes\": [2]"), 21, "\"attention_axes\": [1]");
  std::unique_ptr<Functional> model = Functional::from_json(fixed);
  EXPECT_EQ(layer_names(*model), (std::vector<std::string>{"tokens", "mha", "add"}));
  EXPECT_EQ(model->get_layer("mha").weights()[0].name(), "mha/query/kernel");
  EXPECT_EQ(model->get_layer("mha").weights()[0].shape(), Shape(DType::kF32, {8, 2, 4}));
  const std::string out = model->to_json();
  EXPECT_NE(out.find("{\"use_causal_mask\":true,\"value\":[\"tokens\",0,0]}"), std::string::npos) << out;
  EXPECT_EQ(model->predict(random_f32({3, 5, 8}, 6)).dims(), (Dims{3, 5, 8}));
}

TEST(FunctionalTest, GraphErrorsNameWhatIsWrong) {
  KerasTensor a = Input({4}), b = Input({4});
  KerasTensor y = Add()({a, b});
  KILN_EXPECT_ERROR(Functional({a}, y), ValueError, "graph disconnected");
  KILN_EXPECT_ERROR(Functional({y}, y), ValueError, "input 0 is not a keras::Input tensor");
  Dense built(3);
  built(Tensor(HostTensor(Shape(DType::kF32, {1, 4}))));
  KILN_EXPECT_ERROR(built(a), ValueError, "a built layer that no model holds yet cannot join a functional graph");
  KILN_EXPECT_ERROR(Add()({a}), ValueError, "Add expects a list of at least 2 inputs, received 1");
  KILN_EXPECT_ERROR(Add()({a, Input({5})}), ShapeError,
                    "Add expects inputs of one shape (or dims of 1 that broadcast, as Keras's), received [4], [5]");
  KILN_EXPECT_ERROR(Concatenate()({Input({2, 3}), Input({3, 3})}), ShapeError, "equal in every other dim");
  KILN_EXPECT_ERROR(Functional({a, b}, Dense(2, {.name = "d"})(Dense(2, {.name = "d"})(y))), ValueError,
                    "two layers are named 'd'");
  auto model = residual_model();
  model->compile({.optimizer = "sgd", .loss = MeanSquaredError()});
  KILN_EXPECT_ERROR(model->predict(random_f32({2, 7}, 1)), ShapeError, "input 'input_1' expected shape [null,8]");
}

TEST(MergeLayersTest, AddSumsAndConcatenateJoinsOnTheAxis) {
  Add add;
  Tensor s = add(std::vector<Tensor>{Tensor::from_vector<float>({1, 2}, {1, 2}), Tensor::from_vector<float>({1, 2}, {10, 20}),
                                     Tensor::from_vector<float>({1, 2}, {100, 200})});
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{111, 222}));
  Concatenate cat({.axis = 1});
  Tensor c = cat(std::vector<Tensor>{Tensor::from_vector<float>({1, 1, 2}, {1, 2}), Tensor::from_vector<float>({1, 2, 2}, {3, 4, 5, 6})});
  EXPECT_EQ(c.dims(), (Dims{1, 3, 2}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Concatenate::from_config(cat.get_config()).get_config(), cat.get_config());
  EXPECT_NE(cat.get_config().find("\"axis\":1"), std::string::npos);
}

}  // namespace
}  // namespace kiln::keras
