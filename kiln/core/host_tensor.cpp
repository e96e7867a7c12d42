// HostTensor allocation, reshaping, copying and dtype conversion.
#include "kiln/core/host_tensor.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kiln/core/dtype_dispatch.h"

namespace kiln {
namespace {

std::shared_ptr<std::byte> allocate_aligned(int64_t bytes, const Shape& shape, bool zero) {
  // Plain malloc plus manual alignment, not aligned_alloc: glibc's memalign path splits and
  // frees the slack around every block, which makes per-element tensors (a map's outputs, freed
  // on another thread) several times dearer. The deleter frees the original pointer.
  // The usable size stays a non-zero multiple of the alignment, as kernels may read a whole
  // vector past the last element.
  size_t size = (static_cast<size_t>(bytes) + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  if (size == 0) size = kHostAlignment;
  void* base = std::malloc(size + kHostAlignment - 1);
  if (base == nullptr)
    KILN_THROW(OutOfMemoryError, "[HostTensor] cannot allocate ", bytes, " bytes for ", shape,
               ". Hint: reduce the batch size or use bf16 to halve activation memory.");
  const uintptr_t aligned =
      (reinterpret_cast<uintptr_t>(base) + kHostAlignment - 1) & ~uintptr_t{kHostAlignment - 1};
  auto* p = reinterpret_cast<std::byte*>(aligned);
  if (zero) std::memset(p, 0, size);
  return std::shared_ptr<std::byte>(p, [base](std::byte*) { std::free(base); });
}

}  // namespace

HostTensor::HostTensor(Shape shape) : shape_(std::move(shape)) {
  storage_ = allocate_aligned(shape_.byte_size(), shape_, /*zero=*/true);
  data_ = storage_.get();
}

HostTensor HostTensor::uninitialized(Shape shape) {
  HostTensor t;
  t.shape_ = std::move(shape);
  t.storage_ = allocate_aligned(t.shape_.byte_size(), t.shape_, /*zero=*/false);
  t.data_ = t.storage_.get();
  return t;
}

HostTensor HostTensor::from_storage(Shape shape, std::shared_ptr<std::byte> storage) {
  KILN_CHECK(storage != nullptr, "from_storage needs storage for ", shape);
  HostTensor t;
  t.shape_ = std::move(shape);
  t.storage_ = std::move(storage);
  t.data_ = t.storage_.get();
  return t;
}

HostTensor HostTensor::view(Shape shape, void* data) {
  HostTensor t;
  t.shape_ = std::move(shape);
  t.storage_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(data), [](std::byte*) {});
  t.data_ = data;
  return t;
}

void HostTensor::check_type(DType requested) const {
  KILN_CHECK(defined(), "access to the data of an undefined HostTensor");
  if (requested != dtype())
    KILN_THROW(DTypeError, "[HostTensor] requested ", requested, " elements of a ", shape(),
               " tensor. Hint: convert with astype(", requested, ") first.");
}

HostTensor HostTensor::reshape(Dims dims) const {
  Shape target(dtype(), std::move(dims));
  if (target.num_elements() != num_elements())
    KILN_THROW(ShapeError, "[HostTensor::reshape] cannot reshape ", shape(), " to ", target,
               ": element counts differ (", num_elements(), " vs ", target.num_elements(), ").");
  HostTensor r = *this;
  r.shape_ = std::move(target);
  return r;
}

HostTensor HostTensor::clone() const {
  if (!defined()) return {};
  HostTensor r = uninitialized(shape_);
  std::memcpy(r.data_, data_, static_cast<size_t>(byte_size()));
  return r;
}

HostTensor HostTensor::astype(DType target) const {
  if (target == dtype()) return *this;
  HostTensor r = uninitialized(shape_.with_dtype(target));
  const int64_t n = num_elements();
  visit_dtype(dtype(), [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    visit_dtype(target, [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      const S* src = static_cast<const S*>(data_);
      D* dst = static_cast<D*>(r.data_);
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<D, BF16> || std::is_same_v<D, F16>)
          dst[i] = D(static_cast<float>(to_double(src[i])));  // f64 sources round via f32
        else if constexpr (std::is_same_v<S, int64_t> && std::is_integral_v<D>)
          dst[i] = static_cast<D>(src[i]);  // exact for large i64 values, unlike a double trip
        else
          dst[i] = from_double<D>(to_double(src[i]));
      }
    });
  });
  return r;
}

HostTensor HostTensor::slice_rows(int64_t begin, int64_t end) const {
  if (rank() == 0 || begin < 0 || end < begin || end > dims()[0])
    KILN_THROW(ShapeError, "[HostTensor::slice_rows] rows [", begin, ", ", end,
               ") are out of range for ", shape(), ".");
  Dims d = dims();
  const int64_t row_bytes = d[0] == 0 ? 0 : byte_size() / d[0];
  d[0] = end - begin;
  HostTensor r = *this;
  r.shape_ = Shape(dtype(), std::move(d));
  r.data_ = static_cast<std::byte*>(data_) + begin * row_bytes;
  return r;
}

HostTensor HostTensor::view_at(Shape shape, int64_t byte_offset) const {
  if (!defined() || byte_offset < 0 || byte_offset + shape.byte_size() > byte_size())
    KILN_THROW(ShapeError, "[HostTensor::view_at] ", shape, " at byte ", byte_offset,
               " does not fit in ", defined() ? shape_.to_string() : std::string("an undefined tensor"),
               ".");
  HostTensor r;
  r.shape_ = std::move(shape);
  r.storage_ = storage_;
  r.data_ = static_cast<std::byte*>(data_) + byte_offset;
  return r;
}

}  // namespace kiln
