// Index kernels (gpu_index_kernels.h) -> LLVM IR. One emitter writes each kernel's per-element
// body; the NVPTX kernel runs it for its thread (ctaid * ntid + tid), the host variant for
// each i of a loop over [begin, end), so the body a test runs on the CPU is the GPU's.
#include "kiln/compiler/codegen/gpu_index_kernels.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <utility>

#include "kiln/compiler/codegen/llvm_emitter_impl.h"
#include "kiln/core/check.h"
#include "kiln/core/host_tensor.h"
#include "kiln/core/str_cat.h"

namespace kiln::codegen {
namespace {

using llvm::IRBuilder;
using llvm::Type;
using llvm::Value;

// The product of dims [from, to).
int64_t product(const Dims& d, size_t from = 0, size_t to = SIZE_MAX) {
  const auto begin = d.begin() + static_cast<std::ptrdiff_t>(std::min(from, d.size()));
  const auto end = d.begin() + static_cast<std::ptrdiff_t>(std::min(to, d.size()));
  return std::accumulate(begin, end, int64_t{1}, std::multiplies<>());
}

Dims strides_of(const Dims& d) {
  Dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

// [outer, axis, inner] around `axis`: the index ops view their operand so.
struct AxisView {
  int64_t outer, size, inner;
};
AxisView axis_view(const Dims& d, int64_t axis) {
  const size_t a = static_cast<size_t>(axis);
  return {product(d, 0, a), d.at(a), product(d, a + 1)};
}

// The body of one kernel for element (thread) i, over the kernel's pointers.
class IndexEmitter {
 public:
  IndexEmitter(IRBuilder<>& b, const IndexKernelUnit& u, std::vector<Value*> ptrs)
      : b_(b), u_(u), ptrs_(std::move(ptrs)), i64_(b.getInt64Ty()) {}

  // What every element shares, emitted once before them: the clamped starts of a dynamic slice.
  void prologue() {
    if (u_.op != IndexKernelOp::kDynamicSlice && u_.op != IndexKernelOp::kDynamicUpdateSlice) return;
    for (size_t d = 0; d < u_.start_dtypes.size(); ++d)
      starts_.push_back(clamp(load_index(ptrs_[1 + d], u_.start_dtypes[d], k(0)), 0, u_.dims[d] - u_.box[d]));
  }

  void element(Value* i) {
    if (u_.threads() == 0) return;  // no thread runs (and no division by an empty dim is emitted)
    switch (u_.op) {
      case IndexKernelOp::kPad: return pad(i);
      case IndexKernelOp::kConcatenate: return concatenate(i);
      case IndexKernelOp::kGather: case IndexKernelOp::kScatterAdd: return gather_or_scatter(i);
      case IndexKernelOp::kDynamicSlice: case IndexKernelOp::kDynamicUpdateSlice: return dynamic_slice(i);
    }
  }

 private:
  Value* k(int64_t v) { return llvm::ConstantInt::get(i64_, static_cast<uint64_t>(v)); }
  Value* dst() { return ptrs_.back(); }
  // Moves carry the element's bits as an integer of its width.
  Type* bits_type() { return b_.getIntNTy(static_cast<unsigned>(8 * size_of(u_.dtype))); }
  llvm::Align align() const { return llvm::Align(size_of(u_.dtype)); }
  Value* load_bits(Value* ptr, Value* at) {
    return b_.CreateAlignedLoad(bits_type(), b_.CreateGEP(bits_type(), ptr, at), align());
  }
  void store_bits(Value* ptr, Value* at, Value* v) { b_.CreateAlignedStore(v, b_.CreateGEP(bits_type(), ptr, at), align()); }

  // i's multi-index over `dims` (row-major).
  std::vector<Value*> unravel(Value* i, const Dims& dims) {
    std::vector<Value*> idx(dims.size());
    for (size_t d = dims.size(); d-- > 0;) {
      idx[d] = d == 0 ? i : b_.CreateURem(i, k(dims[d]));
      if (d > 0) i = b_.CreateUDiv(i, k(dims[d]));
    }
    return idx;
  }

  // An i32 or i64 index at ptr[at], as i64.
  Value* load_index(Value* ptr, DType t, Value* at) {
    Type* it = t == DType::kI64 ? i64_ : b_.getInt32Ty();
    Value* v = b_.CreateAlignedLoad(it, b_.CreateGEP(it, ptr, at), llvm::Align(size_of(t)));
    return b_.CreateSExt(v, i64_);
  }
  Value* clamp(Value* v, int64_t lo, int64_t hi) {
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, k(lo)), k(hi));
  }

