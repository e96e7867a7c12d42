// Per-instruction kernel selection.
#include "kiln/runtime/cpu/lowering.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <set>
#include <string_view>
#include <type_traits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/cpu/index_kernels.h"
#include "kiln/runtime/cpu/loop_grouping.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "kiln/runtime/cpu/fixed_order_convolution.h"
#include "kiln/runtime/cpu/onednn_convolution.h"
#include "kiln/runtime/cpu/onednn_matmul.h"
#include "kiln/runtime/cpu/onednn_pooling.h"
#include "kiln/runtime/cpu/onednn_util_impl.h"
#include "kiln/runtime/cpu/reduce_kernel.h"
#include "kiln/runtime/cpu/team_impl.h"
#include "kiln/runtime/cpu/widen.h"

namespace kiln::cpu {
namespace {

using ir::Instruction;
using ir::Opcode;

// Multiply-adds x 2 of the matmuls and convolutions `inst` runs (itself or inside its fusion
// body): dot_general = 2 * out elements * contracted size; convolution = 2 * out elements *
// filter elements / output channels (each output reads KH*KW*Cin/groups inputs).
int64_t contraction_flops(const Instruction& inst) {
  if (inst.opcode() == Opcode::kFusion && inst.attrs().body != nullptr) {
    int64_t total = 0;
    for (const Instruction* i : inst.attrs().body->post_order()) total += contraction_flops(*i);
    return total;
  }
  if (inst.opcode() == Opcode::kDotGeneral) {
    int64_t k = 1;
    for (int64_t d : inst.attrs().dot.lhs_contracting) k *= inst.operand(0)->shape().dims()[static_cast<size_t>(d)];
    return 2 * inst.shape().num_elements() * k;
  }
  if (inst.opcode() == Opcode::kConvolution) {
    const Shape& filter = inst.operand(1)->shape();  // HWIO
    const int64_t out_channels = std::max<int64_t>(filter.dims().back(), 1);
    return 2 * inst.shape().num_elements() * (filter.num_elements() / out_channels);
  }
  return 0;
}

// A computation holding just `inst` over fresh parameters, so one-op kernels and fused
// kernels share one code path.
const ir::Computation* wrap(ir::Module& scratch, const Instruction& inst) {
  ir::Computation* c = scratch.add_computation(str_cat("op", inst.id()));
  ir::Builder b(c);
  std::vector<Instruction*> params;
  for (const Instruction* op : inst.operands()) params.push_back(b.parameter(op->shape(), ""));
  c->add_output(b.add(inst.opcode(), params, inst.attrs(), &inst.shape()));
  return c;
}

// The op a fallback is counted under: the opcode's name, or for a fusion its kind and the
// distinct ops of its body ("fusion(loop: add, pad)"), which are what lacked a kernel.
std::string fallback_key(const Instruction& inst) {
  if (inst.opcode() != Opcode::kFusion) return std::string(ir::opcode_name(inst.opcode()));
  std::set<std::string_view> ops;
  for (const Instruction* i : inst.attrs().body->post_order())
    if (i->opcode() != Opcode::kParameter && i->opcode() != Opcode::kConstant) ops.insert(ir::opcode_name(i->opcode()));
  std::string key = str_cat("fusion(", ir::fusion_kind_name(inst.attrs().fusion_kind), ":");
  for (std::string_view op : ops) key += str_cat(key.back() == ':' ? " " : ", ", op);
  return key + ")";
}

// `count` copies of the element `value` from `dst` on: one element, then doubling copies
// (an element-sized memcpy per element costs more than the pad itself).
void fill_repeated(std::byte* dst, int64_t count, const std::vector<std::byte>& value) {
  const int64_t total = count * static_cast<int64_t>(value.size());
  if (total == 0) return;
  std::memcpy(dst, value.data(), value.size());
  for (int64_t done = static_cast<int64_t>(value.size()); done < total; done *= 2)
    std::memcpy(dst + done, dst, static_cast<size_t>(std::min(done, total - done)));
}

class Lowerer {
 public:
  Lowerer(CpuExecutable& exe, LoopEngine engine, bool horizontal_fusion, const MatmulOptions& matmul,
          const CompileNested& compile_nested)
      : exe_(exe), engine_(engine), horizontal_fusion_(horizontal_fusion), matmul_(matmul),
        compile_nested_(compile_nested) {}

