// The rendezvous and the fixed-order reduction of InProcessCollectives.
#include "kiln/distribute/in_process_collectives.h"

#include <cstring>

#include "kiln/core/check.h"

namespace kiln::distribute {

InProcessCollectives::InProcessCollectives(int local, int total, CrossProcessSum cross, CrossProcessGather gather,
                                           int process)
    : local_(local), total_(total), process_(process), cross_(std::move(cross)), gather_(std::move(gather)),
      buffers_(static_cast<size_t>(local), nullptr) {
  KILN_CHECK(local >= 1 && total >= local && total % local == 0, "bad replica counts local=", local, " total=", total);
  KILN_CHECK(total == local || cross_, "replicas in other processes need a cross-process sum");
  KILN_CHECK(process >= 0 && (process + 1) * local <= total, "process ", process, " of ", total / local);
}

void InProcessCollectives::all_reduce(int replica, ir::ReduceKind kind, DType dtype, void* data, int64_t count) {
  if (dtype != DType::kF32 && dtype != DType::kF64 && dtype != DType::kI32 && dtype != DType::kI64)
    KILN_THROW(DTypeError, "[all_reduce] reduces f32, f64, i32 and i64 tensors, received ", name(dtype),
               ". Hint: all-reduce gradients in f32: under a mixed_bfloat16 or mixed_float16 policy the variables, and so "
               "their gradients, stay f32; cast a 16-bit value to f32 before reducing it.");
  if (kind != ir::ReduceKind::kSum && kind != ir::ReduceKind::kMean)
    KILN_THROW(ValueError, "[all_reduce] supports sum and mean, received ", ir::reduce_kind_name(kind), ".");
  std::unique_lock<std::mutex> lock(mutex_);
  rendezvous(lock, replica, data, count, "all-reduces", [&] { reduce_locked(kind, dtype, count); });
}

void InProcessCollectives::exchange(int replica, const void* in, int64_t bytes, const OfferReader& read) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Only read here: the offers are copied before any replica reads them.
  rendezvous(lock, replica, const_cast<void*>(in), bytes, "exchanges", [&] { gather_locked(bytes); });
  std::vector<const std::byte*> offers(static_cast<size_t>(total_));
  for (size_t r = 0; r < offers.size(); ++r) offers[r] = offers_.data() + static_cast<int64_t>(r) * bytes;
  lock.unlock();
  read(offers);
}

void InProcessCollectives::rendezvous(std::unique_lock<std::mutex>& lock, int replica, void* data, int64_t count,
                                      const char* what, const std::function<void()>& complete) {
  KILN_CHECK(replica >= 0 && replica < local_, "replica id ", replica, " outside 0..", local_ - 1);
  if (aborted_) throw ReplicaAborted{};
  if (arrived_ == 0) count_ = count;
  KILN_CHECK(count == count_, "replica ", replica, " ", what, " ", count, " elements, another ", count_,
             ": the replicas run different programs");
  KILN_CHECK(buffers_[static_cast<size_t>(replica)] == nullptr, "replica ", replica, " arrived twice");
  buffers_[static_cast<size_t>(replica)] = data;
  if (++arrived_ < local_) {
    const uint64_t generation = generation_;
    cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
    if (generation_ == generation) throw ReplicaAborted{};
    return;
  }
  complete();
  std::fill(buffers_.begin(), buffers_.end(), nullptr);
  arrived_ = 0;
  ++generation_;
  cv_.notify_all();
}

void InProcessCollectives::gather_locked(int64_t bytes) {
  // One process: its replicas' operands are all the offers; else they are this process's part.
  std::vector<std::byte>& mine = total_ == local_ ? offers_ : local_offers_;
  mine.resize(static_cast<size_t>(local_ * bytes));
  for (int r = 0; r < local_ && bytes > 0; ++r)
    std::memcpy(mine.data() + r * bytes, buffers_[static_cast<size_t>(r)], static_cast<size_t>(bytes));
  if (total_ == local_) return;
  KILN_CHECK(gather_, "replicas in other processes need a cross-process gather");
  offers_.resize(static_cast<size_t>(total_ * bytes));
  gather_(local_offers_.data(), local_ * bytes, offers_.data());
}

void InProcessCollectives::reduce_locked(ir::ReduceKind kind, DType dtype, int64_t count) {
  const size_t bytes = static_cast<size_t>(count) * size_of(dtype);
  scratch_.resize(bytes);
  void* sum = scratch_.data();
  runtime::sum_in_order(dtype, std::vector<const void*>(buffers_.begin(), buffers_.end()), count, sum);
  if (cross_) cross_(dtype, sum, count);
  if (kind == ir::ReduceKind::kMean) runtime::divide_by(dtype, sum, count, total_);
  for (void* b : buffers_) std::memcpy(b, sum, bytes);
}

void InProcessCollectives::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
  cv_.notify_all();
}

void InProcessCollectives::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = false;
  arrived_ = 0;
  std::fill(buffers_.begin(), buffers_.end(), nullptr);
}

}  // namespace kiln::distribute
