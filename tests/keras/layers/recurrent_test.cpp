// SimpleRNN, LSTM, GRU and Masking / Embedding(mask_zero) (and GlobalAveragePooling1D's masked
// mean after them): outputs of Keras 2 .h5 models against the numpy forward pass of
// tests/fixtures/keras/make_rnn_fixtures.py (Keras's cell equations and backend.rnn masking),
// .h5 and config round trips, gradients of whole layers against f64 central differences,
// return_state and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "kiln/trace/ops/elementwise.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/finite_difference.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

namespace fs = std::filesystem;
using kiln::testing::check_gradients;
using kiln::testing::random_f64;
using nlohmann::json;

HostTensor read_f32(const std::string& path, Dims dims) {
  HostTensor t(Shape(DType::kF32, std::move(dims)));
  std::ifstream in(path, std::ios::binary);
  auto v = t.data<float>();
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  EXPECT_TRUE(in.good()) << path;
  return t;
}

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  EXPECT_EQ(x.size(), y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

class RnnFixtures : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("KILN_RNN_FIXTURES");
    dir_ = dir ? dir : "";
    ASSERT_TRUE(!dir_.empty() && fs::exists(dir_ + "/manifest.json"))
        << "no fixtures at KILN_RNN_FIXTURES='" << dir_ << "' (ctest runs RnnFixtures.Generate first)";
    std::ifstream in(dir_ + "/manifest.json");
    manifest_ = json::parse(in);
  }
  Dims dims(const json& j) const { return j.get<Dims>(); }
  std::string dir_;
  json manifest_;
};

// Every fixture: the loaded model's output equals numpy's; saved again by Kiln and reloaded,
// the weights (names included) and outputs are the same, and every layer's config round-trips.
TEST_F(RnnFixtures, LoadedModelsMatchNumpyAndRoundTrip) {
  ASSERT_GE(manifest_.size(), 14u);  // with the two GlobalAveragePooling1D models
  kiln::testing::TempDir tmp;
  for (const json& fx : manifest_) {
    const std::string name = fx["name"];
    SCOPED_TRACE(name);
    const HostTensor x = read_f32(dir_ + "/" + name + ".x.bin", dims(fx["x_shape"]));
    const HostTensor want = read_f32(dir_ + "/" + name + ".y.bin", dims(fx["y_shape"]));
    std::unique_ptr<Model> model = load_model(dir_ + "/" + fx["file"].get<std::string>(), {.compile = false});
    const HostTensor got = model->predict(x);
    ASSERT_EQ(got.dims(), want.dims());
    EXPECT_LT(max_abs_diff(got, want), 2e-5);

    // Keras 3's .keras layout (weights in each layer's `cell`): the same outputs after a round
    // trip; Keras 2's hard_sigmoid has no Keras 3 spelling, so those models are refused.
    const std::string archive = (tmp.path() / (name + ".keras")).string();
    if (model->to_json().find("\"hard_sigmoid\"") != std::string::npos) {
      KILN_EXPECT_ERROR(model->save(archive), ConfigError, "=hard_sigmoid is Keras 2's");
    } else {
      model->save(archive);
      EXPECT_EQ(max_abs_diff(load_model(archive, {.compile = false})->predict(x), got), 0.0) << "via .keras";
    }
    const std::string saved = (tmp.path() / (name + ".h5")).string();
    model->save(saved);
    std::unique_ptr<Model> again = load_model(saved, {.compile = false});
    EXPECT_EQ(max_abs_diff(again->predict(x), got), 0.0);
    ASSERT_EQ(again->layers().size(), model->layers().size());
    for (size_t i = 0; i < model->layers().size(); ++i) {
      // Kiln's writer records the input shape in the first layer (as tf.keras does).
      json a_config = json::parse(again->layers()[i]->get_config()), b_config = json::parse(model->layers()[i]->get_config());
      for (const char* key : {"batch_input_shape", "input_length"}) a_config.erase(key), b_config.erase(key);
      EXPECT_EQ(a_config, b_config);
      const std::vector<Variable> a = model->layers()[i]->weights(), b = again->layers()[i]->weights();
      ASSERT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k].name(), b[k].name());
    }
  }
}

