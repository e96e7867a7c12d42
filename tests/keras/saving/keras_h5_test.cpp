// The Keras 2 HDF5 layout against Python's h5py: a file Kiln writes walked group by group
// with h5py (what tf.keras's hdf5_format.py reads), and a file written by h5py exactly as
// tf.keras 2.x writes one, loaded by Kiln. Skipped when /usr/bin/python3 lacks h5py (CI
// installs python3-h5py).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "kiln/io/hdf5_file.h"
#include "kiln/keras/saving/saving.h"
#include "tests/io/python_check.h"
#include "tests/keras/saving/saving_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

using namespace testing;

void write_raw(const std::string& path, const HostTensor& t) {
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(t.raw_data()), t.byte_size());
}

HostTensor read_raw_f32(const std::string& path, const Dims& dims) {
  HostTensor t(Shape(DType::kF32, dims));
  std::ifstream(path, std::ios::binary).read(static_cast<char*>(t.raw_data()), t.byte_size());
  return t;
}

class KerasH5PythonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!io::testing::python_has("h5py, numpy")) GTEST_SKIP() << "/usr/bin/python3 lacks h5py (apt install python3-h5py)";
  }
  kiln::testing::TempDir dir_;
};

TEST_F(KerasH5PythonTest, H5pyFindsTheKerasLayoutInAFileKilnWrites) {
  auto model = std::make_unique<Sequential>(std::vector<LayerHandle>{
      Flatten({.input_shape = {4, 5}}), Dense(8, {.activation = "relu"}), Dense(3)});
  compile_model(*model, "adam");
  train(*model, {4, 5}, 3);
  model->save(dir_.file("m.h5"));
  auto [x, y] = sample_data({4, 5}, 6, /*phase=*/1.0);
  write_raw(dir_.file("x.bin"), x);
  write_raw(dir_.file("y.bin"), model->predict(x));

  // What tf.keras 2.x's load_model reads, checked the way its hdf5_format.py reads it.
  const std::string script = R"PY(
import sys, json, h5py, numpy as np
d = sys.argv[1]
text = lambda v: v.decode('utf8') if isinstance(v, (bytes, np.bytes_)) else v
def names(group, attr):
    return [text(n) for n in group.attrs[attr]]
with h5py.File(d + '/m.h5', 'r') as f:
    # root: str (variable-length UTF-8) for the versions, bytes for the JSON configs
    assert f.attrs['keras_version'] == '2.15.0', f.attrs['keras_version']
    assert f.attrs['backend'] == 'tensorflow'
    def kind(obj, name):  # (variable-length?, character set) of a text attribute
        t = obj.attrs.get_id(name).get_type()
        return (t.is_variable_str(), 'utf8' if t.get_cset() == h5py.h5t.CSET_UTF8 else 'ascii')
    assert kind(f, 'keras_version') == (True, 'utf8') and kind(f, 'backend') == (True, 'utf8')
    assert kind(f, 'model_config') == (True, 'ascii') and kind(f, 'training_config') == (True, 'ascii')
    cfg = json.loads(text(f.attrs['model_config']))
    assert cfg['class_name'] == 'Sequential' and cfg['config']['name'] == 'sequential'
    layers = cfg['config']['layers']
    assert [l['class_name'] for l in layers] == ['Flatten', 'Dense', 'Dense'], layers
    assert layers[0]['config']['batch_input_shape'] == [None, 4, 5]
    assert layers[1]['config']['activation'] == 'relu' and layers[1]['config']['units'] == 8
    assert layers[1]['config']['kernel_initializer']['class_name'] == 'GlorotUniform'
    tc = json.loads(text(f.attrs['training_config']))
    assert tc['loss']['class_name'] == 'SparseCategoricalCrossentropy' and tc['loss']['config']['from_logits'] is True
    assert tc['metrics'] == ['accuracy'] and tc['weighted_metrics'] is None and tc['loss_weights'] is None
    opt = tc['optimizer_config']
    assert opt['class_name'] == 'Adam' and 'is_legacy_optimizer' not in opt['config']
    assert set(opt['config']) == {'name', 'learning_rate', 'decay', 'beta_1', 'beta_2', 'epsilon', 'amsgrad'}, opt
    assert abs(opt['config']['learning_rate'] - 0.001) < 1e-9
    # model_weights: layer_names in model order as a fixed-length 'S' array
    g = f['model_weights']
    assert g.attrs['layer_names'].dtype.kind == 'S'
    assert names(g, 'layer_names') == ['flatten', 'dense', 'dense_1']
    assert text(g.attrs['backend']) == 'tensorflow' and text(g.attrs['keras_version']) == '2.15.0'
    assert kind(g, 'backend') == (True, 'ascii') and kind(g, 'keras_version') == (True, 'ascii')
    assert sorted(g.keys()) == ['dense', 'dense_1', 'flatten']
    assert len(g['flatten'].attrs['weight_names']) == 0 and len(g['flatten'].keys()) == 0
    for layer, shapes in (('dense', [(20, 8), (8,)]), ('dense_1', [(8, 3), (3,)])):
        wn = names(g[layer], 'weight_names')
        assert wn == [layer + '/kernel:0', layer + '/bias:0'], wn
        for n, s in zip(wn, shapes):
            ds = g[layer][n]
            assert ds.name == '/model_weights/%s/%s' % (layer, n), ds.name
            assert ds.shape == s and ds.dtype == np.float32, (n, ds.shape, ds.dtype)
        assert list(g[layer].keys()) == [layer]  # only the '<layer>/' intermediate group
    # the predictions, recomputed from the stored weights
    w = lambda p: g[p][()]
    x = np.fromfile(d + '/x.bin', dtype='<f4').reshape(6, 20)
    h = np.maximum(x @ w('dense/dense/kernel:0') + w('dense/dense/bias:0'), 0)
    y = h @ w('dense_1/dense_1/kernel:0') + w('dense_1/dense_1/bias:0')
    kiln_y = np.fromfile(d + '/y.bin', dtype='<f4').reshape(6, 3)
    assert np.allclose(y, kiln_y, atol=1e-5), (y, kiln_y)
    # optimizer_weights: iterations first, then every m, then every v (optimizer_v2's order)
    o = f['optimizer_weights']
    on = names(o, 'weight_names')
    expected = ['Adam/iter:0'] + ['Adam/%s/%s:0' % (v, s) for s in ('m', 'v')
                                  for v in ('dense/kernel', 'dense/bias', 'dense_1/kernel', 'dense_1/bias')]
    assert on == expected, on
    it = o['Adam/iter:0']
    assert it.shape == () and it.dtype == np.int64 and it[()] == 3, (it.shape, it.dtype, it[()])
    assert o['Adam/dense/kernel/v:0'].shape == (20, 8)
    assert (o['Adam/dense/kernel/v:0'][()] >= 0).all() and np.abs(o['Adam/dense/kernel/m:0'][()]).sum() > 0
print('h5py found the Keras 2 layout')
)PY";
  EXPECT_EQ(io::testing::run_python(dir_.file("check.py"), script, dir_.path().string()), 0);
}

