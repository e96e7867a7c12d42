// Proves the HDF5 wrapper interoperates with h5py (what Keras 2 uses): files Kiln writes in
// the Keras layout read correctly in h5py, and Keras-style files h5py writes read in Kiln.
#include <gtest/gtest.h>

#include "kiln/io/hdf5_file.h"
#include "tests/io/python_check.h"
#include "tests/testing/temp_dir.h"

namespace kiln::io {
namespace {

class Hdf5InteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::python_has("h5py, numpy")) GTEST_SKIP() << "/usr/bin/python3 lacks h5py";
  }
  kiln::testing::TempDir dir_;
};

TEST_F(Hdf5InteropTest, H5pyReadsAKerasLayoutWrittenByKiln) {
  std::string path = dir_.file("kiln.h5");
  {
    Hdf5File f = Hdf5File::create(path);
    Hdf5Group& root = f.root();
    root.write_string_attribute("keras_version", "2.4.0");
    root.write_string_attribute("backend", "tensorflow", StringKind::kVariableUtf8);
    root.write_string_attribute("model_config", R"({"class_name": "Sequential"})",
                                StringKind::kVariableAscii);
    Hdf5Group weights = root.create_group("model_weights");
    weights.write_keras_string_list("layer_names", {"flatten", "dense"});
    weights.write_string_attribute("backend", "tensorflow", StringKind::kVariableAscii);
    Hdf5Group flatten = weights.create_group("flatten");
    flatten.write_keras_string_list("weight_names", {});
    Hdf5Group dense = weights.create_group("dense");
    dense.write_keras_string_list("weight_names", {"dense/kernel:0", "dense/bias:0"});
    dense.write_dataset("dense/kernel:0",
                        HostTensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
    dense.write_dataset("dense/bias:0", HostTensor::from_vector<float>({3}, {0.5f, 0, -1}));
    Hdf5Group opt = root.create_group("optimizer_weights");
    opt.write_keras_string_list("weight_names", {"Adam/iter:0"});
    opt.write_dataset("Adam/iter:0", HostTensor::scalar<int64_t>(42000));
    root.write_dataset(
        "extra/bf16",
        HostTensor::from_vector<float>({3}, {1.5f, -256.f, 1e10f}).astype(DType::kBF16));
    root.write_dataset("extra/f16",
                       HostTensor::from_vector<float>({1}, {0.25f}).astype(DType::kF16));
    root.write_dataset("extra/bool", HostTensor::from_vector<bool>({2}, {true, false}));
    std::vector<std::string> many(3000, std::string(30, 'n'));
    root.create_group("big").write_keras_string_list("layer_names", many);
  }
  // The loading half of Keras's hdf5_format.py, plus dtype checks.
  std::string script = R"PY(
import sys, h5py, numpy as np
def load_attributes(group, name):
    if name in group.attrs:
        return [n.decode('utf8') if hasattr(n, 'decode') else n for n in group.attrs[name]]
    data, i = [], 0
    while '%s%d' % (name, i) in group.attrs:
        data.extend([n.decode('utf8') if hasattr(n, 'decode') else n
                     for n in group.attrs['%s%d' % (name, i)]])
        i += 1
    return data
with h5py.File(sys.argv[1], 'r') as f:
    text = lambda v: v.decode('utf8') if hasattr(v, 'decode') else v
    assert f.attrs['keras_version'] == b'2.4.0', f.attrs['keras_version']  # fixed: bytes
    assert f.attrs['backend'] == 'tensorflow'  # variable UTF-8: str
    assert text(f.attrs['model_config']) == '{"class_name": "Sequential"}'
    g = f['model_weights']
    assert load_attributes(g, 'layer_names') == ['flatten', 'dense']
    assert g.attrs['layer_names'].dtype == np.dtype('S7'), g.attrs['layer_names'].dtype
    assert len(g['flatten'].attrs['weight_names']) == 0
    assert load_attributes(g['dense'], 'weight_names') == ['dense/kernel:0', 'dense/bias:0']
    k = g['dense']['dense/kernel:0']
    assert k.dtype == np.float32 and k.shape == (2, 3)
    assert (k[()] == np.arange(1, 7, dtype='f4').reshape(2, 3)).all()
    assert list(g['dense/dense/bias:0'][()]) == [0.5, 0, -1]
    it = f['optimizer_weights/Adam/iter:0']
    assert it.shape == () and it.dtype == np.int64 and it[()] == 42000
    bf16 = f['extra/bf16'].astype('f4')[()]  # HDF5 converts the bf16-layout float exactly
    assert list(bf16) == [1.5, -256.0, 9999220736.0], bf16
    assert f['extra/f16'].dtype == np.float16 and f['extra/f16'][0] == 0.25
    assert f['extra/bool'].dtype == np.bool_ and list(f['extra/bool'][()]) == [True, False]
    assert sorted(f['big'].attrs.keys()) == ['layer_names0', 'layer_names1']
    assert load_attributes(f['big'], 'layer_names') == ['n' * 30] * 3000
print('h5py read the Kiln file')
)PY";
  EXPECT_EQ(testing::run_python(dir_.file("read.py"), script, path), 0);
}