  void lower_all() {
    find_folded_converts();
    std::vector<const Instruction*> group;  // consecutive loop fusions that run as one kernel
    for (const Instruction* inst : exe_.plan().order) {
      if (horizontal_fusion_ && groupable(*inst)) {
        if (!group.empty() && !can_join(group, *inst, exe_.plan())) lower_group(group);
        group.push_back(inst);
      } else if (has_step(*inst)) {
        lower_group(group);
        lower_one(*inst);
      }
    }
    lower_group(group);
    batch_.compile();  // every fused loop's code in one LLVM compile
  }

 private:
  Step make_step(const Instruction& inst, std::string label) {
    Step s;
    s.label = std::move(label);
    s.flops = contraction_flops(inst);
    s.source = inst.source();
    for (const Instruction* op : inst.operands()) s.reads.push_back(exe_.value_id(op));
    s.writes.push_back(exe_.value_id(&inst));
    return s;
  }

  // Lowers the group's members as one kernel (loop_grouping.h), and empties it.
  void lower_group(std::vector<const Instruction*>& group) {
    std::shared_ptr<LoopKernel> k;
    GroupedLoop g{};
    if (group.size() > 1) {
      g = merge_group(exe_.scratch_module(), group);
      k = LoopKernel::create(*g.body, engine_, &batch_);
    }
    if (k == nullptr) {  // one member, or a member a loop cannot run: each on its own
      for (const Instruction* m : group) lower_one(*m);
      group.clear();
      return;
    }
    Step s;
    s.source = group[0]->source();
    size_t ops = 0;
    for (const Instruction* m : group) ops += m->attrs().body->post_order().size();
    s.label = str_cat("fusion(loop x", group.size(), ", ", ops, " ops)");
    for (const Instruction* x : g.operands) s.reads.push_back(exe_.value_id(x));
    for (const Instruction* m : group) s.writes.push_back(exe_.value_id(m));
    add_team_step(std::move(s), k->work(), [k](const void* const* in, void* const* outs) { k->run_team(in, outs); });
    group.clear();
  }

  bool has_step(const Instruction& inst) const {
    const compiler::BufferKind k = exe_.plan().buffers.at(&inst).kind;
    return k != compiler::BufferKind::kAlias && k != compiler::BufferKind::kParameter &&
           k != compiler::BufferKind::kConstant && folded_converts_.count(&inst) == 0;
  }

  // Converts of f32 parameters (inputs, variables, constants) to bf16/f16 that only widened
  // matmuls read: those read the f32 values and round them as they widen them, one pass where
  // the convert and the widening were two, so the convert runs no step (its 16-bit buffer stays
  // planned, unwritten). Only where every 16-bit matmul is widened (oneDNN has no 16-bit matmul
  // on this CPU, or KILN_16BIT_CONTRACTIONS=f32), and only while the parameter's buffer holds
  // its values: before any variable update writes into it.
  void find_folded_converts() {
    const compiler::MemoryPlan& plan = exe_.plan();
    std::unordered_map<const Instruction*, size_t> position;
    std::unordered_map<int, size_t> first_write;  // parameter index -> first in-place update
    for (size_t i = 0; i < plan.order.size(); ++i) {
      position[plan.order[i]] = i;
      const compiler::BufferInfo& b = plan.buffers.at(plan.order[i]);
      if (b.kind == compiler::BufferKind::kDonated) first_write.emplace(b.parameter_index, i);
    }
    for (const Instruction* c : plan.order) {
      const DType t = c->dtype();
      if (c->opcode() != Opcode::kConvert || (t != DType::kBF16 && t != DType::kF16)) continue;
      if (c->operand(0)->dtype() != DType::kF32 || plan.buffers.at(c).kind != compiler::BufferKind::kArena) continue;
      const compiler::BufferInfo& source = plan.storage(c->operand(0));
      if (source.kind != compiler::BufferKind::kParameter && source.kind != compiler::BufferKind::kConstant) continue;
      if (!all_16bit_matmuls_widened(t)) continue;
      auto writer = source.kind == compiler::BufferKind::kParameter ? first_write.find(source.parameter_index)
                                                                    : first_write.end();
      bool folds = !c->users().empty();
      for (const Instruction* u : c->users())
        folds = folds && folds_into(*u, c) && (writer == first_write.end() || position.at(u) < writer->second);
      if (folds) folded_converts_.insert(c);
    }
  }

