// The multi-worker driver the MPI test launches: `mpirun -np 2 mpi_train_driver <dir>`. Each
// rank picks its strategy with auto_detect() (MultiWorkerMirroredStrategy under mpirun),
// trains the seed MLP for kSteps global batches of kGlobalBatch rows (its half of each), and
// writes its weights to <dir>/rank<r>.bin for the test to compare.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "kiln/core/error.h"
#include "kiln/distribute/cluster_resolver.h"
#include "kiln/runtime/backend_registry.h"
#include "tests/distribute/mpi_train_driver.h"
#include "tests/distribute/synthetic_mnist.h"
#include "tests/testing/seed_mlp.h"

int main(int argc, char** argv) try {
  using namespace kiln;
  if (argc != 2) {
    std::cerr << "usage: mpi_train_driver <output dir>\n";
    return 2;
  }
  std::shared_ptr<distribute::Strategy> strategy = distribute::auto_detect();
  std::unique_ptr<testing::SeedMlp> mlp;
  {
    auto scope = strategy->scope();
    mlp = std::make_unique<testing::SeedMlp>(runtime::default_backend(), /*seed=*/0);
  }
  testing::SyntheticMnist data = testing::synthetic_mnist(testing::kDriverSteps * testing::kDriverGlobalBatch);
  for (int64_t s = 0; s < testing::kDriverSteps; ++s) {
    const int64_t b = testing::kDriverGlobalBatch;
    data::Element global{data.x.slice_rows(s * b, (s + 1) * b), data.y.slice_rows(s * b, (s + 1) * b)};
    strategy->run([&](const data::Element& shard) { return mlp->train_step(shard[0], shard[1]); },
                  strategy->split_batch(global));
  }
  const std::string path = std::string(argv[1]) + "/rank" + std::to_string(strategy->worker_index()) + ".bin";
  std::ofstream out(path, std::ios::binary);
  for (const Variable& v : mlp->params())
    out.write(static_cast<const char*>(v.storage().raw_data()), static_cast<std::streamsize>(v.storage().byte_size()));
  std::cout << "worker " << strategy->worker_index() << " of " << strategy->num_workers() << ": "
            << strategy->num_replicas_in_sync() << " replicas in sync, wrote " << path << "\n";
  return out.good() ? 0 : 1;
} catch (const kiln::Error& e) {
  std::cerr << "mpi_train_driver: " << e.kind() << ": " << e.what() << "\n";
  return 1;
}
