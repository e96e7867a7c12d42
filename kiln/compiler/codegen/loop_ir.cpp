// LoopIr::build: the loop-fusion body -> stages lowering, and LoopIr::key.
#include "kiln/compiler/codegen/loop_ir.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "kiln/core/check.h"
#include "kiln/core/dtype_dispatch.h"
#include "kiln/core/half.h"
#include "kiln/ir/computation.h"

namespace kiln::codegen {
namespace {

Dims contiguous_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == 1) s[i] = 0;  // a size-1 dim never moves the offset
  return s;
}

bool is_contiguous(const Dims& strides, const Dims& dims) {
  Dims c = contiguous_strides(dims);
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1 && strides[i] != c[i]) return false;
  return true;
}

// Builds stages from a body. Returns false for an op a loop kernel cannot run.
class StageBuilder {
 public:
  explicit StageBuilder(LoopIr& p) : p_(p) {}

  bool build_stage(const ir::Instruction* root, int* stage_index) { return build_stage(std::vector{root}, stage_index); }

  bool build_stage(const std::vector<const ir::Instruction*>& roots, int* stage_index) {
    LoopStage st;
    st.shape = roots[0]->shape();
    std::unordered_map<const ir::Instruction*, int> regs;
    for (const ir::Instruction* root : roots) {
      if (root->shape().dims() != st.shape.dims()) return false;
      LoopResult r{0, root->dtype()};
      if (!emit(root, st, regs, &r.reg)) return false;
      st.results.push_back(r);
    }
    known_.erase(&st);
    drop_roundings_before_stores(st);
    allocate_registers(st);
    p_.stages.push_back(std::move(st));
    *stage_index = static_cast<int>(p_.stages.size()) - 1;
    return true;
  }

 private:
  // A source viewed over `inst`'s own shape: where it lives and its strides.
  bool source_of(const ir::Instruction* inst, LoopLoad* load) {
    using ir::Opcode;
    switch (inst->opcode()) {
      case Opcode::kParameter:
        *load = {LoopLoad::kParameter, static_cast<int>(inst->attrs().parameter_index), inst->dtype(),
                 contiguous_strides(inst->shape().dims()), true};
        return true;
      case Opcode::kConstant:
        p_.literals.push_back(inst->attrs().literal);
        *load = {LoopLoad::kLiteral, static_cast<int>(p_.literals.size()) - 1, inst->dtype(),
                 contiguous_strides(inst->shape().dims()), true};
        return true;
      case Opcode::kReshape: {
        LoopLoad inner;
        if (!source_of(inst->operand(0), &inner)) return false;
        if (!is_contiguous(inner.strides, inst->operand(0)->shape().dims())) return false;
        // (a contiguous view keeps its offset: reshaping it only renames the dims)
        inner.strides = contiguous_strides(inst->shape().dims());
        *load = inner;
        return true;
      }
      case Opcode::kTranspose: {  // a strided view: result dim i walks operand dim perm[i]
        LoopLoad inner;
        if (!source_of(inst->operand(0), &inner)) return false;
        Dims strides;
        for (int64_t p : inst->attrs().dims) strides.push_back(inner.strides[static_cast<size_t>(p)]);
        inner.strides = std::move(strides);
        *load = inner;
        return true;
      }
      case Opcode::kSlice: {  // a strided view starting at the slice's origin
        LoopLoad inner;
        if (!source_of(inst->operand(0), &inner)) return false;
        const ir::Attrs& a = inst->attrs();
        for (size_t i = 0; i < inner.strides.size(); ++i) {
          inner.offset += a.starts[i] * inner.strides[i];
          inner.strides[i] *= a.strides[i];
        }
        *load = inner;
        return true;
      }
      case Opcode::kBroadcastInDim: {
        LoopLoad inner;
        const ir::Instruction* x = inst->operand(0);
        if (!source_of(x, &inner)) {
          int stage;
          if (!build_stage(x, &stage)) return false;
          inner = {LoopLoad::kStage, stage, x->dtype(), contiguous_strides(x->shape().dims()), true};
        }
        Dims strides(static_cast<size_t>(inst->shape().rank()), 0);
        const Dims& map = inst->attrs().dims;
        for (size_t i = 0; i < map.size(); ++i)
          if (x->shape().dims()[i] != 1) strides[static_cast<size_t>(map[i])] = inner.strides[i];
        inner.strides = std::move(strides);
        *load = inner;
        return true;
      }
      // Computed values: a stage of their own, not a view.
#define KILN_SKIP_Leaf
#define KILN_SKIP_Shape
#include "kiln/ir/opcode_cases.inc"
      case Opcode::kIota: case Opcode::kConcatenate: case Opcode::kPad:
        return false;
    }
    return false;
  }

