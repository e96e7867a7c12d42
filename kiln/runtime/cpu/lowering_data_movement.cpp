// The CPU lowering's data movement (cpu_lowerer_impl.h): reshape, concatenate and pad as
// copies, gather, scatter_add and the dynamic slices on the index kernels (index_kernels.h).
#include "kiln/runtime/cpu/cpu_lowerer_impl.h"

#include <algorithm>
#include <cstring>

#include "kiln/runtime/cpu/index_kernels.h"

namespace kiln::cpu::lowering {
namespace {

// `count` copies of the element `value` from `dst` on: one element, then doubling copies
// (an element-sized memcpy per element costs more than the pad itself).
void fill_repeated(std::byte* dst, int64_t count, const std::vector<std::byte>& value) {
  const int64_t total = count * static_cast<int64_t>(value.size());
  if (total == 0) return;
  std::memcpy(dst, value.data(), value.size());
  for (int64_t done = static_cast<int64_t>(value.size()); done < total; done *= 2)
    std::memcpy(dst + done, dst, static_cast<size_t>(std::min(done, total - done)));
}

}  // namespace

bool Lowerer::reshape(const Instruction& inst) {
  add(inst, "copy(reshape)", copy_run(inst));
  return true;
}

// out: (outer, axis, inner) row-major, so each operand is `outer` contiguous blocks of its
// axis x inner elements, copied side by side into each out row.
bool Lowerer::concatenate(const Instruction& inst) {
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
  return true;
}

// out = value everywhere, then the part of x that stays (negative padding crops it) copied
// in runs along the last dim. x: xd, out: od = xd + low + high per dim.
bool Lowerer::pad(const Instruction& inst) {
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
  return true;
}

bool Lowerer::gather(const Instruction& inst) {
  IndexGeometry g = IndexGeometry::of(inst.operand(0)->shape(), inst.operand(1)->shape(), inst.attrs().dims[0]);
  add_team(inst, "gather", inst.shape().num_elements(), [g](const void* const* in, void* out) {
    gather_team(g, in[0], in[1], out);
  });
  return true;
}

// scatter_add_supported: f32 and f64 (reference_fallbacks.cpp lists the rest).
bool Lowerer::scatter_add(const Instruction& inst) {
  const DType t = inst.dtype();
  if (!scatter_add_supported(t)) return false;
  IndexGeometry g = IndexGeometry::of(inst.operand(0)->shape(), inst.operand(1)->shape(), inst.attrs().dims[0]);
  add_team(inst, "scatter_add", inst.shape().num_elements(), [g, t](const void* const* in, void* out) {
    scatter_add_team(g, t, in[0], in[1], in[2], out);
  });
  return true;
}

bool Lowerer::dynamic_slice(const Instruction& inst) { return add_dynamic_slice(inst); }
bool Lowerer::dynamic_update_slice(const Instruction& inst) { return add_dynamic_slice(inst); }

bool Lowerer::same_bytes(const Instruction* a, const Instruction* b) const {
  const compiler::BufferInfo& x = exe_.plan().storage(a);
  const compiler::BufferInfo& y = exe_.plan().storage(b);
  const auto in_argument = [](const compiler::BufferInfo& i) {
    return i.kind == compiler::BufferKind::kParameter || i.kind == compiler::BufferKind::kDonated;
  };
  if (in_argument(x) && in_argument(y)) return x.parameter_index == y.parameter_index;
  return x.kind == compiler::BufferKind::kArena && y.kind == compiler::BufferKind::kArena && x.offset == y.offset;
}

bool Lowerer::add_dynamic_slice(const Instruction& inst) {
  const bool update = inst.opcode() == Opcode::kDynamicUpdateSlice;
  const size_t first = update ? 2 : 1;
  BoxGeometry g;
  g.x_dims = inst.operand(0)->shape().dims();
  g.box = update ? inst.operand(1)->shape().dims() : inst.shape().dims();
  g.element_size = size_of(inst.dtype());
  for (size_t i = first; i < inst.operand_count(); ++i) g.index_dtypes.push_back(inst.operand(i)->dtype());
  if (update) {
    // The plan gave the result x's own bytes (a dying x, or a donated loop-carried buffer):
    // the kernel then writes just the update.
    const bool in_place = same_bytes(&inst, inst.operand(0));
    add(inst, in_place ? "dynamic_update_slice(in place)" : "dynamic_update_slice(copy)", [g](const void* const* in, void* out) {
      cpu::dynamic_update_slice(g, g.clamped_starts(in + 2), in[0], in[1], out);
    });
  } else {
    add(inst, "dynamic_slice(copy)", [g](const void* const* in, void* out) {
      cpu::dynamic_slice(g, g.clamped_starts(in + 1), in[0], out);
    });
  }
  return true;
}

}  // namespace kiln::cpu::lowering
