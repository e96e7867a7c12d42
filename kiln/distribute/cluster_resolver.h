// The cluster resolver (seed S1-S4): finds what this process can use and picks a strategy.
// MPI world > 1 -> MultiWorkerMirroredStrategy (over GPUs, one per process, when each process
// of this host has one; else over the CPU devices); two GPUs or more -> MirroredStrategy over
// them (one replica per GPU, NCCL all_reduce; where that fails, the reason is printed and the
// CPU choice follows); more than one logical CPU device -> MirroredStrategy over them;
// otherwise DefaultStrategy. It says what it found and why it chose, and never throws.
#pragma once

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "kiln/distribute/strategy.h"
#include "kiln/runtime/gpus.h"

namespace kiln::distribute {

/// What the resolver saw, before choosing.
struct ClusterInfo {
  int mpi_world_size = 1;    // from the launcher's environment (mpirun)
  int mpi_local_rank = -1;   // this process among those on this host; -1: not announced
  int mpi_local_size = -1;   // processes on this host; -1: not announced
  bool mpi_built = false;    // this build has the MPI collectives
  int gpus = 0;              // CUDA devices
  runtime::GpuSurvey gpu_survey;  // each GPU's name and memory, or why there is none
  int logical_cpu_devices = 1;
  int host_threads = 1;
  int64_t host_memory_mib = 0;
};

/// Probes the environment without initializing anything.
ClusterInfo detect_cluster();
/// The device report `kiln devices` prints (devices, MPI, GPUs), one item per line.
std::string describe_cluster(const ClusterInfo& info);

/// A strategy auto_detect may start, in the order it tries them (the first that starts wins).
struct StrategyCandidate {
  enum class Kind { kMultiWorkerGpu, kMultiWorkerCpu, kMirroredGpus, kMirroredCpus };
  Kind kind;
  std::vector<std::string> devices;  // the GPUs to use; empty for CPU devices
  std::string why;                   // "an MPI world of 2 processes, one GPU each (this one: cuda:1)"
};
/// auto_detect's choice, from what detect_cluster() saw (tests pass their own ClusterInfo).
/// Empty: the DefaultStrategy.
std::vector<StrategyCandidate> strategy_candidates(const ClusterInfo& info);

/// Prints the device report and the chosen strategy with the reason to `out` (rank 0 only
/// under MPI) and returns the strategy. If the preferred strategy cannot start, prints why
/// and falls back to the next; never throws.
std::shared_ptr<Strategy> auto_detect(std::ostream& out = std::cout);

}  // namespace kiln::distribute