TEST_F(KerasH5PythonTest, KilnLoadsAFileWrittenAsTfKeras2Writes) {
  // TensorFlow is not installed here, so this script reproduces what tf.keras 2.15's
  // model.save('m.h5') writes for Sequential([Flatten(input_shape=(4, 5)), Dense(8, 'relu'),
  // Dense(3)]) compiled with Adam, SparseCategoricalCrossentropy(from_logits=True) and
  // ['accuracy'] after 7 steps: its hdf5_format.py attribute encodings and groups, the
  // InputLayer entry and the module/registered_name keys of its model_config, nested
  // MeanMetricWrapper metrics, and optimizer_v2 weights. NumPy computes the predictions.
  const std::string script = std::string(io::testing::kKerasSaveAttributesPy) + R"PY(
import sys, json, h5py, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
w = {'dense/kernel:0': rng.standard_normal((20, 8)).astype('f4'), 'dense/bias:0': rng.standard_normal(8).astype('f4'),
     'dense_1/kernel:0': rng.standard_normal((8, 3)).astype('f4'), 'dense_1/bias:0': rng.standard_normal(3).astype('f4')}
init = lambda cls: {'module': 'keras.initializers', 'class_name': cls, 'config': {'seed': None} if cls != 'Zeros' else {},
                    'registered_name': None}
def dense(name, units, act):
    return {'module': 'keras.layers', 'class_name': 'Dense', 'config': {
        'name': name, 'trainable': True, 'dtype': 'float32', 'units': units, 'activation': act, 'use_bias': True,
        'kernel_initializer': init('GlorotUniform'), 'bias_initializer': init('Zeros'), 'kernel_regularizer': None,
        'bias_regularizer': None, 'activity_regularizer': None, 'kernel_constraint': None, 'bias_constraint': None},
        'registered_name': None, 'build_config': {'input_shape': [None, 20 if name == 'dense' else 8]}}
model_config = {'class_name': 'Sequential', 'config': {'name': 'sequential', 'layers': [
    {'module': 'keras.layers', 'class_name': 'InputLayer', 'config': {
        'batch_input_shape': [None, 4, 5], 'dtype': 'float32', 'sparse': False, 'ragged': False,
        'name': 'flatten_input'}, 'registered_name': None},
    {'module': 'keras.layers', 'class_name': 'Flatten', 'config': {
        'name': 'flatten', 'trainable': True, 'dtype': 'float32', 'batch_input_shape': [None, 4, 5],
        'data_format': 'channels_last'}, 'registered_name': None, 'build_config': {'input_shape': [None, 4, 5]}},
    dense('dense', 8, 'relu'), dense('dense_1', 3, 'linear')]},
    'keras_version': '2.15.0', 'backend': 'tensorflow'}
training_config = {
    'loss': {'module': 'keras.losses', 'class_name': 'SparseCategoricalCrossentropy', 'config': {
        'reduction': 'auto', 'name': 'sparse_categorical_crossentropy', 'from_logits': True, 'ignore_class': None},
        'registered_name': None},
    'metrics': [[{'module': 'keras.metrics', 'class_name': 'MeanMetricWrapper', 'config': {
        'name': 'accuracy', 'dtype': 'float32', 'fn': 'sparse_categorical_accuracy'}, 'registered_name': None}]],
    'weighted_metrics': None, 'loss_weights': None,
    'optimizer_config': {'class_name': 'Adam', 'config': {
        'name': 'Adam', 'learning_rate': 0.0010000000474974513, 'decay': 0.0, 'beta_1': 0.8999999761581421,
        'beta_2': 0.9990000128746033, 'epsilon': 1e-07, 'amsgrad': False}}}
with h5py.File(d + '/tf.h5', 'w') as f:
    f.attrs['backend'] = 'tensorflow'           # str
    f.attrs['keras_version'] = '2.15.0'         # str
    f.attrs['model_config'] = json.dumps(model_config).encode('utf8')       # bytes
    f.attrs['training_config'] = json.dumps(training_config).encode('utf8')
    g = f.create_group('model_weights')
    layers = {'flatten': [], 'dense': ['dense/kernel:0', 'dense/bias:0'], 'dense_1': ['dense_1/kernel:0', 'dense_1/bias:0']}
    save_attributes(g, 'layer_names', [n.encode('utf8') for n in ['flatten', 'dense', 'dense_1']])
    g.attrs['backend'] = 'tensorflow'.encode('utf8')
    g.attrs['keras_version'] = '2.15.0'.encode('utf8')
    for name in sorted(layers):
        lg = g.create_group(name)
        save_attributes(lg, 'weight_names', [n.encode('utf8') for n in layers[name]])
        for n in layers[name]:
            ds = lg.create_dataset(n, w[n].shape, dtype=w[n].dtype)
            ds[()] = w[n]
    o = f.create_group('optimizer_weights')
    vs = ['dense/kernel', 'dense/bias', 'dense_1/kernel', 'dense_1/bias']
    on = ['Adam/iter:0'] + ['Adam/%s/%s:0' % (v, s) for s in ('m', 'v') for v in vs]
    save_attributes(o, 'weight_names', [n.encode('utf8') for n in on])
    o.create_dataset('Adam/iter:0', data=np.int64(7))
    for k, n in enumerate(on[1:]):
        var = n[len('Adam/'):-len('/m:0')] + ':0'
        o.create_dataset(n, data=np.full(w[var].shape, 0.01 * (k + 1), dtype='f4'))
x = np.sin(0.37 * np.arange(6 * 20) + 1.0).astype('f4').reshape(6, 4, 5)
x.tofile(d + '/x.bin')
h = np.maximum(x.reshape(6, 20) @ w['dense/kernel:0'] + w['dense/bias:0'], 0)
(h @ w['dense_1/kernel:0'] + w['dense_1/bias:0']).astype('<f4').tofile(d + '/y.bin')
)PY";
  ASSERT_EQ(io::testing::run_python(dir_.file("write.py"), script, dir_.path().string()), 0);

  std::unique_ptr<Model> model = load_model(dir_.file("tf.h5"));
  ASSERT_TRUE(model->is_compiled());
  EXPECT_EQ(model->layers().size(), 3u);
  EXPECT_EQ(model->optimizer()->class_name(), "Adam");
  EXPECT_NEAR(model->optimizer()->learning_rate(), 0.001, 1e-9);
  ASSERT_EQ(model->compile_options().metrics.size(), 1u);
  EXPECT_EQ(model->compile_options().metrics[0]->name(), "accuracy");
  const HostTensor x = read_raw_f32(dir_.file("x.bin"), {6, 4, 5});
  const HostTensor expected = read_raw_f32(dir_.file("y.bin"), {6, 3});
  std::vector<float> got = model->predict(x).to_vector<float>(), want = expected.to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4f) << i;
  // optimizer_v2 order (all m, then all v) mapped onto Kiln's slots.
  EXPECT_EQ(model->optimizer()->iterations().storage().to_vector<int64_t>()[0], 7);
  for (const Variable& v : model->optimizer()->variables()) {
    const std::string& n = v.name();
    const std::vector<std::string> order = {"dense/kernel/m", "dense/bias/m", "dense_1/kernel/m", "dense_1/bias/m",
                                            "dense/kernel/v", "dense/bias/v", "dense_1/kernel/v", "dense_1/bias/v"};
    for (size_t k = 0; k < order.size(); ++k)
      if (n == "Adam/" + order[k]) {
        EXPECT_FLOAT_EQ(v.storage().to_vector<float>()[0], 0.01f * static_cast<float>(k + 1)) << n;
      }
  }
  // And it trains on from there.
  train(*model, {4, 5}, 1);
  EXPECT_EQ(model->optimizer()->iterations().storage().to_vector<int64_t>()[0], 8);
}