  // `u` is a matmul (a dot_general, or an output fusion of one) reading `c` only as its lhs,
  // rhs or bias, in a layout the matmul kernel runs.
  static bool folds_into(const Instruction& u, const Instruction* c) {
    const Instruction* dot = &u;
    if (u.opcode() == Opcode::kFusion) {
      if (u.attrs().fusion_kind != ir::FusionKind::kOutput) return false;
      std::optional<compiler::OutputFusionInfo> e = compiler::match_output_fusion(*u.attrs().body);
      if (!e || e->contraction->opcode() != Opcode::kDotGeneral) return false;
      dot = e->contraction;
    } else if (u.opcode() != Opcode::kDotGeneral) {
      return false;
    }
    for (size_t i = 3; i < u.operand_count(); ++i)
      if (u.operand(i) == c) return false;
    return MatmulKernel::can_run(*dot);
  }

  bool all_16bit_matmuls_widened(DType t) {
    if (matmul_.choice == MatmulOptions::Choice::kF32) return true;
    auto it = native_16bit_.find(t);
    if (it == native_16bit_.end()) it = native_16bit_.emplace(t, !native_matmul_isa(t).empty()).first;
    return !it->second;
  }

  // Calls `fn(inputs, outputs)` with the pointers of values `reads` and `writes`: from stack
  // arrays up to kInlineOperands each (no allocation per run), from the heap beyond (a
  // concatenate of many operands).
  static constexpr size_t kInlineOperands = 16;
  template <typename Fn>
  static void with_pointers(const std::vector<int>& reads, const std::vector<int>& writes, void* const* values,
                            const Fn& fn) {
    const void* in_inline[kInlineOperands];
    void* out_inline[kInlineOperands];
    std::vector<const void*> in_heap;
    std::vector<void*> out_heap;
    const void** in = in_inline;
    void** out = out_inline;
    if (reads.size() > kInlineOperands) in = (in_heap.resize(reads.size()), in_heap.data());
    if (writes.size() > kInlineOperands) out = (out_heap.resize(writes.size()), out_heap.data());
    for (size_t i = 0; i < reads.size(); ++i) in[i] = values[reads[i]];
    for (size_t i = 0; i < writes.size(); ++i) out[i] = values[writes[i]];
    fn(in, out);
  }

  // Runs `fn(inputs, out)` with the operand and result pointers of the step.
  template <typename Fn>
  void add(const Instruction& inst, std::string label, Fn fn) {
    add_step(make_step(inst, std::move(label)), fn);
  }

  // Runs `fn(inputs, out)` with the pointers of `s`'s reads and its first write.
  template <typename Fn>
  void add_step(Step s, Fn fn) {
    s.run = [reads = s.reads, writes = s.writes, fn](void* const* values) {
      with_pointers(reads, writes, values, [&](const void* const* in, void* const* outs) { fn(in, outs[0]); });
    };
    exe_.add_step(std::move(s));
  }