  // dst[i] = src[i's index - low] inside src, else the fill; the load reads src[0] outside
  // (then unused), so no branch.
  void pad(Value* i) {
    Dims out = u_.dims;
    for (size_t d = 0; d < out.size(); ++d) out[d] += u_.low[d] + u_.high[d];
    Value* fill = llvm::ConstantInt::get(bits_type(), u_.fill);
    if (product(u_.dims) == 0) return store_bits(dst(), i, fill);
    const std::vector<Value*> idx = unravel(i, out);
    const Dims strides = strides_of(u_.dims);
    Value* inside = b_.getTrue();
    Value* at = k(0);
    for (size_t d = 0; d < out.size(); ++d) {
      Value* x = b_.CreateSub(idx[d], k(u_.low[d]));
      inside = b_.CreateAnd(inside, b_.CreateICmpULT(x, k(u_.dims[d])));  // unsigned: also x >= 0
      at = b_.CreateAdd(at, b_.CreateMul(x, k(strides[d])));
    }
    Value* v = load_bits(ptrs_[0], b_.CreateSelect(inside, at, k(0)));
    store_bits(dst(), i, b_.CreateSelect(inside, v, fill));
  }

  // dst[o, a, j] = src_k[o, a - start_k, j] for the operand k whose range along the axis holds
  // a: the pointer, extent and start are selected (operands in order), then one load.
  void concatenate(Value* i) {
    const AxisView v = axis_view(u_.dims, u_.axis);
    Value* j = b_.CreateURem(i, k(v.inner));
    Value* rest = b_.CreateUDiv(i, k(v.inner));
    Value* a = b_.CreateURem(rest, k(v.size));
    Value* o = b_.CreateUDiv(rest, k(v.size));
    Value *src = nullptr, *part = nullptr, *start = nullptr;
    int64_t offset = 0;
    for (size_t p = 0; p < u_.parts.size(); offset += u_.parts[p++]) {
      if (u_.parts[p] == 0) continue;
      if (src == nullptr) {
        src = ptrs_[p], part = k(u_.parts[p]), start = k(offset);
        continue;
      }
      Value* here = b_.CreateICmpSGE(a, k(offset));
      src = b_.CreateSelect(here, ptrs_[p], src);
      part = b_.CreateSelect(here, k(u_.parts[p]), part);
      start = b_.CreateSelect(here, k(offset), start);
    }
    Value* at = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(o, part), b_.CreateSub(a, start)), k(v.inner)), j);
    store_bits(dst(), i, load_bits(src, at));
  }

  // Element i of the gather shape [outer, indices, inner] is operand[o, clamp(indices[p]), j]:
  // gather copies it to dst[i]; scatter_add adds updates[i] there.
  void gather_or_scatter(Value* i) {
    const bool scatter = u_.op == IndexKernelOp::kScatterAdd;
    const AxisView v = axis_view(u_.dims, u_.axis);
    if (v.size == 0) {  // nothing to read: gather gives zeros, scatter_add changes nothing
      if (!scatter) store_bits(dst(), i, llvm::ConstantInt::get(bits_type(), 0));
      return;
    }
    Value* j = b_.CreateURem(i, k(v.inner));
    Value* rest = b_.CreateUDiv(i, k(v.inner));
    Value* p = b_.CreateURem(rest, k(u_.num_indices));
    Value* o = b_.CreateUDiv(rest, k(u_.num_indices));
    Value* pick = clamp(load_index(ptrs_[scatter ? 0 : 1], u_.index_dtype, p), 0, v.size - 1);
    Value* at = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(o, k(v.size)), pick), k(v.inner)), j);
    if (!scatter) return store_bits(dst(), i, load_bits(ptrs_[0], at));
    Value* update = to_accumulator(ptrs_[1], i);
    const bool is_float = u_.accumulator == DType::kF32 || u_.accumulator == DType::kF64;
    b_.CreateAtomicRMW(is_float ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add,
                       b_.CreateGEP(update->getType(), dst(), at), update, llvm::Align(size_of(u_.accumulator)),
                       llvm::AtomicOrdering::Monotonic);
  }

  // updates[i] as a value of the accumulator type (scatter_accumulator).
  Value* to_accumulator(Value* ptr, Value* i) {
    Value* raw = load_bits(ptr, i);
    Type* f32 = b_.getFloatTy();
    switch (u_.dtype) {
      case DType::kF32: return b_.CreateBitCast(raw, f32);
      case DType::kF64: return b_.CreateBitCast(raw, b_.getDoubleTy());
      case DType::kBF16: return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(raw, b_.getInt32Ty()), 16), f32);
      case DType::kF16: return b_.CreateFPExt(b_.CreateBitCast(raw, b_.getHalfTy()), f32);
      case DType::kI32: case DType::kI64: return raw;
      case DType::kU8: return b_.CreateZExt(raw, b_.getInt32Ty());
      case DType::kBool: return b_.CreateZExt(b_.CreateICmpNE(raw, llvm::ConstantInt::get(raw->getType(), 0)), b_.getInt32Ty());
      case DType::kString: break;  // refused by Computation::add
    }
    KILN_CHECK(false, "unknown dtype");
    return nullptr;
  }

  // The box element i sits at x's index i + starts: dynamic_slice copies it out of x,
  // dynamic_update_slice copies update[i] into it.
  void dynamic_slice(Value* i) {
    const std::vector<Value*> idx = unravel(i, u_.box);
    const Dims strides = strides_of(u_.dims);
    Value* at = k(0);
    for (size_t d = 0; d < idx.size(); ++d) at = b_.CreateAdd(at, b_.CreateMul(b_.CreateAdd(idx[d], starts_[d]), k(strides[d])));
    if (u_.op == IndexKernelOp::kDynamicSlice) store_bits(dst(), i, load_bits(ptrs_[0], at));
    else store_bits(dst(), at, load_bits(ptrs_[0], i));
  }

  IRBuilder<>& b_;
  const IndexKernelUnit& u_;
  std::vector<Value*> ptrs_;
  Type* i64_;
  std::vector<Value*> starts_;  // dynamic slices, clamped
};

}  // namespace

