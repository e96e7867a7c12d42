// TracedMap: trace per element signature, batch per batch signature, run on pooled executables
// with the calling thread's OpenMP team limited to itself (a pipeline worker must not open a
// team of its own beside the train step's).
#include "kiln/trace/traced_map.h"

#include <omp.h>

#include <cstring>
#include <sstream>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/trace/batching.h"
#include "kiln/trace/eager.h"
#include "kiln/trace/trace_context.h"

namespace kiln::trace {
namespace {

std::string signature_of(const std::vector<Shape>& shapes) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shapes.size(); ++i) os << (i ? ", " : "") << shapes[i];
  return os.str() + ")";
}

std::vector<Shape> shapes_of(const std::vector<HostTensor>& ts) {
  std::vector<Shape> out;
  for (const HostTensor& t : ts) out.push_back(t.shape());
  return out;
}

// One thread for the OpenMP kernels this thread runs, while it lives.
class SingleThreadTeam {
 public:
  SingleThreadTeam() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~SingleThreadTeam() { omp_set_num_threads(saved_); }
  SingleThreadTeam(const SingleThreadTeam&) = delete;
  SingleThreadTeam& operator=(const SingleThreadTeam&) = delete;

 private:
  int saved_;
};

}  // namespace

TracedMap::TracedMap(std::string name, size_t arity, Fn fn, std::shared_ptr<runtime::Backend> backend)
    : name_(std::move(name)),
      arity_(arity),
      fn_(std::move(fn)),
      backend_(std::move(backend)),
      pool_(data::BufferPool::create(/*max_free=*/16)) {
  if (!backend_) backend_ = default_backend();
}

std::string TracedMap::stage() const { return data::map_stage_name(name_); }

int TracedMap::trace_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trace_count_;
}

std::string TracedMap::not_batched_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return not_batched_;
}

void TracedMap::note_signature(const std::string& signature) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (element_signatures_.count(signature) != 0) return;
  if (static_cast<int>(element_signatures_.size()) >= kMaxSignatures) {
    std::string seen;
    for (const std::string& s : element_signatures_) seen += (seen.empty() ? "" : ", ") + s;
    KILN_THROW(DataError, stage(), " the function has been traced for ", kMaxSignatures,
               " element shapes (", seen, ") and now meets ", signature,
               ": its input has no static shape, and Kiln compiles one program per shape. Hint: pad "
               "or crop the elements to a few fixed shapes before this map, or write the function "
               "over HostTensors (it then runs as plain C++).");
  }
  element_signatures_.insert(signature);
}

std::unique_ptr<ir::Module> TracedMap::trace_element(const std::vector<Shape>& element, const std::string& signature) {
  const std::string label = name_.empty() ? "map" : name_;
  TraceContext ctx(label);
  std::vector<Tensor> outputs;
  {
    TraceScope scope(&ctx);
    SourceScope source(label);
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < element.size(); ++i) inputs.push_back(ctx.add_input(element[i], str_cat("component", i)));
    outputs = fn_(inputs);
  }
  if (outputs.empty())
    KILN_THROW(DataError, stage(), " the function returned no tensors for the element ", signature, ".");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].defined())
      KILN_THROW(DataError, stage(), " the function returned an undefined tensor as output ", i,
                 " for the element ", signature, ".");
  if (!ctx.captured_variables().empty())
    KILN_THROW(DataError, stage(), " the function reads the variable '", ctx.captured_variables()[0]->name,
               "': a dataset function must depend on its element alone (it runs ahead of the "
               "train step, on other threads). Hint: pass the value in as a constant HostTensor.");
  std::unique_ptr<ir::Module> module = ctx.finish(outputs);
  std::lock_guard<std::mutex> lock(mutex_);
  ++trace_count_;
  return module;
}

std::unique_ptr<runtime::Executable> TracedMap::compile(const std::string& key, std::unique_ptr<ir::Module> module) {
  std::vector<Shape> outputs;
  for (const ir::Instruction* o : module->entry()->outputs()) outputs.push_back(o->shape());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    programs_[key].outputs = std::move(outputs);
  }
  runtime::CompileOptions options;
  options.label = name_.empty() ? "map" : name_;
  return backend_->compile(std::move(module), options);
}

