// bench/steps_per_execution: compile time of the seed MLP's train program for
// steps_per_execution k = 1, 10, 100. With k > 1 the k steps are one while loop (step 0, then
// a scan over steps 1..k-1), so the goal is k = 100 within 2x of k = 1 (issue 20). One JSON
// line per k: compile_ms = the backend's compile of the k-step program (passes, memory plan,
// lowering and code generation, nested loop programs included), from a TraceSession over
// the first fit; first_fit_ms = that whole first fit (tracing and k steps too); kernels =
// the program's top-level steps.
#include <random>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "kiln/core/trace_recorder.h"
#include "kiln/keras/keras.h"

namespace {

using namespace kiln;
using namespace kiln::keras;

// k batches of 128 synthetic MNIST-shaped rows.
data::Dataset synthetic(int k) {
  const int64_t rows = 128 * static_cast<int64_t>(k);
  HostTensor x(Shape(DType::kF32, {rows, 28, 28})), y(Shape(DType::kI32, {rows}));
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  for (float& v : x.data<float>()) v = pixel(gen);
  for (int32_t& v : y.data<int32_t>()) v = static_cast<int32_t>(gen() % 10);
  return data::Dataset::from_tensor_slices({x, y}).batch(128, /*drop_remainder=*/true);
}

void measure(int k) {
  Sequential model({Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dense(10)});
  model.compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}, .steps_per_execution = k});
  const data::Dataset ds = synthetic(k);
  const std::string name = k > 1 ? str_cat("train_step_x", k) : "train_step";
  double compile_ms = 0;
  bench::Stopwatch first;
  {
    TraceSession session;
    model.fit(ds, {.epochs = 1, .verbose = 0});
    for (const TraceEvent& e : session.recorder().events())
      if (e.category == "compile" && e.name == "compile" && e.detail == name) compile_ms += e.duration_ns * 1e-6;
  }
  const double first_ms = first.seconds() * 1e3;
  const Function* program = k > 1 ? model.multi_step_train_function() : model.train_function();
  bench::JsonLine line;
  line.add("bench", "steps_per_execution").add("k", static_cast<int64_t>(k)).add("compile_ms", compile_ms)
      .add("first_fit_ms", first_ms)
      .add("kernels", static_cast<int64_t>(program->last_executable()->kernel_count()));
  line.print();
}

}  // namespace

int main() {
  for (int k : {1, 10, 100}) measure(k);
  return 0;
}
