#include "kiln/runtime/cuda/cuda_executable_impl.h"

#include <cstring>

#include "kiln/compiler/arena_allocator.h"
#include "kiln/core/check.h"
#include "kiln/runtime/cuda/cublaslt_matmul_impl.h"
#include "kiln/runtime/cuda/cuda_device_impl.h"
#include "kiln/runtime/cuda/cuda_driver_impl.h"

namespace kiln::cuda {

CudaExecutable::CudaExecutable(std::unique_ptr<ir::Module> module, CudaDevice* device)
    : module_(std::move(module)), device_(device), workspace_bytes_(CublasLtMatmul::kWorkspaceBytes) {}

CudaExecutable::~CudaExecutable() {
  // The loaded modules and cuBLASLt plans the queued steps use go with the program.
  if (device_ == nullptr) return;
  try {
    device_->wait_on_host(last_done_);
  } catch (...) {  // a failed step's error was the caller's to see at its outputs
  }
}

int CudaExecutable::add_value(const Shape& shape, int argument, runtime::Buffer constant) {
  values_.push_back({shape, argument, std::move(constant)});
  return static_cast<int>(values_.size()) - 1;
}

std::vector<runtime::Buffer> CudaExecutable::execute(CudaDevice& device, std::span<const runtime::Buffer> arguments) {
  KILN_CHECK(&device == device_, "a cuda program runs on the device it was compiled for");
  const std::vector<ir::Instruction*>& params = module_->entry()->parameters();
  if (arguments.size() != params.size())
    KILN_THROW(ShapeError, "[cuda] the program takes ", params.size(), " arguments, received ", arguments.size(), ".");
  for (size_t i = 0; i < arguments.size(); ++i)
    if (!(arguments[i].shape() == params[i]->shape()))
      KILN_THROW(ShapeError, "[cuda] argument ", i, " must be ", params[i]->shape(), ", received ", arguments[i].shape(), ".");
  device.make_current();
  // The arena's values view it (the aliasing shared_ptr keeps the arena alive); the others are
  // the arguments, the constants, or buffers of their own (outputs outlive the run).
  const runtime::Buffer arena =
      arena_bytes_ > 0 ? device.allocate_for_compute(Shape(DType::kU8, {arena_bytes_})) : runtime::Buffer();
  std::vector<runtime::Buffer> buffers(values_.size());
  for (size_t v = 0; v < values_.size(); ++v) {
    const Value& val = values_[v];
    const int64_t at = v < arena_offset_.size() ? arena_offset_[v] : -1;
    buffers[v] = val.argument >= 0        ? arguments[static_cast<size_t>(val.argument)]
                 : val.constant.defined() ? val.constant
                 : at >= 0 ? runtime::Buffer(&device, val.shape, std::shared_ptr<std::byte>(arena.memory(), arena.memory().get() + at),
                                             runtime::Event())
                           : device.allocate_for_compute(val.shape);
  }
  const CUstream stream = device.compute_cu_stream();
  CudaRun queued(device, stream, std::move(buffers),
                 device.allocate_for_compute(Shape(DType::kU8, {static_cast<int64_t>(workspace_bytes_)})));
  try {
    queued.run(steps_);
  } catch (...) {
    // The steps queued before the failure may still write the temporaries: they go back to
    // the allocator (with no recorded use) only once those have run.
    queued.wait();
    throw;
  }
  // Outputs: an aliased one is written into its argument (a variable's buffer stays where it
  // is); the others are their own buffers (a copy where the output is an argument or constant).
  // Aliased copies go last, so an output that reads an argument sees its value before the update.
  std::vector<runtime::Buffer> results(outputs_.size());
  auto copy = [&](const runtime::Buffer& to, size_t v) {
    const int64_t bytes = values_[v].shape.byte_size();
    if (bytes > 0 && !to.shares_memory_with(queued.buffer(static_cast<int>(v))))
      check(driver().cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(to.device_address()), queued.address(static_cast<int>(v)),
                                       static_cast<size_t>(bytes), stream),
            "cuMemcpyDtoDAsync (output)");
  };
  std::vector<int> alias_of(outputs_.size(), -1);
  for (const ir::OutputAlias& a : module_->aliases()) alias_of.at(static_cast<size_t>(a.output_index)) = a.parameter_index;
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const size_t v = static_cast<size_t>(outputs_[o]);
    if (alias_of[o] >= 0) continue;
    results[o] = queued.buffer(static_cast<int>(v));
    if (values_[v].argument >= 0 || values_[v].constant.defined()) {
      results[o] = device.allocate_for_compute(values_[v].shape);
      copy(results[o], v);
    }
  }
  for (size_t o = 0; o < outputs_.size(); ++o) {
    if (alias_of[o] < 0) continue;
    results[o] = arguments[static_cast<size_t>(alias_of[o])];
    copy(results[o], static_cast<size_t>(outputs_[o]));
  }
  if (!finish_checks_.empty()) {
    // NCCL steps: each replica's execute must throw ReplicaAborted itself when a peer failed
    // (MirroredStrategy joins the replicas on that), so these programs still end in a host wait.
    try {
      device.wait_cu_stream(stream);
    } catch (...) {
      for (const auto& finished : finish_checks_) finished();  // an abort explains the failure
      throw;
    }
    for (const auto& finished : finish_checks_) finished();
    return results;
  }
  // No host wait: the outputs are ready when the step has run on the GPU. Everything the step
  // touches stays the compute stream's until then (stream order): a later step may reuse a
  // temporary at once, a copy or the host only after this event.
  const runtime::Event done = device.record_compute_done(str_cat("the program ", module_->name()));
  // The arena's views are the arena's use (a view the allocator does not know as a block). An
  // output may be one: a while's carried output trades buffers with the body's value in the
  // arena, and its view keeps the whole arena allocated while the caller holds it.
  const std::byte* arena_begin = arena.defined() ? arena.device_address() : nullptr;
  const auto record = [&](const runtime::Buffer& b) {
    if (arena_begin == nullptr || b.device_address() < arena_begin || b.device_address() >= arena_begin + arena_bytes_)
      device.record_compute_use(b, done);
  };
  for (const runtime::Buffer& b : queued.buffers()) record(b);
  if (arena.defined()) device.record_compute_use(arena, done);
  device.record_compute_use(queued.workspace(), done);
  for (runtime::Buffer& r : results) {
    record(r);
    r = runtime::Buffer(&device, r.shape(), r.memory(), done);
  }
  {
    std::lock_guard lock(last_done_mutex_);
    last_done_ = done;
  }
  return results;
}

