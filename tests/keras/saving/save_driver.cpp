// The child program of kill_saves_test and of corruption_campaign.py: saves a small model over
// and over in one format (to be killed with SIGKILL at a random point), loads one file and
// reports how that went, or writes one file of every format.
//
//   saving_save_driver save <format> <path> [<count>]   "saved <k>" after each save (count 0: forever)
//   saving_save_driver load <format> <path>             exit 0 "loaded <k>", 3 IOError, 4 another
//                                                       kiln::Error, 6 another exception
//   saving_save_driver write <dir>                      model.h5 model.keras weights.h5 model_dir weights.safetensors
//                                                       ckpt.kckpt
//
// Formats: h5, keras, h5weights, directory, safetensors, checkpoint, backup (BackupAndRestore's
// directory, one backup per batch). Save k sets every variable to k, so a load tells which
// save it read and that it read one save, not a mix ("loaded -1" and exit 5 for a mix, or for
// a model loaded without its compile arguments or optimizer state, or with other ones).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "kiln/core/error.h"
#include "kiln/keras/keras.h"
#include "kiln/keras/saving/training_config.h"

using namespace kiln;
using namespace kiln::keras;

namespace {

std::unique_ptr<Sequential> make_model() {
  auto model = std::make_unique<Sequential>(std::vector<LayerHandle>{
      InputLayer({.shape = {64}}), Dense(256, {.activation = "relu"}), Dense(256), Dense(10)});
  model->compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true})});
  model->optimizer()->create_slots(model->trainable_weights());
  return model;
}

// The learning rate is left alone: .h5 files keep it in the compile arguments, not as a weight.
std::vector<Variable> marked_variables(Model& model, bool with_optimizer) {
  std::vector<Variable> vars = model.weights();
  if (with_optimizer)
    for (const Variable& v : model.optimizer()->variables())
      if (!v.name().ends_with("learning_rate")) vars.push_back(v);
  return vars;
}

void mark(Model& model, int64_t k) {
  for (const Variable& v : marked_variables(model, true))
    v.assign(Tensor(HostTensor::from_vector<float>(v.shape().dims(),
                                                   std::vector<float>(static_cast<size_t>(v.shape().num_elements()),
                                                                      static_cast<float>(k)))));
}

// The mark every variable carries, or -1 when they differ (a mix of two saves).
int64_t read_mark(Model& model, bool with_optimizer) {
  int64_t mark = -2;
  for (const Variable& v : marked_variables(model, with_optimizer)) {
    HostTensor t = v.storage().astype(DType::kF64);
    for (double x : t.data<double>()) {
      const auto k = static_cast<int64_t>(x);
      if (mark == -2) mark = k;
      if (k != mark || static_cast<double>(k) != x) return -1;
    }
  }
  return mark;
}

void save_once(Model& model, const std::string& format, const std::string& path) {
  if (format == "h5" || format == "keras" || format == "directory") return model.save(path);
  if (format == "safetensors" || format == "h5weights") return model.save_weights(path);
  if (format == "checkpoint") return Checkpoint(model).write(path);
  throw ValueError("unknown format " + format);
}

int save(const std::string& format, const std::string& path, int64_t count) {
  if (format == "backup") {
    auto model = make_model();
    auto [x, y] = std::pair{HostTensor::from_vector<float>({8, 64}, std::vector<float>(8 * 64, 0.5f)),
                            HostTensor::from_vector<int32_t>({8}, std::vector<int32_t>(8, 3))};
    int64_t k = 0;
    auto progress = std::make_shared<LambdaCallback>(LambdaCallbackOptions{.on_train_batch_end = [&](int64_t, const Logs&) {
      std::printf("saved %lld\n", static_cast<long long>(++k));
      std::fflush(stdout);
      model->stop_training = k == count;
    }});
    model->fit(data::Dataset::from_tensor_slices({x, y}).batch(2, true),
               {.epochs = 1000000,
                .callbacks = {BackupAndRestore(path, {.save_freq = 1, .delete_checkpoint = false}), progress},
                .verbose = 0});
    return 0;
  }
  auto model = make_model();
  for (int64_t k = 1; count == 0 || k <= count; ++k) {
    mark(*model, k);
    save_once(*model, format, path);
    std::printf("saved %lld\n", static_cast<long long>(k));
    std::fflush(stdout);
  }
  return 0;
}

int64_t load(const std::string& format, const std::string& path) {
  if (format == "h5" || format == "keras" || format == "directory") {
    std::unique_ptr<Model> model = load_model(path);
    // The training setup comes back too: compiled as saved (the loss's from_logits, the
    // optimizer's config) with its state. A model without them is another model: a mix.
    if (!model->is_compiled() || !model->optimizer()->slots_created() ||
        training_config_json(model->compile_options()) != training_config_json(make_model()->compile_options()))
      return -1;
    return read_mark(*model, true);
  }
  auto model = make_model();
  if (format == "safetensors" || format == "h5weights") {
    model->load_weights(path);
    return read_mark(*model, false);
  }
  if (format == "checkpoint") {
    Checkpoint(*model).read(path);
    return read_mark(*model, true);
  }
  if (format == "backup") {
    std::optional<std::string> latest = CheckpointManager(Checkpoint(*model), path, {.prefix = "backup"}).latest_checkpoint();
    if (!latest) throw IOError("[" + path + "] holds no backup");
    Checkpoint(*model).read(*latest);  // the newest must load, not merely some backup
    return 0;
  }
  throw ValueError("unknown format " + format);
}

void write_all(const std::string& dir) {
  std::filesystem::create_directories(dir);
  auto model = make_model();
  mark(*model, 1);
  model->save(dir + "/model.h5");
  model->save(dir + "/model.keras");
  model->save_weights(dir + "/weights.h5");
  model->save(dir + "/model_dir");
  model->save_weights(dir + "/weights.safetensors");
  Checkpoint(*model).write(dir + "/ckpt.kckpt");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "save" && argc >= 4) return save(argv[2], argv[3], argc > 4 ? std::atoll(argv[4]) : 0);
    if (mode == "write" && argc == 3) return write_all(argv[2]), 0;
    if (mode == "load" && argc == 4) {
      const int64_t k = load(argv[2], argv[3]);
      std::printf("loaded %lld\n", static_cast<long long>(k));
      return k == -1 ? 5 : 0;
    }
  } catch (const IOError& e) {
    std::printf("IOError: %s\n", e.what());
    return 3;
  } catch (const Error& e) {
    std::printf("%s: %s\n", e.kind(), e.what());
    return 4;
  } catch (const std::exception& e) {
    std::printf("std::exception: %s\n", e.what());
    return 6;
  }
  std::fprintf(stderr, "usage: %s save <format> <path> [count] | load <format> <path> | write <dir>\n", argv[0]);
  return 2;
}
