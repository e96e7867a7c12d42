#include "tests/keras/layers/layer_harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "kiln/data/dataset.h"
#include "kiln/io/hdf5_file.h"
#include "kiln/keras/models/functional.h"
#include "kiln/keras/saving/saving.h"
#include "tests/testing/finite_difference.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras::testing {
namespace {

using mixed_precision::Policy;

Dims per_example(const Dims& d) { return Dims(d.begin() + 1, d.end()); }

std::vector<Dims> per_example_shapes(const LayerCase& c) {
  std::vector<Dims> shapes;
  for (const Dims& d : c.inputs) shapes.push_back(per_example(d));
  return shapes;
}

HostTensor random_ints(const Dims& dims, uint32_t seed, int64_t high) {
  HostTensor t(Shape(DType::kI32, dims));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(high - 1));
  for (int32_t& v : t.data<int32_t>()) v = pick(rng);
  return t;
}

/// The case's inputs; float ones in `float_dtype`. The same seed gives the same values.
std::vector<HostTensor> make_inputs(const LayerCase& c, DType float_dtype) {
  std::vector<HostTensor> xs;
  uint32_t seed = 11;
  for (const Dims& d : c.inputs) {
    if (!is_floating(c.input_dtype))
      xs.push_back(random_ints(d, seed++, c.int_high));
    else
      xs.push_back(kiln::testing::random_f64(d, seed++, c.float_low, c.float_high).astype(float_dtype));
  }
  return xs;
}

/// The case's layer made while `policy` is the global policy, as a user's layers are made
/// after set_global_policy (a wrapper's inner layer takes it too).
LayerHandle make_under(const LayerCase& c, const char* policy) {
  struct Restore {
    Policy before = mixed_precision::global_policy();
    ~Restore() { mixed_precision::set_global_policy(before); }
  } restore;
  mixed_precision::set_global_policy(Policy(policy));
  return c.make();
}

LayerHandle make_built(const LayerCase& c, const char* policy) {
  LayerHandle layer = make_under(c, policy);
  if (c.inputs.size() == 1)
    layer->build(per_example(c.inputs[0]));
  else
    layer->build_multi(per_example_shapes(c));
  return layer;
}

Tensor call(Layer& layer, const std::vector<Tensor>& xs, bool training) {
  return xs.size() == 1 ? layer(xs[0], training) : layer(xs, training);
}

HostTensor call(Layer& layer, const std::vector<HostTensor>& xs, bool training) {
  std::vector<Tensor> ts(xs.begin(), xs.end());
  return call(layer, ts, training).value();
}

bool same_bits(const HostTensor& a, const HostTensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.byte_size())) == 0;
}

void copy_weights(const Layer& from, Layer& to) {
  ASSERT_EQ(from.weights().size(), to.weights().size());
  for (size_t i = 0; i < from.weights().size(); ++i) to.weights()[i].assign(Tensor(from.weights()[i].storage().clone()));
}

/// get_config -> layer_from_config -> get_config is a fixed point, before the build (Keras's
/// layer_test) and after it (a built layer's config records what it was built for).
void check_config(const LayerCase& c) {
  SCOPED_TRACE("config");
  LayerHandle layer = make_under(c, "float32");
  const std::vector<std::string> known = registered_layer_classes();
  EXPECT_NE(std::find(known.begin(), known.end(), layer->class_name()), known.end()) << "not in layer_from_config";
  for (LayerHandle l : {layer, make_built(c, "float32")}) {
    const std::string config = l->get_config();
    EXPECT_EQ(layer_from_config(l->class_name(), config)->get_config(), config) << (l->built() ? "built" : "unbuilt");
  }
}

void check_output_shape(const LayerCase& c) {
  SCOPED_TRACE("output shape");
  LayerHandle layer = make_built(c, "float32");
  const HostTensor y = call(*layer, make_inputs(c, DType::kF32), false);
  const Dims want = c.inputs.size() == 1 ? layer->compute_output_shape(per_example(c.inputs[0]))
                                         : layer->compute_output_shape_multi(per_example_shapes(c));
  EXPECT_EQ(per_example(y.dims()), want);
  EXPECT_EQ(y.dims()[0], c.inputs[0][0]) << "batch dimension";
}

void check_training_mode(const LayerCase& c) {
  SCOPED_TRACE("training mode");
  LayerHandle layer = make_built(c, "float32");
  const std::vector<HostTensor> xs = make_inputs(c, DType::kF32);
  const HostTensor inference = call(*layer, xs, false);
  EXPECT_TRUE(same_bits(call(*layer, xs, false), inference)) << "inference mode is not deterministic";
  if (c.identity_at_inference) {
    EXPECT_TRUE(same_bits(inference, xs[0])) << "inference mode is not the identity";
  }
  const HostTensor training = call(*layer, xs, true);
  if (c.training == TrainingMode::kSame) {
    EXPECT_TRUE(same_bits(training, inference)) << "training mode differs from inference mode";
  } else {
    EXPECT_FALSE(same_bits(training, inference)) << "training mode gives the inference output";
  }
}

