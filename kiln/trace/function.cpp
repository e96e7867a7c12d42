// Function: signature checks, tracing into a TraceContext, compile + cache, and running with
// the captured variables' storage as the trailing arguments.
#include "kiln/trace/function.h"

#include <chrono>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "kiln/core/logging.h"
#include "kiln/ir/printer.h"
#include "kiln/trace/eager.h"
#include "kiln/trace/device_values.h"
#include "kiln/trace/replica_context.h"
#include "kiln/trace/trace_context.h"

namespace kiln {

Function::Function(std::string name, Fn fn, FunctionOptions options)
    : name_(std::move(name)), fn_(std::move(fn)), options_(std::move(options)) {
  if (!options_.backend) options_.backend = trace::default_backend();
}

Function::Function(std::string name, std::function<Tensor(const std::vector<Tensor>&)> fn,
                   FunctionOptions options)
    : Function(std::move(name),
               Fn([fn = std::move(fn)](const std::vector<Tensor>& in) {
                 return std::vector<Tensor>{fn(in)};
               }),
               std::move(options)) {}

namespace {
std::vector<Shape> shapes_of(const std::vector<HostTensor>& args) {
  std::vector<Shape> out;
  for (const HostTensor& a : args) out.push_back(a.shape());
  return out;
}
}  // namespace

runtime::Backend& Function::backend_here() const {
  const trace::ReplicaContext* replica = trace::current_replica_context();
  return replica != nullptr && replica->backend ? *replica->backend : *options_.backend;
}

std::string Function::signature_text(const std::vector<HostTensor>& args) { return signature_text(shapes_of(args)); }

std::string Function::signature_text(const std::vector<Shape>& shapes) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shapes.size(); ++i) os << (i ? ", " : "") << shapes[i];
  os << ")";
  return os.str();
}

void Function::check_signature(const std::vector<Shape>& args) const {
  if (!options_.input_signature) return;
  const std::vector<TensorSpec>& specs = *options_.input_signature;
  auto input_name = [&](size_t i) {
    return specs[i].name.empty() ? std::string() : " '" + specs[i].name + "'";
  };
  const char* hint = " Hint: batch with drop_remainder=true so every batch has the same shape,"
                     " or declare the shape the data has.";
  for (size_t i = 0; i < specs.size(); ++i)
    for (size_t d = 0; d < specs[i].shape.size(); ++d)
      if (specs[i].shape[d] < 0)
        KILN_THROW(CompileError, "[function '", name_, "'] input ", i, input_name(i),
                   " has a dynamic dimension ", d, " (declared ", dims_to_string(specs[i].shape),
                   "): Kiln compiles static shapes only.", hint);
  if (args.size() != specs.size())
    KILN_THROW(CompileError, "[function '", name_, "'] expected ", specs.size(),
               " inputs (the input_signature), received ", args.size(), " ",
               signature_text(args), ".");
  for (size_t i = 0; i < specs.size(); ++i) {
    Shape expected(specs[i].dtype, specs[i].shape);
    if (!(args[i] == expected))
      KILN_THROW(CompileError, "[function '", name_, "'] input ", i, input_name(i),
                 " expected ", expected, ", received ", args[i],
                 args[i].rank() != expected.rank() ? " (a different rank)." : ".", hint);
  }
}

Function::Compiled Function::trace_and_compile(const std::vector<Shape>& args,
                                               const std::string& signature) {
  auto start = std::chrono::steady_clock::now();
  // Under a strategy each replica traces (one at a time) and compiles its own executable,
  // bound to the collectives its all_reduce instructions meet.
  const trace::ReplicaContext* replica = trace::current_replica_context();
  trace::TraceContext ctx(name_);
  std::vector<Tensor> outputs;
  {
    trace::TraceScope scope(&ctx);
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < args.size(); ++i) {
      const auto& specs = options_.input_signature;
      std::string input = specs && !(*specs)[i].name.empty() ? (*specs)[i].name : str_cat("arg", i);
      inputs.push_back(ctx.add_input(args[i], input));
    }
    outputs = fn_(inputs);
  }
  Compiled c;
  c.num_outputs = outputs.size();
  c.variables = ctx.captured_variables();
  // Every replica's copies exist before any replica runs this step (which updates its own).
  if (replica != nullptr)
    for (const auto& v : c.variables) trace::ensure_mirrors(*v, replica->num_local_replicas);
  std::unique_ptr<ir::Module> module = ctx.finish(outputs);
  c.aliases = module->aliases();
  last_ir_ = ir::to_string(*module);
  runtime::CompileOptions compile_options;
  compile_options.label = name_;
  compile_options.batch_invariant = options_.batch_invariant;
  if (replica != nullptr) {
    compile_options.collectives = replica->collectives;
    compile_options.replica_id = replica->replica_id;
  }
  c.executable = backend_here().compile(std::move(module), compile_options);
  if (replica != nullptr && replica->replica_id > 0) return c;  // counted and logged once, for replica 0
  ++trace_count_;

  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream msg;
  msg << "function '" << name_ << "': traced and compiled for " << signature << " in "
      << std::fixed << std::setprecision(1) << ms << " ms";
  log(LogLevel::kInfo, msg.str());
  if (trace_count_ > options_.max_traces_before_warning && !warned_) {
    warned_ = true;
    log(LogLevel::kWarning,
        str_cat("function '", name_, "' has been traced ", trace_count_,
                " times, once per distinct input signature (latest ", signature,
                "). Each retrace recompiles the whole step, which is expensive. Hint: feed "
                "fixed shapes: batch with drop_remainder=true (or pad the last batch), and "
                "declare input_signature to catch a changing shape as an error."));
  }
  return c;
}