// A kernel stored in another dtype than the variable's (another tool's f64, i32 or f16) loads
// converted, with one warning per weight naming it and both dtypes.
TEST_F(KerasH5PythonTest, AWeightStoredInAnotherDtypeWarnsOncePerWeight) {
  auto model = std::make_unique<Sequential>(std::vector<LayerHandle>{
      Flatten({.input_shape = {4, 5}}), Dense(8, {.activation = "relu"}), Dense(3)});
  compile_model(*model, "adam");
  model->save_weights(dir_.file("w.h5"));
  const std::string script = R"PY(
import sys, h5py
with h5py.File(sys.argv[1] + '/w.h5', 'r+') as f:
    for path, dtype in (('dense/dense/kernel:0', 'f8'), ('dense/dense/bias:0', 'i4'), ('dense_1/dense_1/kernel:0', 'f2')):
        v = f[path][()]
        del f[path]
        f.create_dataset(path, data=v.astype(dtype))
)PY";
  ASSERT_EQ(io::testing::run_python(dir_.file("retype.py"), script, dir_.path().string()), 0);
  auto target = std::make_unique<Sequential>(std::vector<LayerHandle>{
      Flatten({.input_shape = {4, 5}}), Dense(8, {.activation = "relu"}), Dense(3)});
  ::testing::internal::CaptureStderr();
  target->load_weights(dir_.file("w.h5"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("dense/dense/kernel:0 is stored as f64; converting it to f32 for dense/kernel"), std::string::npos) << err;
  EXPECT_NE(err.find("dense/dense/bias:0 is stored as i32; converting it to f32 for dense/bias"), std::string::npos) << err;
  EXPECT_NE(err.find("dense_1/dense_1/kernel:0 is stored as f16; converting it to f32"), std::string::npos) << err;
  EXPECT_EQ(err.find("dense_1/dense_1/bias:0"), std::string::npos) << err;  // stored as f32
  size_t warnings = 0;
  for (size_t at = err.find("is stored as"); at != std::string::npos; at = err.find("is stored as", at + 1)) ++warnings;
  EXPECT_EQ(warnings, 3u) << err;
  const std::vector<HostTensor> want = model->get_weights(), got = target->get_weights();
  EXPECT_EQ(got[0].to_vector<float>(), want[0].to_vector<float>());  // f32 -> f64 -> f32 is exact
}