void emit_index_kernel(const IndexKernelUnit& unit, KernelTarget target, llvm::Module& m) {
  llvm::LLVMContext& c = m.getContext();
  const bool gpu = target == KernelTarget::kNvptx;
  Type* ptr = llvm::PointerType::get(c, gpu ? 1 : 0);  // GPU: global memory
  Type* i64 = Type::getInt64Ty(c);
  std::vector<Type*> params = gpu ? std::vector<Type*>(unit.pointers(), ptr) : std::vector<Type*>{ptr, i64, i64};
  auto* f = llvm::Function::Create(llvm::FunctionType::get(Type::getVoidTy(c), params, false),
                                   llvm::Function::ExternalLinkage, unit.name, m);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", f));
  std::vector<Value*> ptrs;
  for (size_t p = 0; p < unit.pointers(); ++p)
    ptrs.push_back(gpu ? static_cast<Value*>(f->getArg(static_cast<unsigned>(p)))
                       : b.CreateAlignedLoad(ptr, b.CreateConstGEP1_64(ptr, f->getArg(0), p), llvm::Align(8)));
  IndexEmitter e(b, unit, ptrs);
  if (gpu) {
    Value* i = thread_index(b);
    auto* work = llvm::BasicBlock::Create(c, "work", f);
    auto* exit = llvm::BasicBlock::Create(c, "exit", f);
    b.CreateCondBr(b.CreateICmpSLT(i, llvm::ConstantInt::get(i64, static_cast<uint64_t>(unit.threads()))), work, exit);
    b.SetInsertPoint(work);
    e.prologue();
    e.element(i);
    b.CreateBr(exit);
    b.SetInsertPoint(exit);
    b.CreateRetVoid();
    mark_kernel(f, m);
  } else {
    e.prologue();
    emit_loop(b, f->getArg(1), f->getArg(2), 1, "i", [&](Value* i) { e.element(i); });
    b.CreateRetVoid();
  }
}

