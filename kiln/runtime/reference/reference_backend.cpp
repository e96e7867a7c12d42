// The reference backend's target, executable and backend: compile = verify + legality;
// run = check arguments, ir::evaluate, then write aliased outputs into their arguments.
#include "kiln/runtime/reference/reference_backend.h"

#include <cstring>
#include <limits>

#include "kiln/compiler/passes/backend_legality.h"
#include "kiln/core/check.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/ir/verifier.h"
#include "kiln/runtime/host_device.h"

namespace kiln::runtime {
namespace {

class ReferenceTargetInfo final : public compiler::TargetInfo {
 public:
  explicit ReferenceTargetInfo(std::set<ir::Opcode> unsupported) : unsupported_(std::move(unsupported)) {}

  std::string name() const override { return "reference"; }
  compiler::Decision supports(const ir::Instruction& instruction) const override {
    if (!unsupported_.count(instruction.opcode())) return compiler::Decision::yes();
    return compiler::Decision::no(
        str_cat("this reference backend was made without ", ir::opcode_name(instruction.opcode())),
        "run the model on the 'cpu' backend, or express the op with ops this backend supports");
  }
  /// The host's memory is the reference backend's only limit; it plans nothing.
  int64_t memory_limit_bytes() const override { return std::numeric_limits<int64_t>::max(); }

 private:
  std::set<ir::Opcode> unsupported_;
};

class ReferenceExecutable final : public Executable {
 public:
  ReferenceExecutable(std::unique_ptr<ir::Module> module, std::string label)
      : module_(std::move(module)), label_(label.empty() ? module_->name() : std::move(label)) {}

  std::vector<HostTensor> run(std::span<HostTensor> arguments) override {
    check_arguments(arguments);
    std::vector<HostTensor> outputs =
        ir::evaluate(*module_, std::span<const HostTensor>(arguments.data(), arguments.size()));
    // evaluate() never returns storage shared with an argument, so the copies cannot overlap.
    for (const ir::OutputAlias& alias : module_->aliases()) {
      HostTensor& target = arguments[static_cast<size_t>(alias.parameter_index)];
      HostTensor& value = outputs[static_cast<size_t>(alias.output_index)];
      std::memcpy(target.raw_data(), value.raw_data(), static_cast<size_t>(value.byte_size()));
      value = target;
    }
    return outputs;
  }

  /// Every instruction's buffer at once: a crude upper bound, as nothing is reused.
  const ir::Module* lowered_module() const override { return module_.get(); }
  int64_t planned_peak_bytes() const override {
    int64_t total = 0;
    for (const auto& computation : module_->computations())
      for (const auto& inst : computation->instructions()) total += inst->shape().byte_size();
    return total;
  }

  int kernel_count() const override {
    int count = 0;
    for (const ir::Instruction* inst : module_->entry()->post_order())
      if (inst->opcode() != ir::Opcode::kParameter && inst->opcode() != ir::Opcode::kConstant) ++count;
    return count;
  }

  std::string describe() const override { return ir::to_string(*module_, {.show_sources = true}); }

 private:
  void check_arguments(std::span<HostTensor> arguments) const {
    const auto& params = module_->entry()->parameters();
    if (arguments.size() != params.size())
      KILN_THROW(ShapeError, "[", label_, "] expected ", params.size(), " arguments, received ",
                 arguments.size(), ". Hint: pass one tensor per parameter, in order.");
    for (size_t i = 0; i < params.size(); ++i) {
      const HostTensor& a = arguments[i];
      if (a.defined() && a.shape() == params[i]->shape()) continue;
      KILN_THROW(ShapeError, "[", label_, "] parameter \"", params[i]->name(), "\" (argument ", i,
                 ") expected ", params[i]->shape(), ", received ",
                 a.defined() ? str_cat(a.shape()) : std::string("an undefined tensor"),
                 ". Hint: the program was compiled for that shape; retrace for a new one.");
    }
  }

  std::unique_ptr<ir::Module> module_;
  std::string label_;
};

class ReferenceBackend final : public Backend {
 public:
  explicit ReferenceBackend(std::set<ir::Opcode> unsupported) : target_(std::move(unsupported)) {}

  std::string name() const override { return "reference"; }
  Device& device() override { return host_device(); }
  const compiler::TargetInfo& target_info() const override { return target_; }

  // Every output of the reference evaluator is its own sum in index order: batch-invariant as is.
  bool has_batch_invariant_kernels() const override { return true; }
  std::unique_ptr<Executable> compile(std::unique_ptr<ir::Module> module,
                                      const CompileOptions& options) override {
    KILN_CHECK(module != nullptr, "compile() got no module");
    ir::verify(*module);
    compiler::check_legality(*module, target_);
    // The reference evaluator runs one replica alone: its all_reduce is the identity.
    if (options.collectives && options.collectives->num_replicas() > 1)
      KILN_THROW(CompileError, "[", options.label.empty() ? module->name() : options.label,
                 "] the reference backend runs one replica, but the strategy has ",
                 options.collectives->num_replicas(), ". Hint: run replicated steps on the cpu backend.");
    return std::make_unique<ReferenceExecutable>(std::move(module), options.label);
  }

 private:
  ReferenceTargetInfo target_;
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend(std::set<ir::Opcode> unsupported) {
  return std::make_unique<ReferenceBackend>(std::move(unsupported));
}

}  // namespace kiln::runtime