std::vector<HostTensor> CudaExecutable::run(std::span<HostTensor> arguments) {
  std::vector<runtime::Buffer> on_device;
  KILN_CHECK(device_ != nullptr, "a program lowered without a GPU cannot run");
  for (const HostTensor& a : arguments) on_device.push_back(device_->to_device(a));
  std::vector<runtime::Buffer> outs = device_->execute(*this, on_device);
  std::vector<HostTensor> results;
  for (size_t o = 0; o < outs.size(); ++o) {
    HostTensor r = device_->to_host(outs[o]);
    for (const ir::OutputAlias& a : module_->aliases())
      if (a.output_index == static_cast<int>(o)) {
        HostTensor& arg = arguments[static_cast<size_t>(a.parameter_index)];
        std::memcpy(arg.raw_data(), r.raw_data(), static_cast<size_t>(r.byte_size()));
        r = arg;
      }
    results.push_back(std::move(r));
  }
  return results;
}

int64_t CudaExecutable::planned_peak_bytes() const {
  int64_t total = static_cast<int64_t>(workspace_bytes_) + arena_bytes_;
  for (size_t v = 0; v < values_.size(); ++v)
    if (v >= arena_offset_.size() || arena_offset_[v] < 0) total += values_[v].shape.byte_size();
  return total;
}

namespace {

// Every value `step` (and its nested lists) reads or writes, appended to `out`.
void referenced_values(const CudaStep& step, std::vector<int>& out) {
  out.insert(out.end(), step.reads.begin(), step.reads.end());
  out.insert(out.end(), step.writes.begin(), step.writes.end());
  for (const NestedSteps& list : step.nested)
    for (const CudaStep& s : list.steps) referenced_values(s, out);
}

}  // namespace