TEST(RecurrentTest, WeightsAreNamedAndShapedAsKeras2) {
  LSTM lstm(4);
  lstm.build(Dims{7, 3});
  ASSERT_EQ(lstm.weights().size(), 3u);
  EXPECT_EQ(lstm.weights()[0].name(), "lstm/lstm_cell/kernel");
  EXPECT_EQ(lstm.weights()[1].name(), "lstm/lstm_cell/recurrent_kernel");
  EXPECT_EQ(lstm.weights()[2].name(), "lstm/lstm_cell/bias");
  EXPECT_EQ(lstm.kernel().shape().dims(), (Dims{3, 16}));
  EXPECT_EQ(lstm.recurrent_kernel().shape().dims(), (Dims{4, 16}));
  // unit_forget_bias: the forget block (units 4..7) starts at one, the rest at zero.
  const std::vector<float> bias = lstm.bias().storage().to_vector<float>();
  for (size_t k = 0; k < 16; ++k) EXPECT_EQ(bias[k], k >= 4 && k < 8 ? 1.0f : 0.0f) << k;
  // The recurrent kernel is orthogonal (Keras's default initializer): U^T U = I on 4 x 16.
  const std::vector<float> u = lstm.recurrent_kernel().storage().to_vector<float>();
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      double dot = 0;
      for (int k = 0; k < 16; ++k) dot += double(u[size_t(a * 16 + k)]) * u[size_t(b * 16 + k)];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-5);
    }
  GRU gru(2);
  gru.build(Dims{5, 3});
  EXPECT_EQ(gru.bias().shape().dims(), (Dims{2, 6}));
  EXPECT_EQ(gru.weights()[0].name(), "gru/gru_cell/kernel");
  GRU before(2, {.reset_after = false});
  before.build(Dims{5, 3});
  EXPECT_EQ(before.bias().shape().dims(), (Dims{6}));
  SimpleRNN rnn(3, {.return_sequences = true});
  EXPECT_EQ(rnn.compute_output_shape({5, 2}), (Dims{5, 3}));
  rnn.build(Dims{5, 2});
  EXPECT_EQ(rnn.weights()[1].name(), "simple_rnn/simple_rnn_cell/recurrent_kernel");
}

// d(layer(x))/dx and d/d(each weight) against central differences, in float64 layers.
// In training, the dropout counter starts over before each evaluation: every evaluation draws
// the same masks, so the finite differences see one function.
::testing::AssertionResult check_rnn_gradients(Layer& layer, const HostTensor& x, const HostTensor& mask = {},
                                               bool training = false) {
  layer.build(Dims(x.dims().begin() + 1, x.dims().end()));
  const std::vector<Variable> weights = layer.trainable_weights();
  std::vector<HostTensor> inputs{x};
  for (const Variable& w : weights) inputs.push_back(random_f64(w.shape().dims(), 11u + uint32_t(inputs.size()), -0.6, 0.6));
  if (mask.defined()) inputs.push_back(mask);
  auto f = [&](const std::vector<Tensor>& xs) {
    for (size_t i = 0; i < weights.size(); ++i) weights[i].assign(xs[i + 1]);
    for (const Variable& counter : layer.random_state()) counter.assign(zeros(counter.shape()));
    return layer.call_with_mask(xs[0], mask.defined() ? xs.back() : Tensor(), training);
  };
  return check_gradients(f, inputs, {.rtol = 1e-6, .atol = 1e-8});
}

HostTensor step_mask() {  // rows: kept, padded at the end, padded at the start and middle
  return HostTensor::from_vector<bool>({3, 4}, {true, true, true, true, true, true, false, false,
                                                false, true, false, true});
}

TEST(RecurrentTest, GradientsOfWholeLayersMatchFiniteDifferences) {
  const RecurrentOptions f64{.dtype = mixed_precision::Policy("float64")};
  auto with = [&](auto change) {
    RecurrentOptions o = f64;
    change(o);
    return o;
  };
  const HostTensor x = random_f64({3, 4, 2}, 5);
  SimpleRNN rnn(3, with([](RecurrentOptions& o) { o.return_sequences = true; }));
  EXPECT_TRUE(check_rnn_gradients(rnn, x));
  LSTM lstm(3, f64);
  EXPECT_TRUE(check_rnn_gradients(lstm, x));
  LSTM lstm_back(2, with([](RecurrentOptions& o) { o.return_sequences = true, o.go_backwards = true; }));
  EXPECT_TRUE(check_rnn_gradients(lstm_back, x, step_mask()));
  GRU gru(3, with([](RecurrentOptions& o) { o.return_sequences = true; }));
  EXPECT_TRUE(check_rnn_gradients(gru, x, step_mask()));
  GRU gru_before(2, with([](RecurrentOptions& o) { o.reset_after = false; }));
  EXPECT_TRUE(check_rnn_gradients(gru_before, x));
  SimpleRNN masked_last(2, f64);
  EXPECT_TRUE(check_rnn_gradients(masked_last, x, step_mask()));
}