  void fallback(const Instruction& inst) {
    log(LogLevel::kDebug, str_cat("cpu: reference kernel for ", ir::describe(inst)));
    exe_.add_reference_fallback({fallback_key(inst), ir::describe(inst)});
    std::vector<Shape> shapes;
    for (const Instruction* op : inst.operands()) shapes.push_back(op->shape());
    const Instruction* ip = &inst;
    const int64_t bytes = inst.shape().byte_size();
    add(inst, str_cat("reference ", ir::opcode_name(inst.opcode())), [ip, shapes, bytes](const void* const* in, void* out) {
      std::vector<HostTensor> views;
      for (size_t i = 0; i < shapes.size(); ++i) views.push_back(HostTensor::view(shapes[i], const_cast<void*>(in[i])));
      HostTensor r = ir::evaluate_instruction(*ip, views);
      std::memcpy(out, r.raw_data(), static_cast<size_t>(bytes));
    });
  }

  // A kernel that is team work (team_impl.h): it runs alone on its own team, or shares one with
  // its neighbours once CpuExecutable::group_team_steps merges them.
  template <typename Fn>
  void add_team(const Instruction& inst, std::string label, int64_t work, Fn team_fn) {
    add_team_step(make_step(inst, std::move(label)), work,
                  [team_fn](const void* const* in, void* const* outs) { team_fn(in, outs[0]); });
  }

  // `team_fn(inputs, outputs)` with the pointers of the step's reads and writes.
  template <typename Fn>
  void add_team_step(Step s, int64_t work, Fn team_fn) {
    auto call = [reads = s.reads, writes = s.writes, team_fn](void* const* values) {
      with_pointers(reads, writes, values, team_fn);
    };
    const bool parallel = work >= kParallelThreshold;
    s.run = [call, parallel](void* const* values) { run_on_team(parallel, [&] { call(values); }); };
    s.team = call;
    s.work = work;
    exe_.add_step(std::move(s));
  }

  bool try_loop(const Instruction& inst, const ir::Computation& body, const std::string& label) {
    std::shared_ptr<LoopKernel> k = LoopKernel::create(body, engine_, &batch_);
    if (k == nullptr) return false;
    add_team(inst, label, k->work(), [k](const void* const* in, void* out) { k->run_team(in, &out); });
    return true;
  }

  bool try_reduce(const Instruction& inst, const Instruction& reduce, const std::string& label) {
    std::shared_ptr<ReduceKernel> k = ReduceKernel::create(reduce, engine_, &batch_);
    if (k == nullptr) return false;
    add_team(inst, label, k->work(), [k](const void* const* in, void* out) { k->run_team(in, out); });
    return true;
  }

  // `dot` is `inst` itself, or the dot inside `inst`'s output-fusion body (then its operands
  // and the bias are body parameters 0, 1 and 2 by OutputFusionPass's contract, which are the
  // fusion's operands 0, 1, 2).
  bool try_matmul(const Instruction& inst, const Instruction& dot, bool has_bias,
                  compiler::EpilogueActivation activation, std::string label) {
    // Operands whose convert was folded in: the matmul reads the convert's f32 source.
    const auto folded = [&](size_t i) { return i < inst.operand_count() && folded_converts_.count(inst.operand(i)) > 0; };
    const F32Sources f32{folded(0), folded(1), has_bias && folded(2)};
    std::shared_ptr<MatmulKernel> k = MatmulKernel::create(dot, has_bias, activation, matmul_, widen_scratch_, f32);
    KILN_CHECK(k != nullptr || !(f32.lhs || f32.rhs || f32.bias), "a matmul folding in a convert has no kernel");
    if (k == nullptr) return false;
    if (k->path() != MatmulPath::kF32) label += str_cat(" (", k->isa(), k->path() == MatmulPath::kWidened ? ", widened" : "", ")");
    if (f32.lhs || f32.rhs || f32.bias) label += " reading f32 operands";
    Step s = make_step(inst, std::move(label));
    for (size_t i = 0; i < 3 && i < s.reads.size(); ++i)
      if (folded(i)) s.reads[i] = exe_.value_id(inst.operand(i)->operand(0));
    const int lhs = 0, rhs = 1, bias = has_bias ? 2 : -1;
    add_step(std::move(s), [k, lhs, rhs, bias](const void* const* in, void* out) {
      k->run(in[lhs], in[rhs], bias >= 0 ? in[bias] : nullptr, out);
    });
    return true;
  }