std::vector<HostTensor> TracedMap::run_program(const std::string& key, std::vector<HostTensor>& args, bool pooled,
                                               const std::function<std::unique_ptr<runtime::Executable>()>& make) {
  std::unique_ptr<runtime::Executable> exe;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& idle = programs_[key].idle;
    if (!idle.empty()) {
      exe = std::move(idle.back());
      idle.pop_back();
    }
  }
  if (!exe) exe = make();
  if (!exe) return {};
  std::vector<HostTensor> buffers;
  if (pooled) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Shape& s : programs_[key].outputs) buffers.push_back(pool_->acquire(s));
  }
  std::vector<HostTensor> out;
  {
    SingleThreadTeam team;
    out = exe->run_into(args, buffers);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  programs_[key].idle.push_back(std::move(exe));
  return out;
}

std::vector<HostTensor> TracedMap::run(std::vector<HostTensor> element) {
  data::check_map_arity(name_, arity_, element);
  const std::vector<Shape> shapes = shapes_of(element);
  const std::string signature = data::shapes_string(element);
  note_signature(signature);
  const std::string key = "element " + signature;
  return run_program(key, element, /*pooled=*/false, [&] { return compile(key, trace_element(shapes, signature)); });
}

std::vector<HostTensor> TracedMap::run_batched(std::vector<HostTensor> batch) {
  data::check_map_arity(name_, arity_, batch);
  const int64_t rows = batch[0].rank() > 0 ? batch[0].dims()[0] : -1;
  for (const HostTensor& c : batch)
    KILN_CHECK(c.rank() > 0 && c.dims()[0] == rows, "run_batched needs components with one leading batch size");
  std::vector<Shape> element;
  for (const HostTensor& c : batch) element.emplace_back(c.dtype(), Dims(c.dims().begin() + 1, c.dims().end()));
  const std::string signature = signature_of(element);
  note_signature(signature);
  const std::string key = "batch " + data::shapes_string(batch);
  bool row_by_row = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    row_by_row = programs_[key].row_by_row;
  }
  if (!row_by_row) {
    std::string why_not;
    std::vector<HostTensor> out = run_program(key, batch, /*pooled=*/true, [&]() -> std::unique_ptr<runtime::Executable> {
      std::unique_ptr<ir::Module> batched = batch_module(*trace_element(element, signature), rows, &why_not);
      return batched ? compile(key, std::move(batched)) : nullptr;
    });
    if (!why_not.empty()) {  // no program: mark the signature and fall through to rows
      std::lock_guard<std::mutex> lock(mutex_);
      programs_[key].row_by_row = true;
      programs_[key].idle.clear();
      if (not_batched_.empty()) {
        not_batched_ = why_not;
        log(LogLevel::kInfo, str_cat(stage(), " runs row by row, not batched: ", why_not, "."));
      }
    } else {
      return out;
    }
  }
  // Row by row on the element program, stacking the results.
  std::vector<HostTensor> out;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<HostTensor> row;
    for (size_t c = 0; c < batch.size(); ++c) row.push_back(batch[c].slice_rows(r, r + 1).reshape(element[c].dims()));
    std::vector<HostTensor> mapped = run(std::move(row));
    if (r == 0)
      for (const HostTensor& m : mapped) out.push_back(HostTensor::uninitialized(Shape(m.dtype(), [&] {
        Dims d{rows};
        d.insert(d.end(), m.dims().begin(), m.dims().end());
        return d;
      }())));
    for (size_t c = 0; c < mapped.size(); ++c)
      std::memcpy(static_cast<std::byte*>(out[c].raw_data()) + r * mapped[c].byte_size(), mapped[c].raw_data(),
                  static_cast<size_t>(mapped[c].byte_size()));
  }
  return out;
}

}  // namespace kiln::trace