TEST(RecurrentTest, ReturnStateGivesTheFinalStatesAndTakesInitialOnes) {
  LSTM lstm(2, {.return_sequences = true, .return_state = true});
  const HostTensor x = random_f64({2, 3, 2}, 3).astype(DType::kF32);
  std::vector<Tensor> out = lstm.call_with_state(Tensor(x));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].dims(), (Dims{2, 3, 2}));
  // h is the last output; c differs from h.
  const std::vector<float> seq = out[0].to_vector<float>(), h = out[1].to_vector<float>(), c = out[2].to_vector<float>();
  for (size_t b = 0; b < 2; ++b)
    for (size_t k = 0; k < 2; ++k) EXPECT_EQ(h[b * 2 + k], seq[b * 6 + 4 + k]);
  EXPECT_NE(h, c);
  // Starting from the final states of the first two steps equals running all three.
  LSTM two(2, {.return_state = true});
  two.build(Dims{2, 2});
  for (size_t i = 0; i < 3; ++i) two.weights()[i].assign(lstm.weights()[i].read());
  std::vector<float> xv = x.to_vector<float>(), head, tail;
  for (size_t b = 0; b < 2; ++b)
    for (size_t t = 0; t < 3; ++t)
      for (size_t f = 0; f < 2; ++f) (t < 2 ? head : tail).push_back(xv[b * 6 + t * 2 + f]);
  std::vector<Tensor> s = two.call_with_state(Tensor::from_vector<float>({2, 2, 2}, head));
  std::vector<Tensor> rest = two.call_with_state(Tensor::from_vector<float>({2, 1, 2}, tail), Tensor(), {s[1], s[2]});
  const std::vector<float> resumed = rest[1].to_vector<float>();
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(resumed[i], h[i], 1e-6);
  KILN_EXPECT_ERROR(two.call_with_state(Tensor(x), Tensor(), {s[1]}), ValueError, "takes 2 initial state tensor(s)");
}

TEST(RecurrentTest, ConfigsRoundTripAndUnbuiltFeaturesFailLoudly) {
  GRU gru(5, {.recurrent_activation = "hard_sigmoid", .reset_after = false, .return_sequences = true,
              .go_backwards = true, .name = "g"});
  gru.build(Dims{4, 3});
  const std::string config = gru.get_config();
  for (const char* part : {"\"units\":5", "\"reset_after\":false", "\"recurrent_activation\":\"hard_sigmoid\"",
                           "\"go_backwards\":true", "\"return_sequences\":true", "\"class_name\":\"Orthogonal\""})
    EXPECT_NE(config.find(part), std::string::npos) << part << " not in " << config;
  GRU copy = GRU::from_config(config);
  EXPECT_EQ(copy.get_config(), config);
  LSTM lstm(3, {.unit_forget_bias = false, .name = "l"});
  EXPECT_EQ(LSTM::from_config(lstm.get_config()).get_config(), lstm.get_config());
  SimpleRNN rnn(2, {.activation = "relu", .use_bias = false, .name = "s"});
  EXPECT_EQ(SimpleRNN::from_config(rnn.get_config()).get_config(), rnn.get_config());
  EXPECT_EQ(rnn.get_config().find("recurrent_activation"), std::string::npos);
  Masking masking({.mask_value = -1.5, .name = "m"});
  EXPECT_EQ(Masking::from_config(masking.get_config()).get_config(), masking.get_config());
  Embedding emb(5, 2, {.mask_zero = true, .name = "e"});
  EXPECT_NE(emb.get_config().find("\"mask_zero\":true"), std::string::npos);
  EXPECT_EQ(Embedding::from_config(emb.get_config()).get_config(), emb.get_config());

  KILN_EXPECT_ERROR(LSTM::from_config(R"({"units": 3, "dropout": 1.5})"), ValueError,
                    "expected dropout in [0, 1), received dropout=1.5");
  KILN_EXPECT_ERROR(GRU(2, {.recurrent_dropout = -0.1}), ValueError, "expected recurrent_dropout in [0, 1)");
  KILN_EXPECT_ERROR(GRU::from_config(R"({"units": 3, "stateful": true})"), ConfigError, "stateful=true is not built");
  KILN_EXPECT_ERROR(SimpleRNN(0), ValueError, "[SimpleRNN] expected units > 0");
  LSTM bad(2, {.name = "l2"});
  KILN_EXPECT_ERROR(bad(Tensor::from_vector<float>({1, 3}, {1, 2, 3})), ShapeError, "(batch, time, features)");
}