  // ConvolutionKernel or PoolingKernel: create(inst) is nullptr when oneDNN cannot run `inst`.
  template <typename Kernel>
  bool try_kernel(const Instruction& inst) {
    if constexpr (std::is_same_v<Kernel, ConvolutionKernel>) {
      if (matmul_.batch_invariant) {  // oneDNN's convolutions choose their sum order by shape
        if (std::shared_ptr<FixedOrderConvolution> f = FixedOrderConvolution::create(inst)) {
          add(inst, f->label(), [f](const void* const* in, void* out) { f->run(in, out); });
          return true;
        }
      }
    }
    std::shared_ptr<Kernel> k;
    if constexpr (std::is_same_v<Kernel, ConvolutionKernel>) k = Kernel::create(inst, matmul_, widen_scratch_);
    else k = Kernel::create(inst, matmul_.choice != MatmulOptions::Choice::kF32, widen_scratch_);
    if (k == nullptr) return false;
    add(inst, k->label(), [k](const void* const* in, void* out) { k->run(in, out); });
    return true;
  }

  void lower_fusion(const Instruction& inst) {
    const ir::Computation& body = *inst.attrs().body;
    switch (inst.attrs().fusion_kind) {
      case ir::FusionKind::kOutput: {
        if (try_kernel<ConvolutionKernel>(inst)) return;
        std::optional<compiler::OutputFusionInfo> e = compiler::match_output_fusion(body);
        if (e && e->contraction->opcode() == Opcode::kDotGeneral) {
          std::string label = str_cat("matmul", e->has_bias ? "+bias" : "");
          if (std::string_view act = onednn::activation_name(e->activation); !act.empty()) label += str_cat("+", act);
          if (try_matmul(inst, *e->contraction, e->has_bias, e->activation, label)) return;
        }
        break;
      }
      case ir::FusionKind::kLoop:
        if (try_loop(inst, body, str_cat("fusion(loop, ", body.post_order().size(), " ops)"))) return;
        break;
      case ir::FusionKind::kReduction: {
        const Instruction* root = body.outputs()[0];
        if ((root->opcode() == Opcode::kReduceSum || root->opcode() == Opcode::kReduceMax ||
             root->opcode() == Opcode::kReduceMin) &&
            try_reduce(inst, *root, str_cat("fusion(reduction, ", body.post_order().size(), " ops)")))
          return;
        break;
      }
    }
    fallback(inst);
  }

  // out: (outer, axis, inner) row-major, so each operand is `outer` contiguous blocks of its
  // axis x inner elements, copied side by side into each out row.
  void add_concatenate(const Instruction& inst) {
    const size_t axis = static_cast<size_t>(inst.attrs().dims.at(0));
    const Dims& dims = inst.shape().dims();
    int64_t outer = 1, inner = static_cast<int64_t>(size_of(inst.dtype()));  // inner in bytes
    for (size_t d = 0; d < axis; ++d) outer *= dims[d];
    for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
    std::vector<int64_t> block;  // bytes of each operand per out row
    for (const Instruction* op : inst.operands()) block.push_back(op->shape().dims()[axis] * inner);
    const int64_t row = dims[axis] * inner;
    add(inst, "concatenate(copy)", [outer, row, block](const void* const* in, void* out) {
      int64_t at = 0;
      for (size_t i = 0; i < block.size(); at += block[i], ++i)
        for (int64_t o = 0; o < outer && block[i] > 0; ++o)
          std::memcpy(static_cast<char*>(out) + o * row + at, static_cast<const char*>(in[i]) + o * block[i],
                      static_cast<size_t>(block[i]));
    });
  }

