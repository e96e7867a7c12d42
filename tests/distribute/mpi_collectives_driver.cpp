// The MPI driver of the collectives: `mpirun -np 2 mpi_collectives_driver` runs, on each rank,
// a MultiWorkerMirroredStrategy over 2 logical CPU devices (4 replicas: rank k holds replicas
// 2k and 2k+1), one step of collective_cases.h's collectives, and checks every local
// replica's results against the hand-computed ones. Prints one line per replica; exits 1 on a
// mismatch.
#include <iostream>

#include "kiln/core/error.h"
#include "kiln/distribute/logical_devices.h"
#include "kiln/distribute/strategy.h"
#include "kiln/trace/function.h"
#include "tests/distribute/collective_cases.h"

int main() try {
  using namespace kiln;
  config::set_logical_cpu_devices(2);
  auto strategy = std::make_shared<distribute::MultiWorkerMirroredStrategy>();
  const int n = strategy->num_replicas_in_sync();
  Function f("collectives", [n](const std::vector<Tensor>& in) { return testing::apply_collectives(in[0], n); });
  distribute::PerReplica<std::vector<HostTensor>> inputs;
  const int local = strategy->num_local_replicas();
  for (int r = 0; r < local; ++r) inputs.values.push_back({testing::collective_x(n, strategy->worker_index() * local + r)});
  const auto out = strategy->run([&](const std::vector<HostTensor>& in) { return f(in); }, inputs);
  bool ok = true;
  for (int r = 0; r < local; ++r) {
    const int g = strategy->worker_index() * local + r;
    const auto want = testing::expected_collectives(n, g);
    std::string bad;
    for (size_t k = 0; k < want.size(); ++k)
      if (out[static_cast<size_t>(r)][k].to_vector<float>() != want[k]) bad += str_cat(" ", testing::kCollectiveNames[k]);
    std::cout << "replica " << g << " of " << n << ": " << (bad.empty() ? "all collectives match" : "MISMATCH in" + bad)
              << std::endl;
    ok = ok && bad.empty();
  }
  return ok ? 0 : 1;
} catch (const kiln::Error& e) {
  std::cerr << "mpi_collectives_driver: " << e.kind() << ": " << e.what() << "\n";
  return 1;
}