// ---- dropout and recurrent_dropout ------------------------------------------------------------

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// The layer's return_sequences output recomputed in f64 from its weights and the masks it drew,
// with tf.keras 2.15's cell equations: gate g reads x * input mask g (the one mask when there is
// one) and h * recurrent mask g; GRU with reset_after=false multiplies r into the masked h.
std::vector<double> rnn_with_masks(const Recurrent& layer, const HostTensor& x) {
  const int64_t batch = x.dims()[0], steps = x.dims()[1], features = x.dims()[2], units = layer.units();
  const std::string cls = layer.class_name();
  const int gates = cls == "LSTM" ? 4 : cls == "GRU" ? 3 : 1;
  const bool reset_after = cls == "GRU" && layer.options().reset_after;
  const std::vector<double> xs = x.to_vector<double>(), w = layer.kernel().host_value().to_vector<double>(),
                            u = layer.recurrent_kernel().host_value().to_vector<double>(),
                            bias = layer.bias().host_value().to_vector<double>();
  const int64_t width = gates * units;
  const Recurrent::DropoutMasks& masks = layer.last_dropout_masks();
  auto mask_value = [](const std::vector<Tensor>& m, int g, int64_t b, int64_t k, int64_t n) {
    if (m.empty()) return 1.0;
    return m[m.size() == 1 ? 0 : static_cast<size_t>(g)].to_vector<double>()[static_cast<size_t>(b * n + k)];
  };
  std::vector<double> out(static_cast<size_t>(batch * steps * units));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> h(static_cast<size_t>(units), 0.0), c = h;
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<double> xp(static_cast<size_t>(width)), rp(static_cast<size_t>(width));
      for (int g = 0; g < gates; ++g)
        for (int64_t j = g * units; j < (g + 1) * units; ++j) {
          double a = bias[static_cast<size_t>(j)], r = reset_after ? bias[static_cast<size_t>(width + j)] : 0.0;
          for (int64_t f = 0; f < features; ++f)
            a += xs[static_cast<size_t>((b * steps + t) * features + f)] * mask_value(masks.input, g, b, f, features) *
                 w[static_cast<size_t>(f * width + j)];
          for (int64_t v = 0; v < units; ++v)
            r += h[static_cast<size_t>(v)] * mask_value(masks.recurrent, g, b, v, units) * u[static_cast<size_t>(v * width + j)];
          xp[static_cast<size_t>(j)] = a;
          rp[static_cast<size_t>(j)] = r;
        }
      std::vector<double> next(static_cast<size_t>(units));
      for (int64_t k = 0; k < units; ++k) {
        auto at = [&](const std::vector<double>& v, int g) { return v[static_cast<size_t>(g * units + k)]; };
        const auto kk = static_cast<size_t>(k);
        if (gates == 1) {
          next[kk] = std::tanh(at(xp, 0) + at(rp, 0));
        } else if (gates == 4) {
          c[kk] = sigmoid(at(xp, 1) + at(rp, 1)) * c[kk] + sigmoid(at(xp, 0) + at(rp, 0)) * std::tanh(at(xp, 2) + at(rp, 2));
          next[kk] = sigmoid(at(xp, 3) + at(rp, 3)) * std::tanh(c[kk]);
        } else {
          const double z = sigmoid(at(xp, 0) + at(rp, 0));
          double hh = 0;
          if (reset_after) {
            hh = std::tanh(at(xp, 2) + sigmoid(at(xp, 1) + at(rp, 1)) * at(rp, 2));
          } else {  // (r * h * mask) @ U_h: r of every unit, so the whole row
            double rec = 0;
            for (int64_t v = 0; v < units; ++v) {
              double rv = xp[static_cast<size_t>(units + v)];
              for (int64_t q = 0; q < units; ++q)
                rv += h[static_cast<size_t>(q)] * mask_value(masks.recurrent, 1, b, q, units) *
                      u[static_cast<size_t>(q * width + units + v)];
              rec += sigmoid(rv) * h[static_cast<size_t>(v)] * mask_value(masks.recurrent, 2, b, v, units) *
                     u[static_cast<size_t>(v * width + 2 * units + k)];
            }
            hh = std::tanh(at(xp, 2) + rec);
          }
          next[kk] = z * h[kk] + (1 - z) * hh;
        }
        out[static_cast<size_t>((b * steps + t) * units + k)] = next[kk];
      }
      h = next;
    }
  }
  return out;
}

// Every mask value is 0 or 1 / (1 - rate); returns the fraction of zeros.
double dropped_fraction(const std::vector<Tensor>& masks, double rate) {
  double zeros = 0, count = 0;
  for (const Tensor& m : masks)
    for (double v : m.to_vector<double>()) {
      EXPECT_TRUE(v == 0.0 || std::abs(v - 1.0 / (1.0 - rate)) < 1e-6) << v;  // f32 masks round 1 / (1 - rate)
      zeros += v == 0.0 ? 1 : 0;
      count += 1;
    }
  return count > 0 ? zeros / count : 0.0;
}

