// Shared by the layer catalogue tests (issue 20): f64 gradient options for whole layers built
// under the "float64" policy, config fixed points, and the save/load round trip of a model
// holding a layer (.h5 and Keras 3 .keras), with the Keras weight names its .h5 file lists.
#pragma once

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "kiln/io/hdf5_file.h"
#include "kiln/keras/saving/saving.h"
#include "tests/keras/keras_testing.h"
#include "tests/keras/layer_gradients.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras::testing {

/// Central differences in f64 (layers made with {.dtype = "float64"}, inputs random_f64).
inline kiln::testing::GradCheckOptions f64_grad_options() { return {.eps = 1e-6, .rtol = 1e-6, .atol = 1e-8}; }

/// f32 values 1, 2, 3, ... of `dims` (row-major), for hand-computed cases.
inline HostTensor ramp(Dims dims) {
  HostTensor t(Shape(DType::kF32, std::move(dims)));
  auto v = t.data<float>();
  std::iota(v.begin(), v.end(), 1.0f);
  return t;
}

/// get_config -> layer_from_config -> get_config gives the same text.
inline void expect_config_round_trip(const Layer& layer) {
  const std::string config = layer.get_config();
  EXPECT_EQ(layer_from_config(layer.class_name(), config)->get_config(), config) << layer.class_name();
}

/// Saves `model` as .h5 and as Keras 3 .keras, loads each and expects the same config and
/// predictions on x; in the .h5 file, `layer` lists `weight_names` (Keras's "<layer>/<w>:0").
inline void expect_save_load_round_trip(Model& model, const HostTensor& x, const std::string& layer,
                                        const std::vector<std::string>& weight_names) {
  kiln::testing::TempDir dir;
  const std::vector<float> want = model.predict(x).to_vector<float>();
  for (const char* file : {"m.h5", "m.keras"}) {
    SCOPED_TRACE(file);
    model.save(dir.file(file));
    std::unique_ptr<Model> loaded = load_model(dir.file(file));
    EXPECT_EQ(loaded->to_json(), model.to_json());
    EXPECT_EQ(loaded->predict(x).to_vector<float>(), want);
  }
  io::Hdf5File f = io::Hdf5File::open(dir.file("m.h5"));
  EXPECT_EQ(f.root().open_group("model_weights").open_group(layer).read_keras_string_list("weight_names"),
            weight_names);
}

}  // namespace kiln::keras::testing
