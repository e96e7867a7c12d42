// The NCCL id exchange the MPI test launches: `mpirun -np 2 nccl_id_driver <mode>`. Every rank
// prints one line; the test compares them.
//   id:       exchange_id with NCCL's own ncclGetUniqueId on rank 0 -> "rank R id <hex>"
//   refuse:   rank 1 cannot take part -> every rank "rank R error <message>", none waits
//   strategy: MultiWorkerMirroredStrategy({"cuda:0"}) on this machine -> "rank R strategy <describe>"
//             or "rank R error <message>" (no GPU here: every rank fails, none waits)
#include <cstdio>
#include <iostream>
#include <string>

#include "kiln/core/error.h"
#include "kiln/distribute/mpi/mpi_world.h"
#include "kiln/distribute/strategy.h"
#include "kiln/runtime/gpus.h"

int main(int argc, char** argv) {
  using namespace kiln;
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode != "id" && mode != "refuse" && mode != "strategy") {
    std::cerr << "usage: nccl_id_driver id|refuse|strategy\n";
    return 2;
  }
  const int rank = distribute::mpi::init().rank;
  try {
    if (mode == "strategy") {
      auto s = std::make_shared<distribute::MultiWorkerMirroredStrategy>(std::vector<std::string>{"cuda:0"});
      std::printf("rank %d strategy %s\n", rank, s->describe().c_str());
    } else {
      const std::string why_not = mode == "refuse" && rank == 1 ? "no GPU on this test rank" : "";
      const std::vector<uint8_t> id = distribute::mpi::exchange_id(why_not, runtime::new_gpu_collectives_id);
      std::string hex;
      for (uint8_t b : id) {
        hex += "0123456789abcdef"[b >> 4];
        hex += "0123456789abcdef"[b & 15];
      }
      std::printf("rank %d id %s\n", rank, hex.c_str());
    }
  } catch (const Error& e) {
    std::printf("rank %d error %s\n", rank, e.what());
  }
  std::fflush(stdout);
  return 0;
}