TEST(RecurrentDropoutTest, TrainingOutputsMatchTheCellsRecomputedWithTheDrawnMasks) {
  const HostTensor x = random_f64({3, 4, 5}, 21);
  auto opts = [](double dropout, double recurrent, bool reset_after = true) {
    return RecurrentOptions{.reset_after = reset_after, .return_sequences = true, .dropout = dropout,
                            .recurrent_dropout = recurrent, .seed = 3, .dtype = mixed_precision::Policy("float64")};
  };
  struct Case {
    std::shared_ptr<Recurrent> layer;
    size_t input_masks, recurrent_masks;  // tf.keras 2.15: per gate only with recurrent_dropout
  };
  const std::vector<Case> cases = {
      {std::make_shared<SimpleRNN>(4, opts(0.3, 0.4)), 1, 1},
      {std::make_shared<LSTM>(4, opts(0.3, 0.4)), 4, 4},
      {std::make_shared<LSTM>(4, opts(0.3, 0.0)), 1, 0},
      {std::make_shared<GRU>(4, opts(0.3, 0.4)), 3, 3},
      {std::make_shared<GRU>(4, opts(0.0, 0.4, /*reset_after=*/false)), 0, 3},
      {std::make_shared<GRU>(4, opts(0.3, 0.0)), 1, 0},
  };
  for (const Case& c : cases) {
    Recurrent& layer = *c.layer;
    SCOPED_TRACE(layer.get_config());
    layer.build(Dims{4, 5});
    layer.weights()[2].assign(Tensor(random_f64(layer.bias().shape().dims(), 8, -0.5, 0.5)));
    const std::vector<double> trained = layer(Tensor(x), /*training=*/true).to_vector<double>();
    const Recurrent::DropoutMasks drawn = layer.last_dropout_masks();
    ASSERT_EQ(drawn.input.size(), c.input_masks);
    ASSERT_EQ(drawn.recurrent.size(), c.recurrent_masks);
    const std::vector<double> expected = rnn_with_masks(layer, x);
    ASSERT_EQ(trained.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(trained[i], expected[i], 1e-10) << i;
    // Inference draws nothing and equals the layer without dropout (the recomputation without masks).
    const std::vector<double> inferred = layer(Tensor(x), /*training=*/false).to_vector<double>();
    EXPECT_TRUE(layer.last_dropout_masks().input.empty() && layer.last_dropout_masks().recurrent.empty());
    const std::vector<double> plain = rnn_with_masks(layer, x);
    for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(inferred[i], plain[i], 1e-10) << i;
    EXPECT_NE(inferred, trained);
    // The next training call (the next batch) draws new masks.
    layer(Tensor(x), /*training=*/true);
    const Recurrent::DropoutMasks& again = layer.last_dropout_masks();
    auto first_of = [](const Recurrent::DropoutMasks& m) {
      return (m.input.empty() ? m.recurrent[0] : m.input[0]).to_vector<double>();
    };
    EXPECT_NE(first_of(again), first_of(drawn));
  }
}

TEST(RecurrentDropoutTest, MasksDropTheirRateOfUnitsAndChangeFromBatchToBatch) {
  LSTM lstm(8, {.dropout = 0.25, .recurrent_dropout = 0.5});
  const HostTensor x = random_f64({256, 2, 16}, 4).astype(DType::kF32);
  lstm(Tensor(x), /*training=*/true);
  const Recurrent::DropoutMasks first = lstm.last_dropout_masks();
  ASSERT_EQ(first.input.size(), 4u);
  EXPECT_EQ(first.input[0].dims(), (Dims{256, 16}));
  EXPECT_EQ(first.recurrent[0].dims(), (Dims{256, 8}));
  // 16384 and 8192 Bernoulli draws: the standard errors are 0.0034 and 0.0055.
  EXPECT_NEAR(dropped_fraction(first.input, 0.25), 0.25, 0.02);
  EXPECT_NEAR(dropped_fraction(first.recurrent, 0.5), 0.5, 0.03);
  // Each gate has its own mask, and the next batch new ones.
  EXPECT_NE(first.input[0].to_vector<float>(), first.input[1].to_vector<float>());
  lstm(Tensor(x), /*training=*/true);
  EXPECT_NE(lstm.last_dropout_masks().input[0].to_vector<float>(), first.input[0].to_vector<float>());
  EXPECT_EQ(lstm.random_state().size(), 1u);
}

TEST(RecurrentDropoutTest, GradientsWithFixedMasksMatchFiniteDifferences) {
  auto opts = [](double dropout, double recurrent, bool reset_after = true) {
    return RecurrentOptions{.reset_after = reset_after, .return_sequences = true, .dropout = dropout,
                            .recurrent_dropout = recurrent, .dtype = mixed_precision::Policy("float64")};
  };
  const HostTensor x = random_f64({3, 4, 2}, 5);
  SimpleRNN rnn(3, opts(0.3, 0.3));
  EXPECT_TRUE(check_rnn_gradients(rnn, x, {}, /*training=*/true));
  LSTM lstm(3, opts(0.3, 0.3));
  EXPECT_TRUE(check_rnn_gradients(lstm, x, step_mask(), /*training=*/true));
  GRU gru(3, opts(0.3, 0.0));
  EXPECT_TRUE(check_rnn_gradients(gru, x, {}, /*training=*/true));
  GRU gru_before(2, opts(0.2, 0.4, /*reset_after=*/false));
  EXPECT_TRUE(check_rnn_gradients(gru_before, x, {}, /*training=*/true));
  EXPECT_FALSE(gru_before.last_dropout_masks().recurrent.empty());
}

TEST(RecurrentDropoutTest, FitTrainsWithDropoutAndASeededRunRepeatsBitwise) {
  // The compiled train step (the masks captured by the scan's while body and its gradient):
  // the loss falls, two seeded runs from the same weights are identical, and the same model
  // without dropout trains differently.
  const HostTensor x = random_f64({32, 5, 3}, 9).astype(DType::kF32);
  std::vector<float> yv;
  const std::vector<float> xv = x.to_vector<float>();
  for (size_t b = 0; b < 32; ++b) yv.push_back(xv[b * 15 + 12] - 0.5F * xv[b * 15 + 1]);
  const HostTensor y = HostTensor::from_vector<float>({32, 1}, yv);
  std::vector<HostTensor> start;
  auto train = [&](double dropout, double recurrent_dropout) {
    Sequential model({LSTM(4, {.dropout = dropout, .recurrent_dropout = recurrent_dropout, .seed = 1,
                               .input_shape = {5, 3}}),
                      Dense(1)});
    if (start.empty()) start = model.get_weights();
    model.set_weights(start);
    model.compile({.optimizer = Adam({.learning_rate = 0.05}), .loss = "mse"});
    const History h = model.fit(x, y, {.batch_size = 8, .epochs = 15, .shuffle = false, .verbose = 0});
    return std::pair{h.history.at("loss"), model.get_weights()};
  };
  const auto [losses, weights] = train(0.2, 0.3);
  EXPECT_LT(losses.back(), 0.5 * losses.front());
  const auto [again, weights_again] = train(0.2, 0.3);
  EXPECT_EQ(again, losses);
  for (size_t i = 0; i < weights.size(); ++i) EXPECT_EQ(weights[i].to_vector<float>(), weights_again[i].to_vector<float>());
  EXPECT_NE(train(0.0, 0.0).first, losses);
}

TEST(RecurrentDropoutTest, ConfigsRoundTripTheRatesAsKerasWritesThem) {
  LSTM lstm(3, {.dropout = 0.2, .recurrent_dropout = 0.1, .seed = 7, .name = "l"});
  const json config = json::parse(lstm.get_config());
  EXPECT_EQ(config.at("dropout"), 0.2);
  EXPECT_EQ(config.at("recurrent_dropout"), 0.1);
  EXPECT_EQ(config.at("implementation"), 1);  // tf.keras 2.15's cell switches with recurrent_dropout
  EXPECT_EQ(config.at("seed"), 7);
  EXPECT_EQ(LSTM::from_config(lstm.get_config()).get_config(), lstm.get_config());
  GRU gru(2, {.dropout = 0.5, .name = "g"});
  EXPECT_EQ(json::parse(gru.get_config()).at("implementation"), 2);
  EXPECT_EQ(json::parse(gru.get_config()).count("seed"), 0u);
  EXPECT_EQ(GRU::from_config(gru.get_config()).get_config(), gru.get_config());
  const SimpleRNN rnn = SimpleRNN::from_config(R"({"units": 2, "dropout": 0.25, "recurrent_dropout": 0.5})");
  EXPECT_EQ(rnn.options().dropout, 0.25);
  EXPECT_EQ(rnn.options().recurrent_dropout, 0.5);
}

TEST(RecurrentTest, RegularizersPenalizeEachWeightAndEveryOutputAndConstraintsHold) {
  // Keras's LSTM: kernel/recurrent/bias regularizers on their weights, the activity
  // regularizer on every output (with return_state, the final states too), divided by the batch.
  LSTM lstm(3, {.kernel_regularizer = Regularizer::from_config("L2", R"({"l2": 0.5})"),
                .recurrent_regularizer = Regularizer::from_config("L1", R"({"l1": 0.25})"),
                .bias_regularizer = Regularizer::from_config("L2", R"({"l2": 0.125})"),
                .activity_regularizer = Regularizer::from_config("L2", R"({"l2": 0.01})"),
                .kernel_constraint = Constraint::from_config("NonNeg"), .name = "l"});
  lstm.build(Dims{4, 2});
  auto sum = [](const Variable& v, bool squares) {
    double total = 0;
    for (float e : v.storage().to_vector<float>()) total += squares ? double(e) * e : std::abs(double(e));
    return total;
  };
  const std::vector<Tensor> penalties = lstm.regularization_losses();
  ASSERT_EQ(penalties.size(), 3u);
  EXPECT_NEAR(penalties[0].to_vector<double>()[0], 0.5 * sum(lstm.kernel(), true), 1e-5);
  EXPECT_NEAR(penalties[1].to_vector<double>()[0], 0.25 * sum(lstm.recurrent_kernel(), false), 1e-5);
  EXPECT_NEAR(penalties[2].to_vector<double>()[0], 0.125 * sum(lstm.bias(), true), 1e-5);  // the forget block's ones

  const Tensor x(random_f64({2, 4, 2}, 7).astype(DType::kF32));
  const std::vector<Tensor> out = lstm.call_with_state(x);
  ASSERT_EQ(out.size(), 3u);  // output, h, c
  ASSERT_EQ(lstm.activity_losses().size(), 3u);
  for (size_t k = 0; k < out.size(); ++k) {
    double squares = 0;
    for (float e : out[k].to_vector<float>()) squares += double(e) * e;
    EXPECT_NEAR(lstm.activity_losses()[k].to_vector<double>()[0], 0.01 * squares / 2, 1e-7) << "output " << k;
  }

  // The kernel starts with negative entries (glorot_uniform); NonNeg zeroes them.
  auto least = [](const Variable& v) { return std::ranges::min(v.storage().to_vector<float>()); };
  ASSERT_LT(least(lstm.kernel()), 0.0f);
  lstm.apply_constraints();
  EXPECT_EQ(least(lstm.kernel()), 0.0f);
  EXPECT_LT(least(lstm.recurrent_kernel()), 0.0f);  // unconstrained

  // Configs round-trip them, and Keras 3's serialized form loads.
  const std::string config = lstm.get_config();
  for (const char* key : {"\"kernel_regularizer\":{", "\"recurrent_regularizer\":{", "\"bias_regularizer\":{",
                          "\"activity_regularizer\":{", "\"kernel_constraint\":{", "\"recurrent_constraint\":null"})
    EXPECT_NE(config.find(key), std::string::npos) << key << " not in " << config;
  EXPECT_EQ(LSTM::from_config(config).get_config(), config);
  GRU keras3 = GRU::from_config(R"({"name": "g", "units": 2, "recurrent_regularizer": {"module": "keras.regularizers",
      "class_name": "L2", "config": {"l2": 0.02}, "registered_name": null}})");
  keras3.build(Dims{3, 2});
  ASSERT_EQ(keras3.regularization_losses().size(), 1u);
  EXPECT_NEAR(keras3.regularization_losses()[0].to_vector<double>()[0], 0.02 * sum(keras3.recurrent_kernel(), true), 1e-6);
}