// The optimizer_weights names a file gets for `optimizer` on the SeedMlp model after one step.
std::vector<std::string> optimizer_weight_names(const std::string& path, OptimizerHandle optimizer) {
  auto model = build_model(model_cases()[0]);
  compile_model(*model, std::move(optimizer));
  train(*model, model_cases()[0].input, 1);
  model->save(path);
  io::Hdf5File f = io::Hdf5File::open(path);
  return f.root().open_group("optimizer_weights").read_keras_string_list("weight_names");
}

TEST(KerasH5Test, OptimizerWeightsFollowTfKerasLegacyLayoutsOrItsNewOptimizers) {
  // tf.keras 2.x legacy optimizer_v2: "<opt>/iter", then Adadelta's and Adamax's slots kind by
  // kind under their legacy names, Ftrl's per variable (one _create_slots loop). Nadam and
  // Lion, written as new optimizers: "<opt>/iteration", then creation order; the legacy Nadam
  // as optimizer_v2's.
  kiln::testing::TempDir dir;
  const std::vector<std::string> vars = {"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"};
  auto names = [&](const std::string& opt, const std::string& iter, const std::vector<std::vector<std::string>>& groups) {
    std::vector<std::string> out = {opt + "/" + iter + ":0"};
    for (const std::vector<std::string>& group : groups)
      for (const std::string& s : group) out.push_back(opt + "/" + s + ":0");
    return out;
  };
  // "<variable>/<kind>" for every variable and kind: kind by kind, or variable by variable.
  auto slots = [&](const std::vector<std::string>& kinds, bool kind_by_kind) {
    std::vector<std::vector<std::string>> out(kind_by_kind ? kinds.size() : vars.size());
    for (size_t k = 0; k < kinds.size(); ++k)
      for (size_t v = 0; v < vars.size(); ++v) out[kind_by_kind ? k : v].push_back(vars[v] + "/" + kinds[k]);
    return out;
  };
  auto per_kind = [&](const std::vector<std::string>& kinds) { return slots(kinds, /*kind_by_kind=*/true); };
  auto per_variable = [&](const std::vector<std::string>& kinds) { return slots(kinds, /*kind_by_kind=*/false); };
  EXPECT_EQ(optimizer_weight_names(dir.file("adadelta.h5"), Adadelta()),
            names("Adadelta", "iter", per_kind({"accum_grad", "accum_var"})));
  EXPECT_EQ(optimizer_weight_names(dir.file("adagrad.h5"), Adagrad()), names("Adagrad", "iter", per_kind({"accumulator"})));
  EXPECT_EQ(optimizer_weight_names(dir.file("adamax.h5"), Adamax()), names("Adamax", "iter", per_kind({"m", "v"})));
  EXPECT_EQ(optimizer_weight_names(dir.file("ftrl.h5"), Ftrl()),
            names("Ftrl", "iter", per_variable({"accumulator", "linear"})));
  std::vector<std::vector<std::string>> nadam = per_variable({"m", "v"});
  nadam.push_back({"u_product"});
  EXPECT_EQ(optimizer_weight_names(dir.file("nadam.h5"), Nadam()), names("Nadam", "iteration", nadam));
  // The legacy Nadam as optimizer_v2 writes it: iter, momentum_cache (created first), every m, every v.
  std::vector<std::vector<std::string>> legacy_nadam = {{"momentum_cache"}};
  for (const std::vector<std::string>& group : per_kind({"m", "v"})) legacy_nadam.push_back(group);
  EXPECT_EQ(optimizer_weight_names(dir.file("nadam_legacy.h5"), Nadam({.schedule_decay = 0.004})),
            names("Nadam", "iter", legacy_nadam));
  EXPECT_EQ(optimizer_weight_names(dir.file("lion.h5"), Lion()), names("Lion", "iteration", per_variable({"m"})));
}

