// bench/replicas: the seed MLP's train step (global batch 128, Adam) on this host three ways:
// 1 replica x 2 threads (DefaultStrategy), 2 replicas x 1 thread (MirroredStrategy over 2
// logical CPU devices, in-process all_reduce), and 2 MPI ranks x 1 thread
// (MultiWorkerMirroredStrategy; the bench launches `mpirun -np 2 <itself> --mpi-worker`).
// One JSON line per configuration: ms_per_step (median of 5 runs of 50 steps) and samples_per_s.
// Synthetic MNIST-shaped data, so no files are needed.
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "bench/bench_main.h"
#include "kiln/distribute/cluster_resolver.h"
#include "kiln/distribute/logical_devices.h"
#include "kiln/runtime/backend_registry.h"
#include "tests/distribute/synthetic_mnist.h"
#include "tests/testing/seed_mlp.h"

namespace {

using namespace kiln;
constexpr int64_t kGlobalBatch = 128, kSteps = 50, kRuns = 5, kBatches = 16;

// Median ms per global step of the seed MLP under `strategy`.
double ms_per_step(const std::shared_ptr<distribute::Strategy>& strategy) {
  std::unique_ptr<testing::SeedMlp> mlp;
  {
    auto scope = strategy->scope();
    mlp = std::make_unique<testing::SeedMlp>(runtime::default_backend(), /*seed=*/0);
  }
  testing::SyntheticMnist d = testing::synthetic_mnist(kBatches * kGlobalBatch);
  std::vector<distribute::PerReplica<data::Element>> shards;
  for (int64_t b = 0; b < kBatches; ++b)
    shards.push_back(strategy->split_batch(
        {d.x.slice_rows(b * kGlobalBatch, (b + 1) * kGlobalBatch), d.y.slice_rows(b * kGlobalBatch, (b + 1) * kGlobalBatch)}));
  auto step = [&](int64_t s) {
    strategy->run([&](const data::Element& e) { return mlp->train_step(e[0], e[1]); }, shards[static_cast<size_t>(s % kBatches)]);
  };
  for (int64_t s = 0; s < 5; ++s) step(s);  // compile and warm up
  return bench::median_ms_per_step(kRuns, kSteps, [] {}, step);
}

void print(const std::string& config, int replicas, int threads, double ms) {
  bench::JsonLine()
      .add("bench", "replicas")
      .add("config", config)
      .add("replicas", static_cast<int64_t>(replicas))
      .add("threads_per_replica", static_cast<int64_t>(threads))
      .add("global_batch", kGlobalBatch)
      .add("ms_per_step", ms)
      .add("samples_per_s", kGlobalBatch / (ms / 1e3))
      .print();
}

}  // namespace

int main(int argc, char** argv) {
  std::ostringstream quiet;
  if (argc > 1 && std::string(argv[1]) == "--mpi-worker") {  // one rank of the MPI configuration
    auto strategy = distribute::auto_detect(quiet);
    const double ms = ms_per_step(strategy);
    if (strategy->is_chief()) print("2_mpi_ranks_x_1_thread", strategy->num_replicas_in_sync(), distribute::host_threads(), ms);
    return 0;
  }
  distribute::set_thread_share(2);
  print("1_replica_x_2_threads", 1, distribute::host_threads(), ms_per_step(std::make_shared<distribute::DefaultStrategy>()));

  config::set_logical_cpu_devices(2);
  auto mirrored = std::make_shared<distribute::MirroredStrategy>();
  print("2_replicas_x_1_thread", 2, mirrored->threads_per_replica(), ms_per_step(mirrored));

  const std::string mpiexec = KILN_MPIEXEC;
  if (mpiexec.empty()) {
    std::cerr << "replicas: no mpirun; skipping the MPI configuration\n";
    return 0;
  }
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 0;
  // Loopback only; each rank is bound to its own core and runs one thread.
  const std::string out = bench::run_command(
      "env OMPI_MCA_btl=self,vader OMP_NUM_THREADS=1 KILN_CPU_DEVICES=1 " + mpiexec +
      " --allow-run-as-root --oversubscribe --bind-to core -np 2 " + std::string(self, static_cast<size_t>(n)) +
      " --mpi-worker 2>&1");
  std::cout << out << std::flush;
  return 0;
}