TEST(WrappersTest, BidirectionalNamesWeightsAsKerasAndDifferentiates) {
  Bidirectional bi(LSTM(2, {.return_sequences = true}), {.merge_mode = "concat"});
  bi.build(Dims{4, 3});
  ASSERT_EQ(bi.weights().size(), 6u);
  EXPECT_EQ(bi.weights()[0].name(), "bidirectional/forward_lstm/lstm_cell/kernel");
  EXPECT_EQ(bi.weights()[5].name(), "bidirectional/backward_lstm/lstm_cell/bias");
  EXPECT_EQ(bi.compute_output_shape({4, 3}), (Dims{4, 4}));
  EXPECT_TRUE(bi.backward_layer().options().go_backwards);
  const std::string config = bi.get_config();
  EXPECT_NE(config.find("\"layer\":{\"class_name\":\"LSTM\""), std::string::npos) << config;
  EXPECT_EQ(Bidirectional::from_config(config).get_config(), config);
  KILN_EXPECT_ERROR(Bidirectional(GRU(2), {.merge_mode = "max"}), ValueError, "merge_mode 'max' is not built");

  const mixed_precision::Policy f64("float64");
  for (const char* mode : {"concat", "ave"}) {
    Bidirectional b(GRU(2, {.return_sequences = true, .dtype = f64}), {.merge_mode = mode, .dtype = f64});
    EXPECT_TRUE(check_rnn_gradients(b, random_f64({3, 4, 2}, 9), step_mask())) << mode;
  }
  Bidirectional last(SimpleRNN(2, {.dtype = f64}), {.merge_mode = "mul", .dtype = f64});
  EXPECT_TRUE(check_rnn_gradients(last, random_f64({3, 4, 2}, 10), step_mask()));
}

