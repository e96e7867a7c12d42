// The GPU lowering's control flow (Lowerer, cuda_lowerer_impl.h): while and conditional as
// control steps over nested programs lowered into the same value table and PTX module, and
// get_tuple_element as the tuple's value itself.
#include "kiln/runtime/cuda/cuda_lowerer_impl.h"

namespace kiln::cuda::lowering {

bool Lowerer::while_loop(const Instruction& inst) {
  add_while(inst);
  return true;
}

bool Lowerer::conditional(const Instruction& inst) {
  add_conditional(inst);
  return true;
}

// The tuple's value itself: no copy.
bool Lowerer::get_tuple_element(const Instruction& inst) {
  value_[&inst] = tuple_values_.at(inst.operand(0)).at(static_cast<size_t>(inst.attrs().tuple_index));
  return true;
}

Lowerer::Nested Lowerer::lower_nested(const ir::Computation& c, const std::vector<int>& params, std::vector<CudaStep>& list) {
  return lower_nested(*optimized(c), params, list);
}

std::shared_ptr<ir::Module> Lowerer::optimized(const ir::Computation& c) {
  std::shared_ptr<ir::Module> m = ir::extract_module(c, str_cat(label_, ".", c.name()));
  compiler::check_and_optimize(*m, target_, options_.debug, m->name());
  exe_.hold(m);
  return m;
}

Lowerer::Nested Lowerer::lower_nested(const ir::Module& m, const std::vector<int>& params, std::vector<CudaStep>& list) {
  const std::string outer_sym = sym_;
  std::vector<CudaStep>* outer_sink = sink_;
  sym_ = str_cat("n", nested_programs_++, "_");
  sink_ = &list;
  Nested n{{}, exe_.value_count()};
  lower_computation(*m.entry(), &params);
  for (const Instruction* o : m.entry()->outputs()) n.outs.push_back(value_.at(o));
  sym_ = outer_sym;
  sink_ = outer_sink;
  return n;
}

bool Lowerer::swappable(const Nested& n, size_t k) const {
  const int v = n.outs[k];
  return v >= n.owned_from && !constants_.count(v) && std::count(n.outs.begin(), n.outs.end(), v) == 1;
}

int Lowerer::add_copy_step(int from, std::vector<CudaStep>& list) {
  const Shape shape = exe_.value_shape(from);
  const int to = exe_.add_value(shape);
  list.push_back({"copy(control flow result)", {from}, {to}, copy_run(static_cast<size_t>(shape.byte_size()))});
  return to;
}

std::shared_ptr<void> Lowerer::pinned_scalar() {
  if (device_ == nullptr) return nullptr;
  device_->make_current();
  void* p = nullptr;
  check(driver().cuMemHostAlloc(&p, 8, 0), "cuMemHostAlloc (predicate)");
  return std::shared_ptr<void>(p, [](void* q) { driver().cuMemFreeHost(q); });
}

void Lowerer::add_while(const Instruction& loop) {
  const ir::Attrs& a = loop.attrs();
  const std::vector<int> operands = operand_values(loop);
  const std::shared_ptr<ir::Module> body = optimized(*a.body);
  std::vector<int> carried = operands;
  std::vector<size_t> variant;
  const ir::Computation& entry = *body->entry();
  for (size_t i = 0; i < carried.size(); ++i) {
    if (entry.outputs()[i] == entry.parameter(i)) continue;
    variant.push_back(i);
    carried[i] = exe_.add_value(exe_.value_shape(operands[i]));
    // A scan's stacked outputs: a dynamic_update_slice of the carried value, its only reader,
    // writes just the update into the carried buffer (the CPU's in_place_loop_outputs).
    const Instruction* out = entry.outputs()[i];
    const Instruction* p = entry.parameter(i);
    if (out->opcode() == Opcode::kDynamicUpdateSlice && out->operand(0) == p && p->users().size() == 1 &&
        std::count(entry.outputs().begin(), entry.outputs().end(), out) == 1 &&
        std::count(entry.outputs().begin(), entry.outputs().end(), p) == 0)
      in_place_[out] = carried[i];
  }
  std::vector<NestedSteps> nested;
  int pred = -1;
  if (a.trip_count < 0) {
    nested.push_back({"condition", {}});
    pred = lower_nested(*a.condition, carried, nested.back().steps).outs.at(0);
  }
  nested.push_back({str_cat("body", a.trip_count >= 0 ? str_cat(" (x", a.trip_count, ")") : ""), {}});
  std::vector<CudaStep>& body_steps = nested.back().steps;
  const Nested b = lower_nested(*body, carried, body_steps);
  std::vector<std::pair<int, int>> copy_in, trade;  // (operand, carried), (carried, body result)
  std::vector<int> writes;
  bool changes = false;
  for (size_t i : variant) {
    copy_in.push_back({operands[i], carried[i]});
    writes.push_back(carried[i]);
    const bool in_place = in_place_.count(entry.outputs()[i]) > 0;
    changes |= in_place;
    if (b.outs[i] == carried[i]) continue;  // in place, or the body's value is the carried one after all
    changes = true;
    trade.push_back({carried[i], swappable(b, i) ? b.outs[i] : add_copy_step(b.outs[i], body_steps)});
  }
  tuple_values_[&loop] = carried;
  const std::string where = str_cat("while %", loop.id(), loop.source().empty() ? "" : " (" + loop.source() + ")");
  CudaStep step{str_cat("while (", a.trip_count >= 0 ? str_cat("trip_count ", a.trip_count, ", no condition")
                                                     : std::string("predicate read to the host per iteration"),
                        "; ", variant.size(), " carried, ", operands.size() - variant.size(), " invariant)"),
                operands, writes, nullptr, std::move(nested), nullptr};
  const int64_t trips = a.trip_count;
  std::shared_ptr<void> host = pinned_scalar();
  step.control = [copy_in, trade, changes, trips, pred, host, where](CudaRun& run, const std::vector<NestedSteps>& lists) {
    for (const auto& [from, to] : copy_in) run.copy(from, to);
    const auto never_ends = [&] {
      KILN_THROW(ValueError, "[", where, "] the loop body changes no value and the condition holds: the loop "
                 "would never end. Hint: update the values the condition reads in the body.");
    };
    const auto iterate = [&] {
      if (!changes) never_ends();
      run.run(lists.back().steps);
      for (const auto& [x, y] : trade) run.swap(x, y);
    };
    if (trips >= 0) {
      for (int64_t i = 0; i < trips; ++i) iterate();
      return;
    }
    while (true) {
      run.run(lists.front().steps);
      run.read_to_host(pred, host.get(), 1);
      if (!*static_cast<const bool*>(host.get())) break;
      iterate();
    }
  };
  emit(std::move(step));
}

void Lowerer::add_conditional(const Instruction& cond) {
  const std::vector<int> operands = operand_values(cond);
  const std::vector<int> args(operands.begin() + 1, operands.end());
  std::vector<int> results;
  for (const Shape& shape : ir::tuple_result_shapes(cond)) results.push_back(exe_.add_value(shape));
  std::vector<NestedSteps> nested;
  std::vector<std::vector<std::pair<int, int>>> trade(cond.attrs().branches.size());
  for (size_t k = 0; k < trade.size(); ++k) {
    nested.push_back({str_cat("branch ", k), {}});
    const Nested n = lower_nested(*cond.attrs().branches[k], args, nested.back().steps);
    for (size_t r = 0; r < results.size(); ++r)
      trade[k].push_back({results[r], swappable(n, r) ? n.outs[r] : add_copy_step(n.outs[r], nested.back().steps)});
  }
  tuple_values_[&cond] = results;
  const bool boolean = cond.operand(0)->dtype() == DType::kBool;
  CudaStep step{str_cat("conditional (", trade.size(), " branches, selector read to the host)"), operands, results,
                nullptr, std::move(nested), nullptr};
  std::shared_ptr<void> host = pinned_scalar();
  const int selector = operands[0];
  step.control = [trade, boolean, selector, host](CudaRun& run, const std::vector<NestedSteps>& branches) {
    run.read_to_host(selector, host.get(), boolean ? 1 : 4);
    size_t pick = 0;
    if (boolean) {
      pick = *static_cast<const bool*>(host.get()) ? 0 : 1;
    } else {
      int32_t i = 0;
      std::memcpy(&i, host.get(), sizeof i);
      pick = i < 0 || static_cast<size_t>(i) >= branches.size() ? branches.size() - 1 : static_cast<size_t>(i);
    }
    run.run(branches[pick].steps);
    for (const auto& [result, value] : trade[pick]) run.swap(result, value);
  };
  emit(std::move(step));
}

}  // namespace kiln::cuda::lowering