  // out = value everywhere, then the part of x that stays (negative padding crops it) copied
  // in runs along the last dim. x: xd, out: od = xd + low + high per dim.
  void add_pad(const Instruction& inst) {
    const Dims& xd = inst.operand(0)->shape().dims();
    const Dims& od = inst.shape().dims();
    const Dims& low = inst.attrs().starts;
    const int64_t elem = static_cast<int64_t>(size_of(inst.dtype()));
    const HostTensor value = HostTensor::scalar<double>(inst.attrs().scalar).astype(inst.dtype());
    std::vector<std::byte> fill(static_cast<size_t>(elem));
    std::memcpy(fill.data(), value.raw_data(), fill.size());
    // The kept box of x: [begin, end) per dim, and row-major strides in bytes.
    const size_t r = xd.size();
    Dims begin(r), end(r), xs(r, elem), os(r, elem);
    bool empty = false;
    for (size_t d = 0; d < r; ++d) {
      begin[d] = std::max<int64_t>(0, -low[d]);
      end[d] = std::min<int64_t>(xd[d], od[d] - low[d]);
      empty = empty || begin[d] >= end[d];
    }
    for (size_t d = r; d-- > 1;) {
      xs[d - 1] = xs[d] * xd[d];
      os[d - 1] = os[d] * od[d];
    }
    const int64_t count = inst.shape().num_elements();
    add(inst, "pad(fill+copy)", [=](const void* const* in, void* out) {
      auto* dst = static_cast<std::byte*>(out);
      fill_repeated(dst, count, fill);
      if (empty) return;
      const auto* src = static_cast<const std::byte*>(in[0]);
      if (r == 0) {
        std::memcpy(dst, src, static_cast<size_t>(elem));
        return;
      }
      const size_t run = static_cast<size_t>((end[r - 1] - begin[r - 1]) * elem);
      Dims at = begin;  // odometer over the kept box, last dim fixed at its begin
      while (true) {
        int64_t x_off = 0, o_off = 0;
        for (size_t d = 0; d < r; ++d) {
          x_off += at[d] * xs[d];
          o_off += (at[d] + low[d]) * os[d];
        }
        std::memcpy(dst + o_off, src + x_off, run);
        size_t d = r - 1;
        while (d-- > 0 && ++at[d] == end[d]) at[d] = begin[d];
        if (d == static_cast<size_t>(-1)) return;
      }
    });
  }

