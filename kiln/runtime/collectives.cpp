// The collectives made of one exchange: each replica reads its group's operands and writes its
// own result, in group order (sums add member 0, then 1, ... in the operand's type, as the
// reference evaluator's collectives do, so results are bit-identical to it and run to run).
#include "kiln/runtime/collectives.h"

#include <cstring>
#include <numeric>

#include "kiln/core/check.h"
#include "kiln/ir/collectives.h"

namespace kiln::runtime {
namespace {

// x seen as [outer, x.dims[d] * inner]: the rows before d and the elements after it.
struct Rows {
  int64_t outer = 1, inner = 1;
};
Rows rows_at(const Shape& x, int64_t d) {
  Rows r;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i < d) r.outer *= x.dims()[static_cast<size_t>(i)];
    if (i > d) r.inner *= x.dims()[static_cast<size_t>(i)];
  }
  return r;
}

ir::GroupPlace place_of(const Collectives& c, int replica, const Collectives::Groups& groups) {
  return ir::group_place(groups, c.num_replicas(), c.global_replica_id(replica));
}

template <typename T>
void sum_typed(const std::vector<const void*>& blocks, int64_t count, void* dst) {
  T* out = static_cast<T*>(dst);
  std::memcpy(out, blocks[0], static_cast<size_t>(count) * sizeof(T));
  for (size_t b = 1; b < blocks.size(); ++b) {
    const T* in = static_cast<const T*>(blocks[b]);
    for (int64_t i = 0; i < count; ++i) out[i] += in[i];
  }
}

template <typename T>
void divide_typed(void* data, int64_t count, int64_t divisor) {
  T* p = static_cast<T*>(data);
  for (int64_t i = 0; i < count; ++i) p[i] /= static_cast<T>(divisor);
}

// The group's blocks reduced into dst: their sum in order (their mean for kMean).
void reduce_blocks(DType dtype, const std::vector<const std::byte*>& blocks, int64_t count, ir::ReduceKind kind,
                   void* dst) {
  sum_in_order(dtype, std::vector<const void*>(blocks.begin(), blocks.end()), count, dst);
  if (kind == ir::ReduceKind::kMean) divide_by(dtype, dst, count, static_cast<int64_t>(blocks.size()));
}

void check_reduction(const char* op, ir::ReduceKind kind, DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kF64 && dtype != DType::kI32 && dtype != DType::kI64)
    KILN_THROW(DTypeError, "[", op, "] reduces f32, f64, i32 and i64 tensors, received ", name(dtype),
               ". Hint: reduce in f32 (cast a 16-bit value first).");
  if (kind != ir::ReduceKind::kSum && kind != ir::ReduceKind::kMean)
    KILN_THROW(ValueError, "[", op, "] supports sum and mean, received ", ir::reduce_kind_name(kind), ".");
}

}  // namespace

void sum_in_order(DType dtype, const std::vector<const void*>& blocks, int64_t count, void* dst) {
  switch (dtype) {
    case DType::kF32: return sum_typed<float>(blocks, count, dst);
    case DType::kF64: return sum_typed<double>(blocks, count, dst);
    case DType::kI32: return sum_typed<int32_t>(blocks, count, dst);
    case DType::kI64: return sum_typed<int64_t>(blocks, count, dst);
    default: break;
  }
  KILN_CHECK(false, "a collective sum of ", name(dtype), " (its caller checks f32, f64, i32 and i64)");
}

void divide_by(DType dtype, void* data, int64_t count, int64_t divisor) {
  switch (dtype) {
    case DType::kF32: return divide_typed<float>(data, count, divisor);
    case DType::kF64: return divide_typed<double>(data, count, divisor);
    case DType::kI32: return divide_typed<int32_t>(data, count, divisor);
    case DType::kI64: return divide_typed<int64_t>(data, count, divisor);
    default: break;
  }
  KILN_CHECK(false, "a collective mean of ", name(dtype), " (its caller checks f32, f64, i32 and i64)");
}

void Collectives::exchange(int, const void*, int64_t, const OfferReader&) {
  KILN_THROW(ConfigError, "[collectives] these replicas' collectives run all_reduce only; all_gather, reduce_scatter, "
             "all_to_all, collective_permute and grouped all_reduce need a MirroredStrategy over CPU devices or MPI "
             "ranks, or the cuda backend's NCCL lowering.");
}

void Collectives::all_reduce_in_groups(int replica, const Groups& groups, ir::ReduceKind kind, DType dtype, void* data,
                                       int64_t count) {
  check_reduction("all_reduce", kind, dtype);
  const ir::GroupPlace place = place_of(*this, replica, groups);
  exchange(replica, data, count * static_cast<int64_t>(size_of(dtype)), [&](std::span<const std::byte* const> offers) {
    std::vector<const std::byte*> blocks;
    for (int64_t m : place.members) blocks.push_back(offers[static_cast<size_t>(m)]);
    reduce_blocks(dtype, blocks, count, kind, data);
  });
}

