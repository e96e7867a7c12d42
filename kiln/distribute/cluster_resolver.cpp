// auto_detect: probe, report, choose, fall back.
#include "kiln/distribute/cluster_resolver.h"

#include <unistd.h>

#include <sstream>

#include "kiln/core/error.h"
#include "kiln/distribute/logical_devices.h"
#include "kiln/distribute/mpi/mpi_world.h"

namespace kiln::distribute {

ClusterInfo detect_cluster() {
  ClusterInfo info;
  info.mpi_world_size = mpi::launched_world_size();
  info.mpi_local_rank = mpi::launched_local_rank();
  info.mpi_local_size = mpi::launched_local_size();
  info.mpi_built = mpi::built_with_mpi();
  info.gpu_survey = runtime::find_gpus();
  info.gpus = static_cast<int>(info.gpu_survey.gpus.size());
  // A bad KILN_CPU_DEVICES is a ConfigError here (docs/env_vars.md), not one device.
  info.logical_cpu_devices = config::logical_cpu_devices();
  info.host_threads = host_threads();
  info.host_memory_mib = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / (1 << 20);
  return info;
}

std::string describe_cluster(const ClusterInfo& info) {
  std::ostringstream os;
  os << "Kiln devices:\n";
  const int n = info.logical_cpu_devices;
  const int share = std::max(1, info.host_threads / n);
  if (n == 1) {
    os << "  cpu:0  " << info.host_threads << " thread" << (info.host_threads == 1 ? "" : "s") << ", " << info.host_memory_mib << " MiB host memory\n";
  } else {
    for (int i = 0; i < n; ++i) os << "  cpu:" << i << "  logical device, " << share << " thread" << (share == 1 ? "" : "s") << "\n";
    os << "  (" << n << " logical CPU devices over " << info.host_threads << " threads, " << info.host_memory_mib
       << " MiB host memory)\n";
  }
  for (const runtime::GpuInfo& g : info.gpu_survey.gpus)
    os << "  " << g.device << "  " << g.model << ", " << g.memory_bytes / (1 << 20) << " MiB, compute capability "
       << g.compute_capability / 10 << "." << g.compute_capability % 10 << "\n";
  if (info.gpus == 0) os << "  GPU: none (" << info.gpu_survey.none_because << ")\n";
  os << "  MPI: ";
  if (info.mpi_world_size > 1)
    os << "the environment announces " << info.mpi_world_size << " processes (" << mpi::launched_world_size_variable()
       << ")" << (info.mpi_built ? "" : ", but this build has no MPI");
  else
    os << "not launched by mpirun (world size 1)" << (info.mpi_built ? "" : "; this build has no MPI");
  os << "\n";
  return os.str();
}

namespace {

// Only rank 0 of an MPI launch talks.
bool quiet_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(var); v != nullptr) return std::atoi(v) != 0;
  return false;
}

}  // namespace

std::vector<StrategyCandidate> strategy_candidates(const ClusterInfo& info) {
  using Kind = StrategyCandidate::Kind;
  std::vector<StrategyCandidate> out;
  if (info.mpi_world_size > 1) {
    // One GPU per process: local rank r of this host takes cuda:r. Where the launcher does not
    // say how many processes share this host, or more share it than it has GPUs, the workers
    // use their CPUs (two processes on one GPU cannot join one NCCL communicator).
    if (info.mpi_local_rank >= 0 && info.mpi_local_rank < info.mpi_local_size && info.mpi_local_size <= info.gpus) {
      const std::string gpu = info.gpu_survey.gpus.at(static_cast<size_t>(info.mpi_local_rank)).device;
      out.push_back({Kind::kMultiWorkerGpu, {gpu},
                     str_cat("an MPI world of ", info.mpi_world_size, " processes, one GPU each (this one: ", gpu,
                             "), gradients all-reduced by NCCL across them")});
    }
    out.push_back({Kind::kMultiWorkerCpu, {}, str_cat("an MPI world of ", info.mpi_world_size, " processes")});
  }
  if (info.gpus > 1) {
    std::vector<std::string> gpus;
    for (const runtime::GpuInfo& g : info.gpu_survey.gpus) gpus.push_back(g.device);
    out.push_back({Kind::kMirroredGpus, gpus, str_cat(info.gpus, " GPUs: one replica per GPU, gradients all-reduced by NCCL")});
  } else if (info.gpus == 1) {
    // As TensorFlow places a lone GPU's ops there (and a TPU's strategy has its one device):
    // the steps compile for it, with no all_reduce.
    const std::string gpu = info.gpu_survey.gpus.at(0).device;
    out.push_back({Kind::kMirroredGpus, {gpu}, str_cat("1 GPU: one replica on ", gpu, ", the steps compiled for it")});
  }
  if (info.logical_cpu_devices > 1)
    out.push_back({Kind::kMirroredCpus, {},
                   str_cat("no accelerator; ", info.logical_cpu_devices, " logical CPU devices (KILN_CPU_DEVICES)")});
  return out;
}

std::shared_ptr<Strategy> auto_detect(std::ostream& out) {
  using Kind = StrategyCandidate::Kind;
  std::ostringstream say;
  std::shared_ptr<Strategy> chosen;
  std::string why;
  try {
    const ClusterInfo info = detect_cluster();
    say << describe_cluster(info);
    for (const StrategyCandidate& c : strategy_candidates(info)) {
      try {
        switch (c.kind) {
          case Kind::kMultiWorkerGpu: chosen = std::make_shared<MultiWorkerMirroredStrategy>(c.devices); break;
          case Kind::kMultiWorkerCpu: chosen = std::make_shared<MultiWorkerMirroredStrategy>(); break;
          case Kind::kMirroredGpus: chosen = std::make_shared<MirroredStrategy>(c.devices); break;
          case Kind::kMirroredCpus: chosen = std::make_shared<MirroredStrategy>(); break;
        }
        why = c.why;
        break;
      } catch (const Error& e) {
        say << (c.kind == Kind::kMultiWorkerGpu   ? "MultiWorkerMirroredStrategy over GPUs unavailable: "
                : c.kind == Kind::kMultiWorkerCpu ? "MultiWorkerMirroredStrategy unavailable: "
                : c.kind == Kind::kMirroredGpus   ? "MirroredStrategy over GPUs unavailable: "
                                                  : "MirroredStrategy unavailable: ")
            << e.what() << "\n";
      }
    }
    if (!chosen)
      why = info.gpus > 0 ? str_cat(info.gpus, " GPU", info.gpus > 1 ? "s" : "", " found but no strategy over ",
                                    info.gpus > 1 ? "them" : "it", " (see above), and one CPU device: the default CPU "
                                    "strategy")
                          : "no accelerator found and one CPU device: the default CPU strategy";
  } catch (const ConfigError&) {
    throw;  // a setting the user got wrong (KILN_CPU_DEVICES=abc) is theirs to fix, not a fallback
  } catch (const std::exception& e) {
    say << "Device detection failed: " << e.what() << "\n";
    why = "device detection failed: the default CPU strategy";
  }
  if (!chosen) chosen = std::make_shared<DefaultStrategy>();
  say << "Strategy: " << chosen->describe() << "\n  because: " << why << "\n"
      << "num_replicas_in_sync = " << chosen->num_replicas_in_sync() << "\n";
  if (!quiet_rank()) out << say.str() << std::flush;
  return chosen;
}

}  // namespace kiln::distribute