TEST_F(Hdf5InteropTest, KilnReadsAKerasStyleFileWrittenByH5py) {
  std::string path = dir_.file("keras.h5");
  // Written the way tf.keras 2.x's hdf5_format.py writes, with h5py 3's string rules.
  std::string script = std::string(testing::kKerasSaveAttributesPy) + R"PY(
import sys, json, h5py, numpy as np
with h5py.File(sys.argv[1], 'w') as f:
    f.attrs['keras_version'] = '2.4.0'
    f.attrs['backend'] = 'tensorflow'
    f.attrs['model_config'] = json.dumps({'class_name': 'Sequential', 'name': 'caf\u00e9'}).encode('utf8')
    g = f.create_group('model_weights')
    save_attributes(g, 'layer_names', [b'flatten', b'dense'])
    g.attrs['backend'] = 'tensorflow'.encode('utf8')
    g.attrs['keras_version'] = np.bytes_(b'2.4.0')
    save_attributes(g.create_group('flatten'), 'weight_names', [])
    d = g.create_group('dense')
    save_attributes(d, 'weight_names', [b'dense/kernel:0', b'dense/bias:0'])
    d.create_dataset('dense/kernel:0', data=np.arange(6, dtype='>f4').reshape(2, 3))
    d.create_dataset('dense/bias:0', data=np.zeros(3, 'f4'))
    f.create_dataset('optimizer_weights/Adam/iter:0', data=np.int64(7))
    f['more/f16'] = np.array([0.5, -2], 'f2')
    f['more/i16'] = np.array([-3, 4], 'i2')
    f['more/bool'] = np.array([False, True])
    f['more/f64'] = np.float64(2.5)
    f['more/text'] = 'not a tensor'
    save_attributes(f['more'], 'layer_names', [('layer_%05d' % i).encode() for i in range(8000)])
)PY";
  ASSERT_EQ(testing::run_python(dir_.file("write.py"), script, path), 0);

  Hdf5File f = Hdf5File::open(path);
  Hdf5Group& root = f.root();
  EXPECT_EQ(root.read_string_attribute("keras_version"), "2.4.0");
  EXPECT_EQ(root.read_string_attribute("backend"), "tensorflow");
  EXPECT_EQ(root.read_string_attribute("model_config"),
            "{\"class_name\": \"Sequential\", \"name\": \"caf\\u00e9\"}");
  Hdf5Group weights = root.open_group("model_weights");
  EXPECT_EQ(weights.read_keras_string_list("layer_names"),
            (std::vector<std::string>{"flatten", "dense"}));
  EXPECT_EQ(weights.read_string_attribute("backend"), "tensorflow");
  EXPECT_EQ(weights.read_string_attribute("keras_version"), "2.4.0");
  EXPECT_TRUE(weights.open_group("flatten").read_keras_string_list("weight_names").empty());
  Hdf5Group dense = weights.open_group("dense");
  EXPECT_EQ(dense.read_keras_string_list("weight_names"),
            (std::vector<std::string>{"dense/kernel:0", "dense/bias:0"}));
  HostTensor kernel = dense.read_dataset("dense/kernel:0");
  EXPECT_EQ(kernel.shape(), Shape(DType::kF32, {2, 3}));
  EXPECT_EQ(kernel.to_vector<float>(),
            (std::vector<float>{0, 1, 2, 3, 4, 5}));  // big-endian source
  HostTensor iter = root.read_dataset("optimizer_weights/Adam/iter:0");
  EXPECT_EQ(iter.shape(), Shape(DType::kI64, {}));
  EXPECT_EQ(iter.to_vector<int64_t>(), std::vector<int64_t>{7});
  EXPECT_EQ(root.read_dataset("more/f16").dtype(), DType::kF16);
  EXPECT_EQ(root.read_dataset("more/f16").to_vector<float>(), (std::vector<float>{0.5f, -2.f}));
  EXPECT_EQ(root.read_dataset("more/i16").to_vector<int32_t>(), (std::vector<int32_t>{-3, 4}));
  EXPECT_EQ(root.read_dataset("more/bool").to_vector<int32_t>(), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(root.read_dataset("more/f64").to_vector<double>(), std::vector<double>{2.5});
  EXPECT_THROW(root.read_dataset("more/text"), IOError);
  Hdf5Group more = root.open_group("more");
  EXPECT_FALSE(more.has_attribute("layer_names"));
  std::vector<std::string> layers = more.read_keras_string_list("layer_names");
  ASSERT_EQ(layers.size(), 8000u);
  EXPECT_EQ(layers[7999], "layer_07999");
}

}  // namespace
}  // namespace kiln::io
