// Reductions. Fast paths: reduced axes form a suffix (each output reduces one contiguous run)
// or a prefix (outputs are columns: rows are accumulated in order). Anything else walks the
// reduced multi-index per output.
#include "kiln/runtime/cpu/reduce_kernel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/core/dtype_dispatch.h"
#include "kiln/core/host_tensor.h"
#include "kiln/ir/instruction.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "kiln/runtime/cpu/team.h"

namespace kiln::cpu {
namespace {

template <typename A>
struct Reducer {
  ir::Opcode op;
  A init() const {
    switch (op) {
      case ir::Opcode::kReduceMax: return -std::numeric_limits<A>::infinity();
      case ir::Opcode::kReduceMin: return std::numeric_limits<A>::infinity();
      default: return A(0);
    }
  }
  A combine(A acc, A v) const {
    switch (op) {
      case ir::Opcode::kReduceMax: return (v > acc || v != v) ? v : acc;
      case ir::Opcode::kReduceMin: return (v < acc || v != v) ? v : acc;
      default: return acc + v;
    }
  }
};

template <typename A, typename S>
inline A widen(S s) {
  if constexpr (std::is_same_v<S, BF16> || std::is_same_v<S, F16>) return static_cast<A>(static_cast<float>(s));
  else return static_cast<A>(s);
}

template <typename D, typename A>
inline D narrow(A a) {
  if constexpr (std::is_same_v<D, BF16> || std::is_same_v<D, F16>) return D(static_cast<float>(a));
  else if constexpr (std::is_same_v<D, bool>) return a != A(0);
  else return static_cast<D>(a);
}

// Reads ranges of the reduction's input as A: from memory, or computed by the fused producer.
template <typename A>
struct InputReader {
  DType dtype;
  const void* data = nullptr;         // when the input is in memory
  const LoopKernel* producer = nullptr;  // when it is computed on the fly (prepared)

