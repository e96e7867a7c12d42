// Activations: each named function against its formula evaluated in double, its gradient
// against f64 central differences, Keras's default slopes, and activations given as C++
// callables (they run, and saving their layer is an error naming it).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "kiln/keras/activations.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/finite_difference.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

struct ActivationCase {
  const char* name;
  std::function<double(double)> formula;
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

const ActivationCase kCases[] = {
    {"relu", [](double x) { return std::max(x, 0.0); }},
    {"sigmoid", sigmoid},
    {"tanh", [](double x) { return std::tanh(x); }},
    {"gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
    {"elu", [](double x) { return x > 0 ? x : std::exp(x) - 1; }},
    {"selu", [](double x) { return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * (std::exp(x) - 1)); }},
    {"softplus", [](double x) { return std::log1p(std::exp(x)); }},
    {"softsign", [](double x) { return x / (1 + std::abs(x)); }},
    {"swish", [](double x) { return x * sigmoid(x); }},
    {"silu", [](double x) { return x * sigmoid(x); }},
    {"exponential", [](double x) { return std::exp(x); }},
    {"hard_sigmoid", [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }},
    {"leaky_relu", [](double x) { return x >= 0 ? x : 0.2 * x; }},  // Keras 3's function default
    {"relu6", [](double x) { return std::clamp(x, 0.0, 6.0); }},
    {"linear", [](double x) { return x; }},
};

// Away from every kink (0, +-2.5 for hard_sigmoid, 6 for relu6), so differences are smooth.
const std::vector<double> kXs = {-3.1, -2.2, -1.3, -0.4, 0.3, 1.1, 2.7, 6.8};

TEST(ActivationsTest, NamedActivationsMatchTheirFormulas) {
  for (const ActivationCase& c : kCases) {
    const std::vector<double> got =
        activations::get(c.name)(Tensor(HostTensor::from_vector<double>({8}, kXs).astype(DType::kF32)))
            .to_vector<double>();
    for (size_t i = 0; i < kXs.size(); ++i)
      EXPECT_NEAR(got[i], c.formula(kXs[i]), 2e-6 * std::max(1.0, std::abs(c.formula(kXs[i])))) << c.name << " x=" << kXs[i];
  }
}

TEST(ActivationsTest, GradientsMatchF64FiniteDifferences) {
  for (const ActivationCase& c : kCases) {
    auto f = [&](const std::vector<Tensor>& in) { return activations::get(c.name)(in[0]); };
    EXPECT_TRUE(kiln::testing::check_gradients(f, {HostTensor::from_vector<double>({8}, kXs)}, {.rtol = 1e-6, .atol = 1e-8}))
        << c.name;
  }
  auto approximate_gelu = [](const std::vector<Tensor>& in) { return activations::gelu(in[0], /*approximate=*/true); };
  EXPECT_TRUE(kiln::testing::check_gradients(approximate_gelu, {HostTensor::from_vector<double>({8}, kXs)},
                                             {.rtol = 1e-6, .atol = 1e-8}));
}

TEST(ActivationsTest, ApproximateGeluIsTheTanhFormAndLeakySlopesAreKerassDefaults) {
  const std::vector<float> got =
      activations::gelu(Tensor::from_vector<float>({3}, {-1, 0.5, 2}), /*approximate=*/true).to_vector<float>();
  // numpy: 0.5*x*(1+np.tanh(np.sqrt(2/np.pi)*(x+0.044715*x**3)))
  const double want[] = {-0.15880800939172324, 0.34571400982514394, 1.9545976940871754};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  EXPECT_EQ(activations::kLeakyReluFunctionSlope, 0.2);
  EXPECT_EQ(activations::kLeakyReluLayerSlope, 0.3);
  EXPECT_EQ(activations::leaky_relu(Tensor::from_vector<float>({2}, {-10, 4}), 0.3).to_vector<float>(),
            (std::vector<float>{-3, 4}));
  KILN_EXPECT_ERROR(activations::get("gelu_tanh"), ConfigError, "leaky_relu, relu6 or linear");
}

TEST(ActivationsTest, CallableActivationsRunButTheirLayersCannotBeSaved) {
  auto square = [](const Tensor& x) { return x * x; };
  Dense dense(2, {.activation = square, .kernel_initializer = "ones", .bias_initializer = "ones", .name = "sq"});
  EXPECT_EQ(dense(Tensor::from_vector<float>({1, 3}, {1, 2, -1})).to_vector<float>(), (std::vector<float>{9, 9}));
  KILN_EXPECT_ERROR(dense.get_config(), ConfigError, "[sq] its activation is a C++ callable");
  Activation act(square, {.name = "act"});
  EXPECT_EQ(act(Tensor::from_vector<float>({1, 2}, {3, -2})).to_vector<float>(), (std::vector<float>{9, 4}));

  Sequential model({Dense(3, {.input_shape = {2}}),
                    Dense(1, {.activation = [](const Tensor& x) { return activations::gelu(x, true); }, .name = "head"})});
  EXPECT_EQ(model.predict(HostTensor::from_vector<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})).dims(), (Dims{4, 1}));
  kiln::testing::TempDir dir;
  KILN_EXPECT_ERROR(model.save(dir.file("m.h5")), ConfigError, "[head] its activation is a C++ callable");
}

}  // namespace
}  // namespace kiln::keras
