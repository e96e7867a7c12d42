// MPI calls (when KILN_HAS_MPI) and the environment probe used before MPI is initialized.
#include "kiln/distribute/mpi/mpi_world.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <mutex>

#include "kiln/core/check.h"

#if KILN_HAS_MPI
#include <mpi.h>
#endif

namespace kiln::distribute::mpi {

namespace {
constexpr const char* kWorldSizeVariables[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"};
}  // namespace

int launched_world_size() {
  for (const char* var : kWorldSizeVariables)
    if (const char* v = std::getenv(var); v != nullptr && std::atoi(v) > 0) return std::atoi(v);
  return 1;
}

std::string launched_world_size_variable() {
  for (const char* var : kWorldSizeVariables)
    if (const char* v = std::getenv(var); v != nullptr && std::atoi(v) > 0) return std::string(var) + "=" + v;
  return "";
}

namespace {
int first_set(std::initializer_list<const char*> variables) {
  for (const char* var : variables)
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') return std::atoi(v);
  return -1;
}
}  // namespace

int launched_local_rank() { return first_set({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}); }
int launched_local_size() { return first_set({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}); }

// Built on the calls below (which say how to get MPI where the build has none).
std::vector<uint8_t> exchange_id(const std::string& why_not, const std::function<std::vector<uint8_t>()>& make_id) {
  const World world = init();
  int32_t cannot = why_not.empty() ? 0 : 1;
  all_reduce_sum(DType::kI32, &cannot, 1);
  if (cannot > 0)
    KILN_THROW(ConfigError, "[mpi] ", cannot, " of ", world.size, " processes cannot join the GPU collectives",
               why_not.empty() ? " (their messages say why)." : str_cat("; this one (rank ", world.rank, "): ", why_not));
  std::vector<uint8_t> id;
  std::string error;
  if (world.rank == 0) {
    try {
      id = make_id();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  int64_t size = error.empty() ? static_cast<int64_t>(id.size()) : -1;  // rank 0's is the one sent
  broadcast(&size, sizeof size, 0);
  if (size < 0)
    KILN_THROW(ConfigError, "[mpi] rank 0 cannot make the GPU collectives' id",
               world.rank == 0 ? str_cat(": ", error) : std::string(" (its message says why)."));
  id.resize(static_cast<size_t>(size));
  broadcast(id.data(), size, 0);
  return id;
}

#if KILN_HAS_MPI

namespace {

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  KILN_THROW(ConfigError, "[mpi] ", call, " failed: ", std::string(text, static_cast<size_t>(len)), ".");
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::kF32: return MPI_FLOAT;
    case DType::kF64: return MPI_DOUBLE;
    case DType::kI32: return MPI_INT32_T;
    case DType::kI64: return MPI_INT64_T;
    default: KILN_THROW(DTypeError, "[mpi] all_reduce of ", name(t), " is not supported; use f32, f64, i32 or i64.");
  }
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

bool built_with_mpi() { return true; }

World init() {
  // MPI is process state by nature (it can be initialized once and never again), so this is
  // the one process-wide once-flag of distribute/.
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return;
    int provided = 0;
    // SERIALIZED: whichever replica thread arrives last at an all_reduce makes the call.
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
  });
  World w;
  check(MPI_Comm_size(MPI_COMM_WORLD, &w.size), "MPI_Comm_size");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank), "MPI_Comm_rank");
  return w;
}

void all_reduce_sum(DType dtype, void* data, int64_t count) {
  constexpr int64_t kChunk = int64_t{1} << 30;  // MPI counts are int
  auto* p = static_cast<std::byte*>(data);
  for (int64_t done = 0; done < count; done += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, count - done));
    check(MPI_Allreduce(MPI_IN_PLACE, p + done * static_cast<int64_t>(size_of(dtype)), n, mpi_type(dtype), MPI_SUM,
                        MPI_COMM_WORLD),
          "MPI_Allreduce");
  }
}

void all_gather(const void* in, int64_t bytes, void* out) {
  // MPI counts are int: gather chunks of every rank's bytes, then lay them out rank by rank.
  constexpr int64_t kChunk = int64_t{1} << 30;
  const World world = init();
  if (bytes <= kChunk) {
    check(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD),
          "MPI_Allgather");
    return;
  }
  std::vector<std::byte> chunks(static_cast<size_t>(kChunk * world.size));
  for (int64_t done = 0; done < bytes; done += kChunk) {
    const int64_t n = std::min(kChunk, bytes - done);
    check(MPI_Allgather(static_cast<const std::byte*>(in) + done, static_cast<int>(n), MPI_BYTE, chunks.data(),
                        static_cast<int>(n), MPI_BYTE, MPI_COMM_WORLD),
          "MPI_Allgather");
    for (int r = 0; r < world.size; ++r)
      std::memcpy(static_cast<std::byte*>(out) + r * bytes + done, chunks.data() + r * n, static_cast<size_t>(n));
  }
}

void broadcast(void* data, int64_t bytes, int root) {
  constexpr int64_t kChunk = int64_t{1} << 30;  // MPI counts are int
  auto* p = static_cast<std::byte*>(data);
  for (int64_t done = 0; done < bytes; done += kChunk)
    check(MPI_Bcast(p + done, static_cast<int>(std::min(kChunk, bytes - done)), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
}

void barrier() { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

void abort_world_on_error(int exit_code) {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
}

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<size_t>(len));
  const size_t comma = s.find(',');
  return comma == std::string::npos ? s : s.substr(0, comma);
}

#else  // no MPI in this build

namespace {
[[noreturn]] void no_mpi(const char* what) {
  KILN_THROW(ConfigError, "[mpi] ", what, ": this build has no MPI. Hint: install libopenmpi-dev and reconfigure "
             "with -DKILN_MPI=ON.");
}
}  // namespace

bool built_with_mpi() { return false; }
World init() { no_mpi("MultiWorkerMirroredStrategy"); }
void all_reduce_sum(DType, void*, int64_t) { no_mpi("all_reduce"); }
void all_gather(const void*, int64_t, void*) { no_mpi("all_gather"); }
void broadcast(void*, int64_t, int) { no_mpi("broadcast"); }
void barrier() { no_mpi("barrier"); }
void abort_world_on_error(int /*exit_code*/) {}
std::string library_version() { return "none (built without MPI)"; }

#endif

}  // namespace kiln::distribute::mpi
