// The MPI world this process belongs to (OpenMPI), behind a header without mpi.h: the one
// place Kiln calls MPI. Built when CMake finds MPI (KILN_MPI=AUTO|ON); otherwise every call
// but launched_world_size() says how to get a build with it.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::distribute::mpi {

/// Whether this build has the MPI collectives.
bool built_with_mpi();
/// The world size mpirun/srun announced in the environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE,
/// PMIX_SIZE), without initializing MPI; 1 when this process was not launched that way.
int launched_world_size();
/// The variable launched_world_size() read ("OMPI_COMM_WORLD_SIZE=2"), or "" when none.
std::string launched_world_size_variable();

struct World {
  int size = 1;
  int rank = 0;
};
/// Initializes MPI once per process (MPI_Init_thread, finalized at exit; MPI cannot restart)
/// and returns this process's place. ConfigError when the build has no MPI.
World init();
/// Sums `count` elements in place over every rank (MPI_Allreduce, MPI_SUM on MPI_COMM_WORLD).
void all_reduce_sum(DType dtype, void* data, int64_t count);
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