  void read(int64_t base, int64_t n, A* dst, LoopScratch& scratch) const {
    if (producer != nullptr) {
      producer->read<A>(base, n, dst, scratch);
      return;
    }
    visit_dtype(dtype, [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* src = static_cast<const S*>(data) + base;
      for (int64_t j = 0; j < n; ++j) dst[j] = widen<A>(src[j]);
    });
  }
};

constexpr int64_t kBlock = 1024;

template <typename D, typename A>
void reduce_typed(const Reducer<A>& r, const Shape& in_shape, const Dims& axes, const InputReader<A>& in, D* out) {
  const Dims& dims = in_shape.dims();
  const int rank = in_shape.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  int64_t kept_count = 1, reduced_count = 1;
  for (int d = 0; d < rank; ++d) (reduced[static_cast<size_t>(d)] ? reduced_count : kept_count) *= dims[static_cast<size_t>(d)];
  const int nred = static_cast<int>(axes.size());
  bool suffix = true, prefix = true;
  for (int i = 0; i < nred; ++i) {
    suffix = suffix && axes[static_cast<size_t>(i)] == rank - nred + i;
    prefix = prefix && axes[static_cast<size_t>(i)] == i;
  }
  if (suffix) {  // out[o] = reduce(in[o*R : (o+1)*R]), in order
    {
      LoopScratch scratch;
      std::vector<A> buf(static_cast<size_t>(kBlock));
#pragma omp for schedule(static)
      for (int64_t o = 0; o < kept_count; ++o) {
        A acc = r.init();
        for (int64_t k0 = 0; k0 < reduced_count; k0 += kBlock) {
          const int64_t n = std::min(kBlock, reduced_count - k0);
          in.read(o * reduced_count + k0, n, buf.data(), scratch);
          for (int64_t k = 0; k < n; ++k) acc = r.combine(acc, buf[static_cast<size_t>(k)]);
        }
        out[o] = narrow<D>(acc);
      }
    }
    return;
  }
  if (prefix) {  // columns: each thread owns a block of outputs and walks every row in order
    const int64_t blocks = (kept_count + kBlock - 1) / kBlock;
    {
      LoopScratch scratch;
      std::vector<A> buf(static_cast<size_t>(kBlock)), acc(static_cast<size_t>(kBlock));
#pragma omp for schedule(static)
      for (int64_t bi = 0; bi < blocks; ++bi) {
        const int64_t j0 = bi * kBlock, n = std::min(kBlock, kept_count - j0);
        std::fill(acc.begin(), acc.end(), r.init());
        for (int64_t i = 0; i < reduced_count; ++i) {
          in.read(i * kept_count + j0, n, buf.data(), scratch);
          for (int64_t j = 0; j < n; ++j) acc[static_cast<size_t>(j)] = r.combine(acc[static_cast<size_t>(j)], buf[static_cast<size_t>(j)]);
        }
        for (int64_t j = 0; j < n; ++j) out[j0 + j] = narrow<D>(acc[static_cast<size_t>(j)]);
      }
    }
    return;
  }
  // General: per output, walk the reduced multi-index; reads one element at a time (rare path).
  Dims strides(static_cast<size_t>(rank), 1);
  for (int d = rank - 1; d > 0; --d) strides[static_cast<size_t>(d - 1)] = strides[static_cast<size_t>(d)] * dims[static_cast<size_t>(d)];
  Dims kdims, kstrides, rdims, rstrides;
  for (int d = 0; d < rank; ++d) {
    auto& dd = reduced[static_cast<size_t>(d)] ? rdims : kdims;
    auto& ss = reduced[static_cast<size_t>(d)] ? rstrides : kstrides;
    dd.push_back(dims[static_cast<size_t>(d)]);
    ss.push_back(strides[static_cast<size_t>(d)]);
  }
  auto offset_of = [](int64_t linear, const Dims& ds, const Dims& ss) {
    int64_t off = 0;
    for (size_t d = ds.size(); d-- > 0;) {
      off += (linear % ds[d]) * ss[d];
      linear /= ds[d];
    }
    return off;
  };
  {
    LoopScratch scratch;
#pragma omp for schedule(static)
    for (int64_t o = 0; o < kept_count; ++o) {
      const int64_t base = offset_of(o, kdims, kstrides);
      A acc = r.init();
      for (int64_t k = 0; k < reduced_count; ++k) {
        A v;
        in.read(base + offset_of(k, rdims, rstrides), 1, &v, scratch);
        acc = r.combine(acc, v);
      }
      out[o] = narrow<D>(acc);
    }
  }
}

}  // namespace

ReduceKernel::~ReduceKernel() = default;

std::unique_ptr<ReduceKernel> ReduceKernel::create(const ir::Instruction& reduce) {
  std::unique_ptr<ReduceKernel> k(new ReduceKernel());
  k->op_ = reduce.opcode();
  k->in_shape_ = reduce.operand(0)->shape();
  k->out_shape_ = reduce.shape();
  k->axes_ = reduce.attrs().dims;
  const ir::Instruction* x = reduce.operand(0);
  if (x->opcode() == ir::Opcode::kParameter) {
    k->input_parameter_ = static_cast<int>(x->attrs().parameter_index);
  } else {
    k->producer_ = LoopKernel::create_for(*x);
    if (k->producer_ == nullptr) return nullptr;
  }
  return k;
}

int64_t ReduceKernel::work() const { return in_shape_.num_elements(); }

void ReduceKernel::run(const void* const* inputs, void* out) const {
  run_on_team(work() >= kParallelThreshold, [&] { run_team(inputs, out); });
}

// Team work: reduce_typed's loops are orphaned `omp for`s.
void ReduceKernel::run_team(const void* const* inputs, void* out) const {
  if (producer_ != nullptr) producer_->prepare_team(inputs);
  auto go = [&](auto acc_tag) {
    using A = typename decltype(acc_tag)::type;
    InputReader<A> reader{in_shape_.dtype()};
    if (producer_ != nullptr) reader.producer = producer_.get();
    else reader.data = inputs[input_parameter_];
    visit_dtype(out_shape_.dtype(), [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      reduce_typed<D, A>(Reducer<A>{op_}, in_shape_, axes_, reader, static_cast<D*>(out));
    });
  };
  if (in_shape_.dtype() == DType::kF64 || in_shape_.dtype() == DType::kI64) go(TypeTag<double>{});
  else go(TypeTag<float>{});
}

void argmax(const Shape& in_shape, int axis, const void* in, void* out) {
  const Dims& dims = in_shape.dims();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[static_cast<size_t>(d)];
  for (int d = axis + 1; d < in_shape.rank(); ++d) inner *= dims[static_cast<size_t>(d)];
  const int64_t n = dims[static_cast<size_t>(axis)];
  int32_t* o = static_cast<int32_t*>(out);
  visit_dtype(in_shape.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* x = static_cast<const S*>(in);
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t b = 0; b < inner; ++b) {
        double best = -std::numeric_limits<double>::infinity();
        int32_t best_i = 0;
        for (int64_t i = 0; i < n; ++i) {
          double v = to_double(x[(a * n + i) * inner + b]);
          if (v > best || (v != v && best == best)) {  // the first NaN wins, as a maximum
            best = v;
            best_i = static_cast<int32_t>(i);
          }
        }
        o[a * inner + b] = best_i;
      }
  });
}

}  // namespace kiln::cpu