  void lower_one(const Instruction& inst) {
    if (!has_step(inst)) return;
    const Opcode op = inst.opcode();
    const int64_t bytes = inst.shape().byte_size();
    auto copy = [bytes](const void* const* in, void* out) {
      if (in[0] != out) std::memcpy(out, in[0], static_cast<size_t>(bytes));
    };
    switch (op) {
      case Opcode::kFusion:
        lower_fusion(inst);
        return;
      case Opcode::kWhile: case Opcode::kConditional:
        lower_tuple(inst);
        return;
      case Opcode::kGetTupleElement:
        lower_get_tuple_element(inst);
        return;
      case Opcode::kDynamicSlice: case Opcode::kDynamicUpdateSlice:
        if (add_dynamic_slice(inst)) return;
        break;
      case Opcode::kReshape:
        add(inst, "copy(reshape)", copy);
        return;
      case Opcode::kConcatenate:
        add_concatenate(inst);
        return;
      case Opcode::kPad:
        add_pad(inst);
        return;
      case Opcode::kAllReduce: {
        const std::shared_ptr<runtime::Collectives>& c = exe_.collectives();
        if (!c || c->num_replicas() <= 1) {  // one replica: the sum and the mean are the value itself
          add(inst, "all_reduce(1 replica)", copy);
          return;
        }
        // Copy the operand into the result, then reduce it there with the other replicas.
        const int replica = exe_.replica_id();
        const ir::ReduceKind kind = inst.attrs().reduce_kind;
        const DType dtype = inst.dtype();
        const int64_t count = inst.shape().num_elements();
        add(inst, str_cat("all_reduce(", c->num_replicas(), " replicas)"),
            [copy, c, replica, kind, dtype, count](const void* const* in, void* out) {
              copy(in, out);
              c->all_reduce(replica, kind, dtype, out, count);
            });
        return;
      }
      case Opcode::kDotGeneral:
        if (try_matmul(inst, inst, false, compiler::EpilogueActivation::kNone, "matmul")) return;
        break;
      case Opcode::kConvolution: case Opcode::kConvBackwardInput: case Opcode::kConvBackwardFilter:
        if (try_kernel<ConvolutionKernel>(inst)) return;
        break;
      case Opcode::kReduceWindow: case Opcode::kReduceWindowGrad:
        if (try_kernel<PoolingKernel>(inst)) return;
        break;
      case Opcode::kReduceSum: case Opcode::kReduceMax: case Opcode::kReduceMin:
        if (try_reduce(inst, *wrap(exe_.scratch_module(), inst)->outputs()[0], str_cat(ir::opcode_name(op))))
          return;
        break;
      case Opcode::kGather: {
        IndexGeometry g = IndexGeometry::of(inst.operand(0)->shape(), inst.operand(1)->shape(), inst.attrs().dims[0]);
        add_team(inst, "gather", inst.shape().num_elements(), [g](const void* const* in, void* out) {
          gather_team(g, in[0], in[1], out);
        });
        return;
      }
      case Opcode::kScatterAdd: {
        const DType t = inst.dtype();
        if (!scatter_add_supported(t)) break;
        IndexGeometry g = IndexGeometry::of(inst.operand(0)->shape(), inst.operand(1)->shape(), inst.attrs().dims[0]);
        add_team(inst, "scatter_add", inst.shape().num_elements(), [g, t](const void* const* in, void* out) {
          scatter_add_team(g, t, in[0], in[1], in[2], out);
        });
        return;
      }
      case Opcode::kRngBits: {
        const int64_t count = inst.shape().num_elements();
        add_team(inst, "rng_bits", count, [count](const void* const* in, void* out) {
          rng_bits_team(*static_cast<const int64_t*>(in[0]), count, out);
        });
        return;
      }
      case Opcode::kArgmax: {
        Shape in_shape = inst.operand(0)->shape();
        int axis = static_cast<int>(inst.attrs().dims[0]);
        add_team(inst, "argmax", 0, [in_shape, axis](const void* const* in, void* out) {
#pragma omp single
          argmax(in_shape, axis, in[0], out);
        });
        return;
      }
      default:
        if (ir::is_elementwise(op) || op == Opcode::kBroadcastInDim || op == Opcode::kTranspose ||
            op == Opcode::kSlice || op == Opcode::kIota) {
          if (try_loop(inst, *wrap(exe_.scratch_module(), inst), str_cat(ir::opcode_name(op)))) return;
        }
        break;
    }
    fallback(inst);
  }

  // while/conditional: a step running the nested programs; get_tuple_element copies a result.
  void lower_tuple(const Instruction& inst) {
    if (!compile_nested_)
      KILN_THROW(CompileError, "[cpu] ", ir::describe(inst), " needs its computations compiled, and this "
                 "lowering was given no compiler for them.");
    std::shared_ptr<TupleStep> t;
    if (inst.opcode() == Opcode::kWhile) t = std::make_shared<WhileStep>(inst, compile_nested_);
    else t = std::make_shared<ConditionalStep>(inst, compile_nested_);
    tuples_[&inst] = t;
    exe_.add_nested_bytes(t->held_bytes(), t->activation_bytes());
    Step s = make_step(inst, str_cat(ir::opcode_name(inst.opcode()), "(nested programs)"));
    s.run = [reads = s.reads, t](void* const* values) {
      with_pointers(reads, {}, values, [&](const void* const* in, void* const*) { t->run(in); });
    };
    exe_.add_step(std::move(s));
  }