TEST(KerasH5Test, UnknownLayerClassIsAnIOErrorNamingTheClassAndFile) {
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  model->save(dir.file("m.h5"));
  {
    io::Hdf5File f = io::Hdf5File::open(dir.file("m.h5"), /*writable=*/true);
    std::string config = f.root().read_string_attribute("model_config");
    config.replace(config.find("\"Dense\""), 7, "\"Conv3D\"");
    f.root().write_string_attribute("model_config", config);
  }
  KILN_EXPECT_ERROR(load_model(dir.file("m.h5")), IOError, "unknown layer class 'Conv3D'");
  KILN_EXPECT_ERROR(load_model(dir.file("m.h5")), IOError, dir.file("m.h5"));
}

// Verify that a trained multi-output model saved as .h5, .keras and a model directory loads
// with bitwise-equal predictions per output, its per-output losses, loss weights and metrics,
// and its optimizer state (the next epoch's logs are the same).
TEST(KerasH5Test, MultiOutputModelRoundTripsInEveryFormat) {
  auto make = [] {
    KerasTensor x = Input({6});
    KerasTensor h = Dense(5, {.activation = "relu", .name = "trunk"})(x);
    auto m = std::make_unique<Functional>(std::vector<KerasTensor>{x},
                                          std::vector<KerasTensor>{Dense(2, {.name = "head_a"})(h), Dense(3, {.name = "head_b"})(h)});
    m->compile({.optimizer = Adam(),
                .loss_by_output = {{"head_a", "mse"}, {"head_b", SparseCategoricalCrossentropy({.from_logits = true})}},
                .loss_weight_by_output = {{"head_a", 0.5}, {"head_b", 2.0}},
                .metrics_by_output = {{"head_a", {"mae"}}, {"head_b", {"accuracy"}}}});
    return m;
  };
  const auto [x, yb] = sample_data({6}, 16);  // yb: labels 0..2
  const HostTensor ya = sample_data({2}, 16, 0.3).first;
  kiln::testing::TempDir dir;
  for (const std::string file : {"m.h5", "m.keras", "m_dir"}) {
    SCOPED_TRACE(file);
    auto model = make();
    model->fit(x, {ya, yb}, {.batch_size = 8, .shuffle = false, .verbose = 0});
    model->save(dir.file(file));
    std::unique_ptr<Model> loaded = load_model(dir.file(file));
    EXPECT_EQ(loaded->output_names(), (std::vector<std::string>{"head_a", "head_b"}));
    const std::vector<HostTensor> p1 = model->predict_outputs(x), p2 = loaded->predict_outputs(x);
    expect_same_tensors(p2, p1, "output");
    EXPECT_EQ(loaded->compile_options().loss_weight_by_output, model->compile_options().loss_weight_by_output);
    const History h1 = model->fit(x, {ya, yb}, {.batch_size = 8, .shuffle = false, .verbose = 0});
    const History h2 = loaded->fit(x, {ya, yb}, {.batch_size = 8, .shuffle = false, .verbose = 0});
    ASSERT_EQ(h2.history.size(), 5u);  // loss, head_a_loss, head_b_loss, head_a_mae, head_b_accuracy
    for (const auto& [key, values] : h1.history) EXPECT_EQ(h2.history.at(key), values) << key;
  }
}

TEST(KerasH5Test, WeightsFileIsNotAModel) {
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  model->save_weights(dir.file("w.h5"));
  KILN_EXPECT_ERROR(load_model(dir.file("w.h5")), IOError, "holds weights only");
  // A whole-model file serves load_weights too (Keras descends into model_weights).
  model->save(dir.file("m.h5"));
  auto other = build_model(model_cases()[0]);
  other->load_weights(dir.file("m.h5"));
  expect_same_tensors(other->get_weights(), model->get_weights(), "weight");
}

}  // namespace
}  // namespace kiln::keras
