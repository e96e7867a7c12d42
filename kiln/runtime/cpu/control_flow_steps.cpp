// The while and conditional steps of control_flow_steps.h.
#include "kiln/runtime/cpu/control_flow_steps.h"

#include <algorithm>
#include <cstring>

#include "kiln/core/check.h"
#include "kiln/ir/computation.h"
#include "kiln/ir/shape_inference.h"
#include "kiln/runtime/cpu/cpu_executable.h"

namespace kiln::cpu {
namespace {

void copy_into(HostTensor& dst, const void* src) {
  std::memcpy(dst.raw_data(), src, static_cast<size_t>(dst.byte_size()));
}

// The bytes of the tensors that own storage (views and empty slots hold none).
int64_t owned_bytes(const std::vector<HostTensor>& tensors) {
  int64_t bytes = 0;
  for (const HostTensor& t : tensors)
    if (t.storage() != nullptr) bytes += t.byte_size();
  return bytes;
}

// What a nested program holds beyond its arguments and outputs (the step's buffers).
int64_t private_bytes(const runtime::Executable& program) {
  const compiler::MemoryPlan& plan = dynamic_cast<const CpuExecutable&>(program).plan();
  return program.planned_peak_bytes() - plan.argument_bytes - plan.output_bytes;
}

}  // namespace

std::vector<size_t> loop_variant_indices(const ir::Computation& body) {
  std::vector<size_t> out;
  for (size_t i = 0; i < body.outputs().size(); ++i)
    if (body.outputs()[i] != body.parameter(i)) out.push_back(i);
  return out;
}

std::vector<ir::OutputAlias> in_place_loop_outputs(const ir::Computation& body, const std::vector<size_t>& variant) {
  std::vector<ir::OutputAlias> out;
  const auto& outs = body.outputs();
  for (size_t k = 0; k < variant.size(); ++k) {
    const ir::Instruction* v = outs[variant[k]];
    const ir::Instruction* p = body.parameter(variant[k]);
    if (v->opcode() != ir::Opcode::kDynamicUpdateSlice || v->operand(0) != p || p->users().size() != 1) continue;
    if (std::count(outs.begin(), outs.end(), v) != 1) continue;
    out.push_back({static_cast<int>(k), static_cast<int>(variant[k])});
  }
  return out;
}

WhileStep::WhileStep(const ir::Instruction& loop, const CompileNested& compile)
    : variant_(loop_variant_indices(*loop.attrs().body)),
      pred_(Shape(DType::kBool, {})),
      trip_count_(loop.attrs().trip_count),
      where_(str_cat("while %", loop.id(), loop.source().empty() ? "" : " (" + loop.source() + ")")) {
  condition_ = compile(*loop.attrs().condition, nullptr, {}, loop.attrs().condition->name());
  // A body that changes nothing has no program: the loop either never runs or never ends.
  if (!variant_.empty()) {
    const std::vector<ir::OutputAlias> aliases = in_place_loop_outputs(*loop.attrs().body, variant_);
    in_place_.assign(variant_.size(), false);
    for (const ir::OutputAlias& a : aliases) in_place_[static_cast<size_t>(a.output_index)] = true;
    body_ = compile(*loop.attrs().body, &variant_, aliases, loop.attrs().body->name());
  }
  // A loop invariant that nobody reads from the loop's results (a scan's xs, a captured
  // batch) is a view of its operand during run(): copying it would cost its size per run.
  std::vector<bool> kept(loop.operand_count(), false);
  for (const ir::Instruction* u : loop.users()) {
    if (u->opcode() == ir::Opcode::kGetTupleElement) kept[static_cast<size_t>(u->attrs().tuple_index)] = true;
    else kept.assign(kept.size(), true);
  }
  for (size_t i : variant_) kept[i] = true;
  for (const Shape& s : ir::tuple_result_shapes(loop)) {
    const size_t i = results_.size();
    if (!kept[i]) viewed_.push_back(i);
    results_.push_back(kept[i] ? HostTensor::uninitialized(s) : HostTensor::view(s, nullptr));
  }
  // An in-place value needs no second buffer: its slot in next_ stays empty.
  for (size_t k = 0; k < variant_.size(); ++k)
    next_.push_back(in_place_[k] ? HostTensor() : HostTensor::uninitialized(results_[variant_[k]].shape()));
}

void WhileStep::run(const void* const* operands) {
  for (size_t i = 0, v = 0; i < results_.size(); ++i) {
    if (v < viewed_.size() && viewed_[v] == i) {
      results_[i] = HostTensor::view(results_[i].shape(), const_cast<void*>(operands[i]));
      ++v;
    } else {
      copy_into(results_[i], operands[i]);
    }
  }
  int64_t iterations = 0;
  HostTensor pred_out[1] = {pred_};
  while (true) {
    condition_->run_into(results_, pred_out);
    if (!pred_.data<bool>()[0]) break;
    if (body_ == nullptr)
      KILN_THROW(ValueError, "[", where_, "] the loop body changes no value and the condition holds: the loop "
                 "would never end. Hint: update the values the condition reads in the body.");
    std::vector<HostTensor> produced = body_->run_into(results_, next_);
    for (size_t k = 0; k < variant_.size(); ++k) {
      HostTensor& expected = in_place_[k] ? results_[variant_[k]] : next_[k];
      KILN_CHECK(produced[k].shares_storage_with(expected), where_, ": body output ", k, " was not written in place");
      if (!in_place_[k]) std::swap(results_[variant_[k]], next_[k]);
    }
    ++iterations;
  }
  KILN_CHECK(trip_count_ < 0 || iterations == trip_count_, where_, " says trip_count=", trip_count_, " but ran ",
             iterations, " iterations");
}

int64_t WhileStep::held_bytes() const {
  const int64_t bytes = owned_bytes(results_) + owned_bytes(next_) + private_bytes(*condition_);
  return body_ != nullptr ? bytes + private_bytes(*body_) : bytes;
}

int64_t WhileStep::activation_bytes() const {
  const int64_t bytes = condition_->planned_activation_bytes();
  return body_ != nullptr ? bytes + body_->planned_activation_bytes() : bytes;
}

ConditionalStep::ConditionalStep(const ir::Instruction& conditional, const CompileNested& compile)
    : selector_(conditional.operand(0)->dtype()) {
  for (const ir::Computation* b : conditional.attrs().branches) branches_.push_back(compile(*b, nullptr, {}, b->name()));
  for (size_t i = 1; i < conditional.operand_count(); ++i) operand_shapes_.push_back(conditional.operand(i)->shape());
  for (const Shape& s : ir::tuple_result_shapes(conditional)) results_.push_back(HostTensor::uninitialized(s));
}

int64_t ConditionalStep::held_bytes() const {
  int64_t bytes = owned_bytes(results_);
  for (const auto& b : branches_) bytes += private_bytes(*b);
  return bytes;
}

int64_t ConditionalStep::activation_bytes() const {
  int64_t bytes = 0;
  for (const auto& b : branches_) bytes += b->planned_activation_bytes();
  return bytes;
}

void ConditionalStep::run(const void* const* operands) {
  size_t pick = 0;
  if (selector_ == DType::kBool) {
    pick = *static_cast<const bool*>(operands[0]) ? 0 : 1;
  } else {
    const int32_t i = *static_cast<const int32_t*>(operands[0]);
    pick = i < 0 || i >= static_cast<int32_t>(branches_.size()) ? branches_.size() - 1 : static_cast<size_t>(i);
  }
  // Views of the operands: a branch program has no aliases, so it only reads its arguments.
  std::vector<HostTensor> args;
  for (size_t i = 0; i < operand_shapes_.size(); ++i)
    args.push_back(HostTensor::view(operand_shapes_[i], const_cast<void*>(operands[i + 1])));
  std::vector<HostTensor> produced = branches_[pick]->run_into(args, results_);
  for (size_t k = 0; k < results_.size(); ++k)
    if (!produced[k].shares_storage_with(results_[k])) copy_into(results_[k], produced[k].raw_data());
}

}  // namespace kiln::cpu