TEST(WrappersTest, TimeDistributedAppliesTheLayerPerStep) {
  TimeDistributed td(Dense(2, {.activation = "relu"}));
  const Tensor x = Tensor::from_vector<float>({2, 3, 4}, std::vector<float>(24, 0.5f));
  EXPECT_EQ(td(x).dims(), (Dims{2, 3, 2}));
  ASSERT_EQ(td.weights().size(), 2u);
  EXPECT_EQ(td.weights()[0].name(), "time_distributed/kernel");
  EXPECT_EQ(td.compute_output_shape({3, 4}), (Dims{3, 2}));
  const std::string config = td.get_config();
  EXPECT_NE(config.find("\"class_name\":\"Dense\""), std::string::npos) << config;
  EXPECT_EQ(TimeDistributed::from_config(config).get_config(), config);
  TimeDistributed f64(Dense(3, {.activation = "tanh", .dtype = mixed_precision::Policy("float64")}),
                      {.dtype = mixed_precision::Policy("float64")});
  EXPECT_TRUE(check_rnn_gradients(f64, random_f64({2, 3, 4}, 12)));
}

TEST(MaskingTest, MasksAllEqualStepsAndDenseAfterAnRnnConsumesNoMask) {
  Masking m({.mask_value = 2.0});  // the (0, 0) step is kept: not every feature is 2
  const Tensor x = Tensor::from_vector<float>({1, 3, 2}, {2, 2, 1, 2, 0, 0});
  EXPECT_EQ(m(x).to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 0, 0}));
  EXPECT_EQ(cast(m.compute_mask(x, Tensor()), DType::kF32).to_vector<float>(), (std::vector<float>{0, 1, 1}));
  Embedding emb(4, 2, {.mask_zero = true});
  EXPECT_EQ(cast(emb.compute_mask(Tensor::from_vector<int32_t>({1, 3}, {3, 0, 1}), Tensor()), DType::kF32)
                .to_vector<float>(),
            (std::vector<float>{1, 0, 1}));
  // A masked sequence into Flatten fails as Keras's "does not support masking" does.
  Sequential bad({Masking(), Flatten()});
  KILN_EXPECT_ERROR(bad(x), ValueError, "does not support masking");
  // Dense keeps the mask per step; the LSTM consumes it: the padded last step changes nothing.
  Sequential model({Masking(), Dense(3), LSTM(2)});
  const Tensor padded = Tensor::from_vector<float>({1, 3, 2}, {1, 2, -1, 0.5, 0, 0});
  const Tensor cut = Tensor::from_vector<float>({1, 2, 2}, {1, 2, -1, 0.5});
  const std::vector<float> a = model(padded).to_vector<float>(), b = model(cut).to_vector<float>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6);
}