  void lower_get_tuple_element(const Instruction& inst) {
    std::shared_ptr<TupleStep> t = tuples_.at(inst.operand(0));
    const size_t i = static_cast<size_t>(inst.attrs().tuple_index);
    const size_t bytes = static_cast<size_t>(inst.shape().byte_size());
    add(inst, "get_tuple_element(copy)", [t, i, bytes](const void* const*, void* out) {
      std::memcpy(out, t->results()[i].raw_data(), bytes);
    });
  }

  // Whether the plan puts `a` and `b` in the same bytes.
  bool same_bytes(const Instruction* a, const Instruction* b) const {
    const compiler::BufferInfo& x = exe_.plan().storage(a);
    const compiler::BufferInfo& y = exe_.plan().storage(b);
    const auto in_argument = [](const compiler::BufferInfo& i) {
      return i.kind == compiler::BufferKind::kParameter || i.kind == compiler::BufferKind::kDonated;
    };
    if (in_argument(x) && in_argument(y)) return x.parameter_index == y.parameter_index;
    return x.kind == compiler::BufferKind::kArena && y.kind == compiler::BufferKind::kArena && x.offset == y.offset;
  }

  // The starts (operands after x, and after the update) share one index dtype, else the
  // reference evaluator runs it.
  bool add_dynamic_slice(const Instruction& inst) {
    const bool update = inst.opcode() == Opcode::kDynamicUpdateSlice;
    const size_t first = update ? 2 : 1;
    BoxGeometry g;
    g.x_dims = inst.operand(0)->shape().dims();
    g.box = update ? inst.operand(1)->shape().dims() : inst.shape().dims();
    g.element_size = size_of(inst.dtype());
    g.index_dtype = inst.operand_count() > first ? inst.operand(first)->dtype() : DType::kI32;
    for (size_t i = first; i < inst.operand_count(); ++i)
      if (inst.operand(i)->dtype() != g.index_dtype) return false;
    if (update) {
      // The plan gave the result x's own bytes (a dying x, or a donated loop-carried buffer):
      // the kernel then writes just the update.
      const bool in_place = same_bytes(&inst, inst.operand(0));
      add(inst, in_place ? "dynamic_update_slice(in place)" : "dynamic_update_slice(copy)", [g](const void* const* in, void* out) {
        dynamic_update_slice(g, g.clamped_starts(in + 2), in[0], in[1], out);
      });
    } else {
      add(inst, "dynamic_slice(copy)", [g](const void* const* in, void* out) {
        dynamic_slice(g, g.clamped_starts(in + 1), in[0], out);
      });
    }
    return true;
  }

  CpuExecutable& exe_;
  LoopEngine engine_;
  bool horizontal_fusion_;
  MatmulOptions matmul_;
  // The f32 copies of the executable's widened 16-bit matmuls, convolutions and pooling: one
  // buffer, as the steps run one at a time.
  std::shared_ptr<WidenScratch> widen_scratch_ = std::make_shared<WidenScratch>();
  std::unordered_set<const Instruction*> folded_converts_;  // find_folded_converts
  std::map<DType, bool> native_16bit_;                     // oneDNN has a 16-bit matmul here
  CompileNested compile_nested_;
  std::unordered_map<const Instruction*, std::shared_ptr<TupleStep>> tuples_;
  LoopJitBatch batch_;
};

}  // namespace

void lower(CpuExecutable& exe, LoopEngine engine, bool horizontal_fusion, const MatmulOptions& matmul,
           const CompileNested& compile_nested) {
  Lowerer(exe, engine, horizontal_fusion, matmul, compile_nested).lower_all();
  exe.group_team_steps();
}

}  // namespace kiln::cpu