void Collectives::all_gather(int replica, const Groups& groups, const Shape& x, int64_t dim, const void* in,
                             void* out) {
  const ir::GroupPlace place = place_of(*this, replica, groups);
  const Rows r = rows_at(x, dim);
  const int64_t row = x.dims()[static_cast<size_t>(dim)] * r.inner * static_cast<int64_t>(size_of(x.dtype()));
  const int64_t k = static_cast<int64_t>(place.members.size());
  exchange(replica, in, x.byte_size(), [&](std::span<const std::byte* const> offers) {
    auto* dst = static_cast<std::byte*>(out);
    for (int64_t o = 0; o < r.outer; ++o)
      for (int64_t i = 0; i < k; ++i)
        std::memcpy(dst + (o * k + i) * row, offers[static_cast<size_t>(place.members[static_cast<size_t>(i)])] + o * row,
                    static_cast<size_t>(row));
  });
}

void Collectives::reduce_scatter(int replica, const Groups& groups, ir::ReduceKind kind, const Shape& x, int64_t dim,
                                 const void* in, void* out) {
  check_reduction("reduce_scatter", kind, x.dtype());
  const ir::GroupPlace place = place_of(*this, replica, groups);
  const Rows r = rows_at(x, dim);
  const int64_t k = static_cast<int64_t>(place.members.size());
  const int64_t block = x.dims()[static_cast<size_t>(dim)] / k * r.inner;  // elements of one part's row
  const int64_t esize = static_cast<int64_t>(size_of(x.dtype()));
  exchange(replica, in, x.byte_size(), [&](std::span<const std::byte* const> offers) {
    std::vector<const std::byte*> blocks(static_cast<size_t>(k));
    for (int64_t o = 0; o < r.outer; ++o) {
      for (int64_t i = 0; i < k; ++i)
        blocks[static_cast<size_t>(i)] =
            offers[static_cast<size_t>(place.members[static_cast<size_t>(i)])] + (o * k + place.position) * block * esize;
      reduce_blocks(x.dtype(), blocks, block, kind, static_cast<std::byte*>(out) + o * block * esize);
    }
  });
}

void Collectives::all_to_all(int replica, const Groups& groups, const Shape& x, int64_t split_dim, int64_t concat_dim,
                             const void* in, void* out) {
  const ir::GroupPlace place = place_of(*this, replica, groups);
  const int64_t k = static_cast<int64_t>(place.members.size());
  Dims part = x.dims();
  part[static_cast<size_t>(split_dim)] /= k;
  const Shape part_shape(x.dtype(), part);
  // Element e of a part sits at (e / sb) * k * sb + p * sb + e % sb in its sender's x (split
  // rows of sb elements) and at (e / cb) * k * cb + i * cb + e % cb in the output (concat rows
  // of cb); runs of gcd(sb, cb) elements are contiguous in both.
  const int64_t sb = part[static_cast<size_t>(split_dim)] * rows_at(x, split_dim).inner;
  const int64_t cb = part[static_cast<size_t>(concat_dim)] * rows_at(part_shape, concat_dim).inner;
  const int64_t elements = part_shape.num_elements();
  const int64_t run = std::gcd(sb, cb);
  const int64_t esize = static_cast<int64_t>(size_of(x.dtype()));
  exchange(replica, in, x.byte_size(), [&](std::span<const std::byte* const> offers) {
    auto* dst = static_cast<std::byte*>(out);
    for (int64_t i = 0; i < k; ++i) {
      const std::byte* src = offers[static_cast<size_t>(place.members[static_cast<size_t>(i)])];
      for (int64_t e = 0; e < elements; e += run) {
        const int64_t from = (e / sb) * k * sb + place.position * sb + e % sb;
        const int64_t to = (e / cb) * k * cb + i * cb + e % cb;
        std::memcpy(dst + to * esize, src + from * esize, static_cast<size_t>(run * esize));
      }
    }
  });
}

void Collectives::collective_permute(int replica, const Groups& groups,
                                     const std::vector<std::pair<int64_t, int64_t>>& pairs, const Shape& x,
                                     const void* in, void* out) {
  const ir::GroupPlace place = place_of(*this, replica, groups);
  exchange(replica, in, x.byte_size(), [&](std::span<const std::byte* const> offers) {
    for (const auto& [source, target] : pairs)
      if (target == place.position) {
        std::memcpy(out, offers[static_cast<size_t>(place.members[static_cast<size_t>(source)])],
                    static_cast<size_t>(x.byte_size()));
        return;
      }
    std::memset(out, 0, static_cast<size_t>(x.byte_size()));
  });
}

}  // namespace kiln::runtime