void check_mixed_precision(const LayerCase& c) {
  SCOPED_TRACE("mixed_bfloat16");
  LayerHandle full = make_built(c, "float32"), mixed = make_built(c, "mixed_bfloat16");
  for (const Variable& w : mixed->weights()) EXPECT_EQ(w.shape().dtype(), DType::kF32) << "variables stay f32";
  copy_weights(*full, *mixed);
  const std::vector<HostTensor> xs = make_inputs(c, DType::kF32);
  const HostTensor want = call(*full, xs, false), got = call(*mixed, xs, false);
  if (!is_floating(want.dtype())) {
    EXPECT_TRUE(same_bits(got, want)) << "an integer output must not depend on the policy";
    return;
  }
  EXPECT_EQ(got.dtype(), c.mixed_output);
  ASSERT_EQ(got.dims(), want.dims());
  const std::vector<double> g = got.astype(DType::kF64).to_vector<double>(), w = want.astype(DType::kF64).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], c.mixed_tolerance * (1 + std::abs(w[i]))) << "element " << i;
}

void check_gradients(const LayerCase& c) {
  SCOPED_TRACE("gradients");
  LayerHandle layer = make_built(c, "float64");
  const std::vector<HostTensor> xs = make_inputs(c, DType::kF64);
  const std::vector<Variable> weights = layer->trainable_weights();
  // Float inputs and the trainable weights are perturbed; integer inputs are constants.
  const bool float_inputs = !!is_floating(c.input_dtype);
  std::vector<HostTensor> perturbed;
  if (float_inputs) perturbed = xs;
  for (const Variable& w : weights) perturbed.push_back(w.storage().clone());
  ASSERT_FALSE(perturbed.empty()) << "nothing to differentiate: say why in no_gradients_because";
  const size_t n_inputs = float_inputs ? xs.size() : 0;
  auto f = [&](const std::vector<Tensor>& v) {
    for (size_t i = 0; i < weights.size(); ++i) weights[i].assign(v[n_inputs + i]);
    std::vector<Tensor> inputs = float_inputs ? std::vector<Tensor>(v.begin(), v.begin() + n_inputs)
                                              : std::vector<Tensor>(xs.begin(), xs.end());
    return call(*layer, inputs, false);
  };
  EXPECT_TRUE(kiln::testing::check_gradients(f, perturbed, {.eps = 1e-6, .rtol = 1e-6, .atol = 1e-8}));
}

void check_saving(const LayerCase& c) {
  SCOPED_TRACE("save and load");
  std::vector<KerasTensor> ins;
  for (const Dims& d : c.inputs) ins.push_back(Input(per_example(d), {.dtype = !is_floating(c.input_dtype) ? DType::kI32 : DType::kF32}));
  LayerHandle layer = make_under(c, "float32");
  const KerasTensor out = ins.size() == 1 ? (*layer)(ins[0]) : (*layer)(ins);
  Functional model(ins, out);
  const std::vector<HostTensor> xs = make_inputs(c, DType::kF32);
  auto predict = [&](Model& m) {
    if (xs.size() == 1) return m.predict(xs[0]);
    return m.predict(data::Dataset::from_tensor_slices(xs).batch(xs[0].dims()[0]));
  };
  const HostTensor want = predict(model);
  kiln::testing::TempDir dir;
  for (const char* file : {"m.h5", "m.keras"}) {
    SCOPED_TRACE(file);
    model.save(dir.file(file));
    std::unique_ptr<Model> loaded = load_model(dir.file(file));
    EXPECT_EQ(loaded->to_json(), model.to_json());
    EXPECT_TRUE(same_bits(predict(*loaded), want)) << "predictions change across save and load";
  }
  if (!c.h5_weight_names.empty()) {
    io::Hdf5File f = io::Hdf5File::open(dir.file("m.h5"));
    EXPECT_EQ(f.root().open_group("model_weights").open_group(layer->name()).read_keras_string_list("weight_names"),
              c.h5_weight_names);
  }
}

}  // namespace

void layer_test(const LayerCase& c) {
  ASSERT_FALSE(c.inputs.empty());
  SCOPED_TRACE(c.make()->class_name());
  check_config(c);
  if (!c.host_only_because.empty()) return;
  check_output_shape(c);
  check_training_mode(c);
  check_mixed_precision(c);
  if (c.no_gradients_because.empty()) check_gradients(c);
  if (c.no_saving_because.empty()) check_saving(c);
}

}  // namespace kiln::keras::testing