std::optional<IndexKernelUnit> IndexKernelUnit::of(const ir::Instruction& inst, std::string name) {
  const ir::Attrs& a = inst.attrs();
  const DType t = inst.dtype();
  const Dims& x = inst.operand_count() > 0 ? inst.operand(0)->shape().dims() : inst.shape().dims();
  std::vector<DType> starts;
  const size_t first_start = inst.opcode() == ir::Opcode::kDynamicUpdateSlice ? 2 : 1;
  for (size_t i = first_start; i < inst.operand_count(); ++i) starts.push_back(inst.operand(i)->dtype());
  switch (inst.opcode()) {
    case ir::Opcode::kPad: {
      HostTensor value(Shape(DType::kF64, {}));  // the value in the dtype, as the reference converts it
      value.data<double>()[0] = a.scalar;
      value = value.astype(t);
      uint64_t fill = 0;
      std::memcpy(&fill, value.raw_data(), static_cast<size_t>(size_of(t)));
      return pad(std::move(name), t, x, a.starts, a.limits, fill);
    }
    case ir::Opcode::kConcatenate: {
      Dims parts;
      for (const ir::Instruction* op : inst.operands()) parts.push_back(op->shape().dims().at(static_cast<size_t>(a.dims.at(0))));
      return concatenate(std::move(name), t, inst.shape().dims(), a.dims.at(0), std::move(parts));
    }
    case ir::Opcode::kGather: case ir::Opcode::kScatterAdd: {
      const Shape& indices = inst.operand(1)->shape();
      return (inst.opcode() == ir::Opcode::kGather ? gather : scatter_add)(std::move(name), t, x, a.dims.at(0),
                                                                           indices.num_elements(), indices.dtype());
    }
    case ir::Opcode::kDynamicSlice:
      return dynamic_slice(std::move(name), t, x, inst.shape().dims(), std::move(starts));
    case ir::Opcode::kDynamicUpdateSlice:
      return dynamic_update_slice(std::move(name), t, x, inst.operand(1)->shape().dims(), std::move(starts));
#define KILN_SKIP_Shape
#define KILN_SKIP_Index
#include "kiln/ir/opcode_cases.inc"
    case ir::Opcode::kBroadcastInDim: case ir::Opcode::kReshape: case ir::Opcode::kTranspose:
    case ir::Opcode::kSlice:
      return std::nullopt;
  }
  return std::nullopt;
}

IndexKernelUnit IndexKernelUnit::pad(std::string name, DType dtype, Dims dims, Dims low, Dims high, uint64_t fill) {
  KILN_CHECK(low.size() == dims.size() && high.size() == dims.size(), "pad: low/high per dim");
  IndexKernelUnit u{.name = std::move(name), .op = IndexKernelOp::kPad, .dtype = dtype, .dims = std::move(dims)};
  u.low = std::move(low);
  u.high = std::move(high);
  u.fill = fill;
  return u;
}

IndexKernelUnit IndexKernelUnit::concatenate(std::string name, DType dtype, Dims dims, int64_t axis, Dims parts) {
  KILN_CHECK(axis >= 0 && static_cast<size_t>(axis) < dims.size(), "concatenate: axis in range");
  IndexKernelUnit u{.name = std::move(name), .op = IndexKernelOp::kConcatenate, .dtype = dtype, .dims = std::move(dims),
                    .axis = axis};
  u.parts = std::move(parts);
  return u;
}

