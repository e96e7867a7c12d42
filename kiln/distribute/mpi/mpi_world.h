// The MPI world this process belongs to (OpenMPI), behind a header without mpi.h: the one
// place Kiln calls MPI. Built when CMake finds MPI (KILN_MPI=AUTO|ON); otherwise every call
// but launched_world_size() says how to get a build with it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/core/dtype.h"

namespace kiln::distribute::mpi {

/// Whether this build has the MPI collectives.
bool built_with_mpi();
/// The world size mpirun/srun announced in the environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE,
/// PMIX_SIZE), without initializing MPI; 1 when this process was not launched that way.
int launched_world_size();
/// The variable launched_world_size() read ("OMPI_COMM_WORLD_SIZE=2"), or "" when none.
std::string launched_world_size_variable();
/// This process's rank among those the launcher started on this host, and how many it
/// started here (OMPI_COMM_WORLD_LOCAL_RANK/_SIZE, MPICH's MPI_LOCALRANKID/MPI_LOCALNRANKS);
/// -1 when the environment does not say.
int launched_local_rank();
int launched_local_size();

struct World {
  int size = 1;
  int rank = 0;
};
/// Initializes MPI once per process (MPI_Init_thread, finalized at exit; MPI cannot restart)
/// and returns this process's place. ConfigError when the build has no MPI.
World init();
/// Sums `count` elements in place over every rank (MPI_Allreduce, MPI_SUM on MPI_COMM_WORLD).
void all_reduce_sum(DType dtype, void* data, int64_t count);
/// Gathers `bytes` bytes at `in` from every rank into `out` (size x bytes), rank by rank
/// (MPI_Allgather on MPI_COMM_WORLD): the exchange of all_gather and the other collectives.
void all_gather(const void* in, int64_t bytes, void* out);
/// Sends `bytes` bytes at `data` from rank `root` to every rank (MPI_Bcast on MPI_COMM_WORLD).
void broadcast(void* data, int64_t bytes, int root);
/// The NCCL id exchange of MultiWorkerMirroredStrategy over GPUs (a
/// runtime::CollectivesIdExchange over MPI; every rank calls it): the ranks first agree that
/// each can take part (`why_not` empty), else every rank throws ConfigError saying how many
/// cannot (and this rank's reason), so none waits for the others in NCCL; then rank 0 makes the
/// id with `make_id` and broadcasts it. Returns the same bytes on every rank.
std::vector<uint8_t> exchange_id(const std::string& why_not, const std::function<std::vector<uint8_t>()>& make_id);
/// MPI_Barrier on MPI_COMM_WORLD.
void barrier();
/// When MPI is running with more than one rank, ends every rank with `exit_code`
/// (MPI_Abort): a rank that fails alone would leave the others waiting forever in their next
/// all-reduce, and itself in MPI_Finalize. Returns (doing nothing) otherwise, so a program's
/// error handler can call it unconditionally before returning its error code.
void abort_world_on_error(int exit_code);
/// "Open MPI v4.1.4, ..." or why there is none.
std::string library_version();

}  // namespace kiln::distribute::mpi