  int new_register(LoopStage& st) { return st.num_registers++; }

  int append_unary(LoopStage& st, LoopOp op, int a) {
    LoopInstr in{};
    in.op = op;
    in.a = a;
    in.dst = new_register(st);
    st.code.push_back(in);
    return in.dst;
  }

  // The value of a one-element constant, directly or broadcast (a scalar operand).
  static std::optional<double> constant_scalar(const ir::Instruction* inst) {
    while (inst->opcode() == ir::Opcode::kBroadcastInDim || inst->opcode() == ir::Opcode::kReshape)
      inst = inst->operand(0);
    if (inst->opcode() != ir::Opcode::kConstant || inst->shape().num_elements() != 1) return std::nullopt;
    return visit_dtype(inst->dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      return to_double(*static_cast<const S*>(inst->attrs().literal.raw_data()));
    });
  }

  bool emit(const ir::Instruction* inst, LoopStage& st, std::unordered_map<const ir::Instruction*, int>& regs,
            int* out) {
    if (auto it = regs.find(inst); it != regs.end()) {
      *out = it->second;
      return true;
    }
    using ir::Opcode;
    LoopInstr in{};
    LoopLoad load;
    const Opcode opc = inst->opcode();
    if (opc == Opcode::kConstant && inst->shape().num_elements() == 1) {
      in.op = LoopOp::kSplat;
      in.value = visit_dtype(inst->dtype(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        return to_double(*static_cast<const S*>(inst->attrs().literal.raw_data()));
      });
    } else if (opc == Opcode::kIota) {
      in.op = LoopOp::kIota;
      size_t axis = static_cast<size_t>(inst->attrs().dims[0]);
      const Dims& d = inst->shape().dims();
      in.mod = d[axis];
      for (size_t i = axis + 1; i < d.size(); ++i) in.div *= d[i];
    } else if (source_of(inst, &load)) {
      bool scalar = std::all_of(load.strides.begin(), load.strides.end(), [](int64_t s) { return s == 0; });
      load.contiguous = !scalar && is_contiguous(load.strides, st.shape.dims());
      if (scalar) load.strides.assign(load.strides.size(), 0);
      st.loads.push_back(load);
      in.op = LoopOp::kLoad;
      in.load = static_cast<int>(st.loads.size()) - 1;
    } else if (ir::is_elementwise(opc)) {
      if (inst->shape().dims() != st.shape.dims()) return false;
      // Float registers hold an f32 exactly: converting to f32 is then the value itself.
      if (opc == Opcode::kConvert && inst->dtype() == DType::kF32 && !p_.use_double)
        return emit(inst->operand(0), st, regs, out) && (regs[inst] = *out, true);
      // A constant second operand of a binary op is read as a scalar, not filled per chunk.
      std::optional<double> scalar_b;
      if (inst->operand_count() == 2 && (ir::opcode_family(opc) == ir::OpFamily::Binary ||
                                         ir::opcode_family(opc) == ir::OpFamily::Compare))
        scalar_b = constant_scalar(inst->operand(1));
      int operand_regs[3] = {0, 0, 0};
      for (size_t i = 0; i < inst->operand_count(); ++i) {
        if (i == 1 && scalar_b) continue;
        if (!emit(inst->operand(i), st, regs, &operand_regs[i])) return false;
      }
      in.a = operand_regs[0];
      in.b = scalar_b ? operand_regs[0] : operand_regs[1];
      in.c = operand_regs[2];
      if (scalar_b) {
        in.b_is_scalar = true;
        in.value = *scalar_b;
      }
      if (!select_op(inst, &in.op)) return false;
    } else {
      return false;
    }
    KnownValues& known = known_[&st];
    std::optional<Values> values = values_of(in, known, in.op == LoopOp::kLoad ? st.loads[static_cast<size_t>(in.load)].dtype : DType::kF32);
    // A rounding of values it leaves alone (a bool converted to bf16) is no instruction.
    if (is_rounding(in.op) && values && known.count(in.a) > 0 && *values == known.at(in.a)) {
      regs[inst] = in.a;
      *out = in.a;
      return true;
    }
    in.dst = new_register(st);
    st.code.push_back(in);
    if (values) known[in.dst] = *values;
    // A value's register holds what its dtype can: a 16-bit op's f32 result is rounded to 16
    // bits (round to nearest even) before later ops read it, as the reference evaluator and
    // XLA compute each bf16/f16 op; an f32 op's result in a double register is rounded to f32;
    // i32 arithmetic wraps modulo 2^32. Results known to be few values the dtype holds exactly
    // (the 0, 0.5, 1 of a relu gradient's masks) need no rounding.
    const DType t = inst->dtype();
    const bool round_16 = (t == DType::kBF16 || t == DType::kF16) && rounds_to_f32(in.op) && !exact_on_16bit(in.op);
    const LoopOp rounding = t == DType::kBF16 ? LoopOp::kRoundBF16 : t == DType::kF16 ? LoopOp::kRoundF16 : LoopOp::kRoundF32;
    const bool exact = values && rounded(rounding, *values) == *values;
    if (((p_.use_double && t == DType::kF32 && rounds_to_f32(in.op)) || round_16) && !exact)
      in.dst = append_unary(st, rounding, in.dst);
    if (t == DType::kI32 && may_leave_i32(in.op)) in.dst = append_unary(st, LoopOp::kWrapI32, in.dst);
    regs[inst] = in.dst;
    *out = in.dst;
    return true;
  }

  // The values a register can hold, when they are a few known ones (a mask from a comparison,
  // a constant, arithmetic on those), sorted and distinct; nullopt when they can be anything.
  // Computed as the executors compute them (in float, or double registers), so a rounding they
  // show to change nothing can be left out without changing a bit of any result.
  using Values = std::vector<double>;
  using KnownValues = std::unordered_map<int, Values>;
  static constexpr size_t kMaxKnownValues = 8;

  static bool is_rounding(LoopOp op) {
    return op == LoopOp::kRoundBF16 || op == LoopOp::kRoundF16 || op == LoopOp::kRoundF32;
  }

  // `v` as `op` rounds a register (through f32 first, as the executors' as_float).
  static Values rounded(LoopOp op, const Values& v) {
    Values r;
    for (double x : v) {
      const float f = static_cast<float>(x);
      if (op == LoopOp::kRoundBF16) r.push_back(bf16_bits_to_f32(f32_to_bf16_bits(f)));
      else if (op == LoopOp::kRoundF16) r.push_back(f16_bits_to_f32(f32_to_f16_bits(f)));
      else r.push_back(f);
    }
    return r;
  }

  // `load_dtype`: a load's element type (a bool load is 0 or 1).
  std::optional<Values> values_of(const LoopInstr& in, const KnownValues& known, DType load_dtype) const {
    auto of = [&](int reg) -> const Values* {
      auto it = known.find(reg);
      return it == known.end() ? nullptr : &it->second;
    };
    auto finish = [&](Values v) -> std::optional<Values> {
      for (double x : v)
        if (!std::isfinite(x)) return std::nullopt;
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      if (v.size() > kMaxKnownValues) return std::nullopt;
      return v;
    };
    // a op b in the registers' type
    auto arith = [&](LoopOp op, double a, double b) {
      auto f = [&](auto x, auto y) -> double {
        if (op == LoopOp::kAdd) return x + y;
        if (op == LoopOp::kSub) return x - y;
        if (op == LoopOp::kMul) return x * y;
        if (op == LoopOp::kMax) return x > y ? x : y;
        return x < y ? x : y;  // kMin
      };
      return p_.use_double ? f(a, b) : f(static_cast<float>(a), static_cast<float>(b));
    };
    const LoopOp op = in.op;
    if (op == LoopOp::kSplat) return finish({p_.use_double ? in.value : static_cast<double>(static_cast<float>(in.value))});
    if (op == LoopOp::kLoad) return load_dtype == DType::kBool ? std::optional<Values>(Values{0, 1}) : std::nullopt;
    if (op == LoopOp::kEq || op == LoopOp::kNe || op == LoopOp::kLt || op == LoopOp::kLe || op == LoopOp::kGt ||
        op == LoopOp::kGe || op == LoopOp::kToBool)
      return Values{0, 1};
    const Values* a = of(in.a);
    if (is_rounding(op)) return a ? finish(rounded(op, *a)) : std::nullopt;
    if (op == LoopOp::kCopy) return a ? std::optional<Values>(*a) : std::nullopt;
    if (op == LoopOp::kNeg || op == LoopOp::kAbs) {
      if (a == nullptr) return std::nullopt;
      Values r;
      for (double x : *a) r.push_back(op == LoopOp::kNeg ? -x : std::fabs(x));
      return finish(r);
    }
    if (op == LoopOp::kAdd || op == LoopOp::kSub || op == LoopOp::kMul || op == LoopOp::kMax || op == LoopOp::kMin) {
      const Values scalar{in.value};
      const Values* b = in.b_is_scalar ? &scalar : of(in.b);
      if (a == nullptr || b == nullptr) return std::nullopt;
      Values r;
      for (double x : *a)
        for (double y : *b) r.push_back(arith(op, x, y));
      return finish(r);
    }
    if (op == LoopOp::kSelect) {
      const Values* b = of(in.b);
      const Values* c = of(in.c);
      if (b == nullptr || c == nullptr) return std::nullopt;
      Values r = *b;
      r.insert(r.end(), c->begin(), c->end());
      return finish(r);
    }
    return std::nullopt;  // any other op: its values can be anything
  }

  // Ops whose result is one of their 16-bit operands, or exactly representable from them (a
  // sign flip, a floor): nothing to round.
  static bool exact_on_16bit(LoopOp op) {
    return loop_op_info(op).exactness == ir::elementwise::Exactness::kRepresentable;
  }

  // Ops whose f32 result a double register must round: those that compute a new value (not
  // loads, constants, selects or comparisons, whose values are already f32 or 0/1).
  static bool rounds_to_f32(LoopOp op) { return loop_op_info(op).computes; }

  // i32 ops whose exact result can leave the i32 range (-(-2^31), |-2^31| and -2^31 / -1
  // included); the others stay in range or, like kMulI32, wrap themselves.
  static bool may_leave_i32(LoopOp op) {
    return op == LoopOp::kAdd || op == LoopOp::kSub || op == LoopOp::kNeg || op == LoopOp::kAbs ||
           op == LoopOp::kDivInt;
  }

  static bool select_op(const ir::Instruction* inst, LoopOp* op) {
    using ir::Opcode;
    const DType out = inst->dtype();
    const Opcode opc = inst->opcode();
    if (opc == Opcode::kConvert) {
      // Round to what the target type can hold, so later ops see the converted value.
      switch (out) {
        case DType::kBool: *op = LoopOp::kToBool; return true;
        case DType::kBF16: *op = LoopOp::kRoundBF16; return true;
        case DType::kF16: *op = LoopOp::kRoundF16; return true;
        case DType::kF32: *op = LoopOp::kRoundF32; return true;
        case DType::kF64: *op = LoopOp::kCopy; return true;
        case DType::kI32: case DType::kI64: case DType::kU8: *op = LoopOp::kTrunc; return true;
        case DType::kString: return false;  // refused by Computation::add
      }
      return false;
    }
    if (opc == Opcode::kCompare) {
      switch (inst->attrs().comparison) {
        case ir::Comparison::kEq: *op = LoopOp::kEq; return true;
        case ir::Comparison::kNe: *op = LoopOp::kNe; return true;
        case ir::Comparison::kLt: *op = LoopOp::kLt; return true;
        case ir::Comparison::kLe: *op = LoopOp::kLe; return true;
        case ir::Comparison::kGt: *op = LoopOp::kGt; return true;
        case ir::Comparison::kGe: *op = LoopOp::kGe; return true;
      }
      return false;
    }
    if (opc == Opcode::kSelect) {
      *op = LoopOp::kSelect;
      return true;
    }
    if (std::optional<LoopOp> form = integer_form(opc, out)) {
      *op = *form;
      return true;
    }
    // Every other row of the table is the LoopOp of its name.
#define KILN_UNARY(N, ...)     \
  if (opc == Opcode::k##N) {   \
    *op = LoopOp::k##N;        \
    return true;               \
  }
#define KILN_BINARY(N, ...) KILN_UNARY(N)
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY
    return false;
  }

  // Storing a value to its dtype rounds it as a rounding op does (to nearest even, NaN
  // quieted), and rounding twice gives the bits of rounding once: a rounding that only feeds
  // stores of its own dtype is dropped, and the stores round the unrounded value. A bf16
  // loop then rounds each result once instead of twice (a relu gradient: a third fewer
  // instructions).
  static void drop_roundings_before_stores(LoopStage& st) {
    auto stored_dtype = [](LoopOp op) -> std::optional<DType> {
      if (op == LoopOp::kRoundBF16) return DType::kBF16;
      if (op == LoopOp::kRoundF16) return DType::kF16;
      if (op == LoopOp::kRoundF32) return DType::kF32;
      return std::nullopt;
    };
    std::vector<int> readers(static_cast<size_t>(st.num_registers), 0);
    for (const LoopInstr& in : st.code) {
      const int ops[3] = {in.a, in.b, in.c};
      for (int k = 0; k < loop_operand_count(in); ++k) ++readers[static_cast<size_t>(ops[k])];
    }
    for (size_t i = st.code.size(); i-- > 0;) {
      const LoopInstr& in = st.code[i];
      const std::optional<DType> dtype = stored_dtype(in.op);
      if (!dtype || readers[static_cast<size_t>(in.dst)] != 0) continue;
      auto stores_it = [&](const LoopResult& r) { return r.reg == in.dst; };
      const bool stored = std::any_of(st.results.begin(), st.results.end(), stores_it);
      const bool all_its_dtype = std::all_of(st.results.begin(), st.results.end(),
                                             [&](const LoopResult& r) { return !stores_it(r) || r.dtype == *dtype; });
      if (!stored || !all_its_dtype) continue;
      for (LoopResult& r : st.results)
        if (r.reg == in.dst) r.reg = in.a;
      st.code.erase(st.code.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  // Linear-scan register reuse: a register is free once its last reader has run. A result may
  // take an operand's register (elementwise loops read and write the same index).
  static void allocate_registers(LoopStage& st) {
    const size_t nv = static_cast<size_t>(st.num_registers);
    std::vector<int> last_use(nv, -1);
    for (size_t i = 0; i < st.code.size(); ++i) {
      const LoopInstr& in = st.code[i];
      const int ops[3] = {in.a, in.b, in.c};
      for (int k = 0; k < loop_operand_count(in); ++k) last_use[static_cast<size_t>(ops[k])] = static_cast<int>(i);
    }
    for (const LoopResult& r : st.results) last_use[static_cast<size_t>(r.reg)] = static_cast<int>(st.code.size());
    std::vector<int> physical(nv, -1);
    std::vector<bool> freed(nv, false);
    std::vector<int> free_list;
    int count = 0;
    for (size_t i = 0; i < st.code.size(); ++i) {
      LoopInstr& in = st.code[i];
      int* ops[3] = {&in.a, &in.b, &in.c};
      const int n = loop_operand_count(in);
      int virt[3] = {in.a, in.b, in.c};
      for (int k = 0; k < n; ++k) *ops[k] = physical[static_cast<size_t>(virt[k])];
      for (int k = 0; k < n; ++k) {
        size_t v = static_cast<size_t>(virt[k]);
        if (last_use[v] == static_cast<int>(i) && !freed[v]) {
          freed[v] = true;
          free_list.push_back(physical[v]);
        }
      }
      int phys = free_list.empty() ? count++ : free_list.back();
      if (!free_list.empty() && phys == free_list.back()) free_list.pop_back();
      physical[static_cast<size_t>(in.dst)] = phys;
      in.dst = phys;
    }
    for (LoopResult& r : st.results) r.reg = physical[static_cast<size_t>(r.reg)];
    st.num_registers = count;
  }

  LoopIr& p_;
  std::unordered_map<const LoopStage*, KnownValues> known_;  // of the stages being built
};

}  // namespace

int loop_operand_count(const LoopInstr& in) { return in.b_is_scalar ? 1 : loop_op_info(in.op).arity; }

std::optional<LoopIr> LoopIr::build(const ir::Instruction& root) { return build(std::vector{&root}); }

std::optional<LoopIr> LoopIr::build(const std::vector<const ir::Instruction*>& roots) {
  KILN_CHECK(!roots.empty(), "a loop needs a value to compute");
  LoopIr ir;
  for (const ir::Instruction* inst : roots[0]->parent()->post_order())
    if (needs_double_registers(inst->dtype())) ir.use_double = true;
  StageBuilder builder(ir);
  int stage;
  if (!builder.build_stage(roots, &stage)) return std::nullopt;
  return ir;
}

std::string LoopIr::key() const {
  std::ostringstream k;
  k.precision(17);
  k << (use_double ? "f64" : "f32") << ";";
  for (const LoopStage& st : stages) {
    k << "stage " << st.shape.to_string() << " r" << st.num_registers << " out";
    for (const LoopResult& r : st.results) k << r.reg << ":" << name(r.dtype) << ",";
    k << ";";
    for (const LoopLoad& l : st.loads) {
      k << "load " << l.kind << ":" << l.index << ":" << name(l.dtype) << ":" << l.offset << ":" << l.contiguous << ":";
      for (int64_t s : l.strides) k << s << ",";
      k << ";";
    }
    for (const LoopInstr& in : st.code)
      k << static_cast<int>(in.op) << " " << in.dst << " " << in.a << " " << in.b << " " << in.c << " "
        << in.value << " " << in.b_is_scalar << " " << in.load << " " << in.div << " " << in.mod << ";";
  }
  for (const HostTensor& lit : literals) {
    k << "literal " << lit.shape().to_string() << ":";
    const auto* bytes = static_cast<const unsigned char*>(lit.raw_data());
    static const char* hex = "0123456789abcdef";
    for (int64_t i = 0; i < lit.shape().byte_size(); ++i) k << hex[bytes[i] >> 4] << hex[bytes[i] & 15];
    k << ";";
  }
  return k.str();
}

}  // namespace kiln::codegen
