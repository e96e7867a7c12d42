// The child program of kill_resume_test: trains the seed MLP (with Dropout, so RNG state
// matters) on a 1024-image MNIST subset, shuffled, for 3 epochs under BackupAndRestore
// (a backup every 5 steps), printing "step N" (the global step) after each one, then writes the final
// weights. Rerunning the same command after a SIGKILL resumes from the last backup.
//
//   saving_resume_driver <backup_dir> <weights_out.safetensors> [--slow-writes]
//
// --slow-writes pauses 2 ms in every write(2) to a file, so a checkpoint write spans long
// enough for the test to kill the process in the middle of it. It works by defining write()
// here: the library's calls bind to it at link time (test-only fault injection; the library
// has no hook for it). Exit status 77: MNIST files absent (the test then skips).
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "kiln/core/error.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/keras/keras.h"

namespace {
bool g_slow_writes = false;
}

extern "C" ssize_t write(int fd, const void* buf, size_t n) {
  if (g_slow_writes && fd > 2) ::usleep(2000);
  return ::syscall(SYS_write, fd, buf, n);
}

using namespace kiln;
using namespace kiln::keras;

int main(int argc, char** argv) try {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <backup_dir> <weights_out> [--slow-writes]\n", argv[0]);
    return 2;
  }
  g_slow_writes = argc > 3 && std::strcmp(argv[3], "--slow-writes") == 0;
  datasets::mnist::Split train;
  try {
    train = datasets::mnist::load_data().train;
  } catch (const DataError&) {
    return 77;
  }
  const int64_t n = 1024;
  HostTensor x = train.x.slice_rows(0, n).astype(DType::kF32);
  for (float& v : x.data<float>()) v /= 255.0f;
  HostTensor y = train.y.slice_rows(0, n).astype(DType::kI32);
  data::Dataset ds =
      data::Dataset::from_tensor_slices({x, y}).shuffle(1024, /*seed=*/7).batch(32, /*drop_remainder=*/true).prefetch(2);

  Sequential model({Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dropout(0.2), Dense(10)});
  model.compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  // The global step (the optimizer's iterations), which a resumed run continues.
  auto progress = std::make_shared<LambdaCallback>(LambdaCallbackOptions{
      .on_train_batch_end = [&](int64_t, const Logs&) {
        std::printf("step %lld\n", static_cast<long long>(model.optimizer()->iterations().storage().to_vector<int64_t>()[0]));
        std::fflush(stdout);
      }});
  // Backups first: a step's line is printed after its backup has been written.
  model.fit(ds, {.epochs = 3, .callbacks = {BackupAndRestore(argv[1], {.save_freq = 5}), progress}, .verbose = 0});
  model.save_weights(argv[2]);
  std::printf("done\n");
  return 0;
} catch (const kiln::Error& e) {
  std::fprintf(stderr, "saving_resume_driver: %s: %s\n", e.kind(), e.what());
  return 1;
}