TEST(MaskingTest, TheLossAndMetricsOfAMaskedOutputCountTheKeptStepsOnly) {
  // Embedding(mask_zero) -> LSTM(return_sequences) -> Dense: the output carries the mask, and
  // as in Keras the loss is the crossentropy's mean over the 5 kept steps and accuracy is
  // over those steps; both computed here by hand from predict's logits.
  Sequential model({Embedding(6, 3, {.mask_zero = true}), LSTM(4, {.return_sequences = true}), Dense(5)});
  model.compile({.optimizer = Adam({.learning_rate = 0.1}), .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  const HostTensor x = HostTensor::from_vector<int32_t>({2, 4}, {1, 2, 3, 0, 4, 5, 0, 0});
  const HostTensor y = HostTensor::from_vector<int32_t>({2, 4}, {1, 2, 3, 4, 0, 1, 2, 3});
  auto by_hand = [&] {
    const std::vector<float> logits = model.predict(x).to_vector<float>();
    const std::vector<int32_t> ids = x.to_vector<int32_t>(), labels = y.to_vector<int32_t>();
    double loss = 0, right = 0, kept = 0;
    for (size_t s = 0; s < ids.size(); ++s) {
      if (ids[s] == 0) continue;
      const float* l = logits.data() + s * 5;
      double lse = 0;
      for (int c = 0; c < 5; ++c) lse += std::exp(static_cast<double>(l[c]));
      loss += std::log(lse) - l[labels[s]];
      right += static_cast<double>(std::max_element(l, l + 5) - l == labels[s]);
      kept += 1;
    }
    return std::pair<double, double>{loss / kept, right / kept};
  };
  for (int round = 0; round < 2; ++round) {  // before and after training on the masked loss
    const auto [loss, accuracy] = by_hand();
    const Logs logs = model.evaluate(x, y, /*batch_size=*/2, {.verbose = 0});
    EXPECT_NEAR(logs.at("loss"), loss, 1e-5) << "round " << round;
    EXPECT_NEAR(logs.at("accuracy"), accuracy, 1e-6) << "round " << round;
    if (round == 0) model.fit(x, y, {.batch_size = 2, .epochs = 40, .verbose = 0});
  }
  // Training on the masked steps learns them (the padded steps' labels are unlearnable noise).
  EXPECT_GT(by_hand().second, 0.99);
}

}  // namespace
}  // namespace kiln::keras