IndexKernelUnit IndexKernelUnit::gather(std::string name, DType dtype, Dims dims, int64_t axis, int64_t num_indices,
                                        DType index_dtype) {
  KILN_CHECK(axis >= 0 && static_cast<size_t>(axis) < dims.size(), "gather: axis in range");
  IndexKernelUnit u{.name = std::move(name), .op = IndexKernelOp::kGather, .dtype = dtype, .dims = std::move(dims),
                    .axis = axis};
  u.num_indices = num_indices;
  u.index_dtype = index_dtype;
  return u;
}

IndexKernelUnit IndexKernelUnit::scatter_add(std::string name, DType dtype, Dims dims, int64_t axis, int64_t num_indices,
                                             DType index_dtype) {
  IndexKernelUnit u = gather(std::move(name), dtype, std::move(dims), axis, num_indices, index_dtype);
  u.op = IndexKernelOp::kScatterAdd;
  u.accumulator = scatter_accumulator(dtype);
  return u;
}

IndexKernelUnit IndexKernelUnit::dynamic_slice(std::string name, DType dtype, Dims dims, Dims box,
                                               std::vector<DType> start_dtypes) {
  KILN_CHECK(box.size() == dims.size() && start_dtypes.size() == dims.size(), "dynamic slice: a box and a start per dim");
  IndexKernelUnit u{.name = std::move(name), .op = IndexKernelOp::kDynamicSlice, .dtype = dtype, .dims = std::move(dims)};
  u.box = std::move(box);
  u.start_dtypes = std::move(start_dtypes);
  return u;
}

IndexKernelUnit IndexKernelUnit::dynamic_update_slice(std::string name, DType dtype, Dims dims, Dims box,
                                                      std::vector<DType> start_dtypes) {
  IndexKernelUnit u = dynamic_slice(std::move(name), dtype, std::move(dims), std::move(box), std::move(start_dtypes));
  u.op = IndexKernelOp::kDynamicUpdateSlice;
  return u;
}

int64_t IndexKernelUnit::threads() const {
  switch (op) {
    case IndexKernelOp::kPad: {
      int64_t n = 1;
      for (size_t d = 0; d < dims.size(); ++d) n *= dims[d] + low[d] + high[d];
      return n;
    }
    case IndexKernelOp::kConcatenate: return product(dims);
    case IndexKernelOp::kGather: case IndexKernelOp::kScatterAdd: {
      const AxisView v = axis_view(dims, axis);
      return v.outer * num_indices * v.inner;
    }
    case IndexKernelOp::kDynamicSlice: case IndexKernelOp::kDynamicUpdateSlice: return product(box);
  }
  return 0;
}

size_t IndexKernelUnit::pointers() const {
  switch (op) {
    case IndexKernelOp::kPad: return 2;
    case IndexKernelOp::kConcatenate: return parts.size() + 1;
    case IndexKernelOp::kGather: case IndexKernelOp::kScatterAdd: return 3;
    case IndexKernelOp::kDynamicSlice: case IndexKernelOp::kDynamicUpdateSlice: return start_dtypes.size() + 2;
  }
  return 0;
}

std::string IndexKernelUnit::key() const {
  std::string starts;
  for (DType t : start_dtypes) starts += str_cat(kiln::name(t), ",");
  return str_cat(name, " index ", static_cast<int>(op), " ", kiln::name(dtype), " ", dims_to_string(dims), " axis ", axis,
                 " low ", dims_to_string(low), " high ", dims_to_string(high), " fill ", fill, " parts ",
                 dims_to_string(parts), " indices ", num_indices, " ", kiln::name(index_dtype), " acc ",
                 kiln::name(accumulator), " box ", dims_to_string(box), " starts ", starts);
}

DType scatter_accumulator(DType dtype) {
  switch (dtype) {
    case DType::kBF16: case DType::kF16: return DType::kF32;
    case DType::kU8: case DType::kBool: return DType::kI32;
    default: return dtype;
  }
}

}  // namespace kiln::codegen