void CudaExecutable::plan_arena() {
  const size_t n = values_.size();
  std::vector<int> first(n, -1), last(n, -1);
  std::vector<std::vector<int>> groups;  // the values each control step touches
  for (size_t i = 0; i < steps_.size(); ++i) {
    std::vector<int> used;
    referenced_values(steps_[i], used);
    for (int v : used) {
      const auto u = static_cast<size_t>(v);
      if (first[u] < 0) first[u] = static_cast<int>(i);
      last[u] = static_cast<int>(i);
    }
    if (!steps_[i].nested.empty() && !used.empty()) groups.push_back(std::move(used));
  }
  // A control step trades buffers among the values it touches (a while's carried values and
  // the body's results): they share one lifetime, so a trade never hands a value bytes that
  // another value takes after its own end. Groups sharing a value widen each other: repeat
  // until nothing moves.
  for (bool moved = true; moved;) {
    moved = false;
    for (const std::vector<int>& g : groups) {
      int lo = first[static_cast<size_t>(g.front())], hi = last[static_cast<size_t>(g.front())];
      for (int v : g) lo = std::min(lo, first[static_cast<size_t>(v)]), hi = std::max(hi, last[static_cast<size_t>(v)]);
      for (int v : g) {
        const auto u = static_cast<size_t>(v);
        moved = moved || first[u] != lo || last[u] != hi;
        first[u] = lo;
        last[u] = hi;
      }
    }
  }
  std::vector<bool> own(n, false);
  for (int o : outputs_) own[static_cast<size_t>(o)] = true;
  std::vector<compiler::Lifetime> lifetimes;
  std::vector<size_t> placed;
  for (size_t v = 0; v < n; ++v) {
    if (own[v] || values_[v].argument >= 0 || values_[v].constant.defined() || first[v] < 0) continue;
    lifetimes.push_back({values_[v].shape.byte_size(), first[v], last[v]});
    placed.push_back(v);
  }
  const compiler::PackedArena packed = compiler::pack_lifetimes(lifetimes, 256);  // cudaMalloc's alignment
  arena_offset_.assign(n, -1);
  for (size_t k = 0; k < placed.size(); ++k) arena_offset_[placed[k]] = packed.offsets[k];
  arena_bytes_ = packed.bytes;
}

namespace {

int count_steps(const std::vector<CudaStep>& steps) {
  int n = 0;
  for (const CudaStep& s : steps) {
    if (!s.control) ++n;
    for (const NestedSteps& list : s.nested) n += count_steps(list.steps);
  }
  return n;
}

void describe_steps(const std::vector<CudaStep>& steps, const std::string& indent, std::string& out) {
  for (const CudaStep& s : steps) {
    out += indent + s.label + " (";
    for (size_t i = 0; i < s.reads.size(); ++i) out += str_cat(i > 0 ? ", " : "", "v", s.reads[i]);
    out += ") ->";
    for (int w : s.writes) out += str_cat(" v", w);
    out += "\n";
    for (const NestedSteps& list : s.nested) {
      out += str_cat(indent, "  ", list.name, ":\n");
      describe_steps(list.steps, indent + "    ", out);
    }
  }
}

}  // namespace

int CudaExecutable::kernel_count() const { return count_steps(steps_); }

std::string CudaExecutable::describe() const {
  std::string out;
  describe_steps(steps_, "", out);
  return out;
}

CudaRun::CudaRun(CudaDevice& device, CUstream stream, std::vector<runtime::Buffer> buffers, runtime::Buffer workspace)
    : device_(device), stream_(stream), buffers_(std::move(buffers)), workspace_(std::move(workspace)) {
  for (const runtime::Buffer& b : buffers_) address_.push_back(reinterpret_cast<CUdeviceptr>(b.device_address()));
}

void CudaRun::run(const std::vector<CudaStep>& steps) {
  const CUdeviceptr workspace = reinterpret_cast<CUdeviceptr>(workspace_.device_address());
  for (const CudaStep& s : steps) {
    if (s.control) {
      s.control(*this, s.nested);
      continue;
    }
    in_.clear();
    out_.clear();
    for (int r : s.reads) in_.push_back(address(r));
    for (int w : s.writes) out_.push_back(address(w));
    s.run(stream_, in_.data(), out_.data(), workspace);
  }
}

void CudaRun::swap(int a, int b) {
  std::swap(buffers_.at(static_cast<size_t>(a)), buffers_.at(static_cast<size_t>(b)));
  std::swap(address_[static_cast<size_t>(a)], address_[static_cast<size_t>(b)]);
}

void CudaRun::copy(int from, int to) {
  const int64_t bytes = buffer(to).shape().byte_size();
  KILN_CHECK(buffer(from).shape().byte_size() == bytes, "a copy between values of different sizes");
  if (bytes > 0)
    check(driver().cuMemcpyDtoDAsync(address(to), address(from), static_cast<size_t>(bytes), stream_),
          "cuMemcpyDtoDAsync (control flow)");
}

void CudaRun::read_to_host(int v, void* host, size_t bytes) {
  check(driver().cuMemcpyDtoHAsync(host, address(v), bytes, stream_), "cuMemcpyDtoHAsync (predicate)");
  device_.wait_cu_stream(stream_);
}

void CudaRun::wait() {
  try {
    device_.wait_cu_stream(stream_);
  } catch (const Error&) {
    // The error being thrown already says what failed; a stream that failed too has stopped.
  }
}

}  // namespace kiln::cuda