Function::Compiled& Function::compiled_for(const std::vector<Shape>& args) {
  check_signature(args);
  const trace::ReplicaContext* replica = trace::current_replica_context();
  const int replica_id = replica != nullptr ? replica->replica_id : 0;
  const int entry_replica = replica != nullptr ? replica_id : -1;
  std::lock_guard<std::mutex> lock(*mutex_);
  Compiled* compiled = nullptr;
  for (CacheEntry& e : cache_)
    if (e.replica_id == entry_replica && e.shapes == args) compiled = &e.compiled;
  if (compiled == nullptr) {
    cache_.push_back({args, entry_replica, trace_and_compile(args, signature_text(args))});
    compiled = &cache_.back().compiled;
  }
  if (replica_id == 0) last_executable_ = compiled->executable.get();
  return *compiled;
}

void Function::compile(const std::vector<Shape>& signature) { compiled_for(signature); }

std::vector<HostTensor> Function::operator()(const std::vector<HostTensor>& args) {
  Compiled& c = compiled_for(shapes_of(args));
  // Inputs go to the device (no copy on a host device); variables are already there.
  runtime::Device& device = backend_here().device();
  std::vector<runtime::Buffer> run_args;
  run_args.reserve(args.size() + c.variables.size());
  for (const HostTensor& a : args) run_args.push_back(device.to_device(a));
  return run(c, std::move(run_args));
}

std::vector<HostTensor> Function::call_on_device(const std::vector<runtime::Buffer>& args) {
  std::vector<Shape> shapes;
  shapes.reserve(args.size());
  runtime::Device& device = backend_here().device();
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].defined())
      KILN_THROW(ValueError, "[", name_, "] input ", i, " is an undefined buffer.");
    if (&args[i].device() != &device)
      KILN_THROW(ValueError, "[", name_, "] input ", i, " lives on ", args[i].device().name(), ", but this function runs on ",
                 device.name(), ". Hint: prefetch the dataset to the backend's device (prefetch_to_device(backend->device())).");
    shapes.push_back(args[i].shape());
  }
  Compiled& c = compiled_for(shapes);
  std::vector<runtime::Buffer> run_args;
  run_args.reserve(args.size() + c.variables.size());
  run_args.insert(run_args.end(), args.begin(), args.end());
  return run(c, std::move(run_args));
}

std::vector<HostTensor> Function::run(Compiled& c, std::vector<runtime::Buffer> run_args) {
  const trace::ReplicaContext* replica = trace::current_replica_context();
  const int replica_id = replica != nullptr ? replica->replica_id : 0;
  const size_t num_args = run_args.size();
  runtime::Device& device = backend_here().device();
  for (const auto& v : c.variables) run_args.push_back(trace::device_value(*v, replica_id, device));
  std::vector<runtime::Buffer> results = device.execute(*c.executable, run_args);
  KILN_CHECK(results.size() >= c.num_outputs, "executable of '", name_, "' returned ",
             results.size(), " outputs, expected at least ", c.num_outputs);
  for (const ir::OutputAlias& alias : c.aliases) {
    const auto v = static_cast<size_t>(alias.parameter_index) - num_args;
    KILN_CHECK(alias.parameter_index >= static_cast<int>(num_args) && v < c.variables.size(), "output ",
               alias.output_index, " of '", name_, "' is aliased to input ", alias.parameter_index, ", not a variable");
    trace::note_device_update(*c.variables[v], replica_id, results.at(static_cast<size_t>(alias.output_index)));
  }
  std::vector<HostTensor> outputs;
  outputs.reserve(c.num_outputs);
  for (size_t k = 0; k < c.num_outputs; ++k)
    outputs.push_back(device.host_addressable() ? device.host_view(results[k]) : device.to_host(results[k]));
  return outputs;
}

}  // namespace kiln
