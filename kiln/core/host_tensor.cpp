// HostTensor allocation, reshaping, copying and dtype conversion.
#include "kiln/core/host_tensor.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "kiln/core/dtype_dispatch.h"

namespace kiln {
namespace {

// Storage of small and medium tensors comes from a size-class cache in front of malloc. Input
// pipelines make and drop one such tensor per element (a map's 3 KB output), often freed on
// another thread than the one that made it. glibc serves those sizes from its locked arenas
// (tcache stops at 1 KB), and a cross-thread free there costs more than the map itself; here a
// free block goes to the freeing thread's list and moves to a shared list (one lock) in
// batches, where the allocating thread picks it up again in batches.
// Under AddressSanitizer every block goes straight to malloc, so use-after-free stays caught.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheStorage = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCacheStorage = false;
#else
constexpr bool kCacheStorage = true;
#endif
#else
constexpr bool kCacheStorage = true;
#endif

constexpr size_t kGranule = 256;                      // size classes are multiples of this
constexpr size_t kMaxCachedBytes = 64 * 1024;         // larger blocks always use malloc
constexpr size_t kClasses = kMaxCachedBytes / kGranule;
constexpr size_t kThreadCacheBytes = 128 * 1024;      // per class and thread, at most
// All classes together, shared by all threads: enough to hand a whole shuffle buffer of
// MNIST-sized elements (31 MB), dropped at the end of an epoch, to the next epoch's fill.
// Memory kept here was in use a moment before, as glibc keeps freed memory in its arenas.
constexpr size_t kSharedCacheBytes = 64 * 1024 * 1024;

struct FreeBlock {
  FreeBlock* next;
};

size_t class_of(size_t bytes) { return (bytes + kGranule - 1) / kGranule; }  // 1..kClasses
size_t class_bytes(size_t c) { return c * kGranule; }
// Blocks a thread keeps per class before it hands half of them to the shared list.
size_t thread_limit(size_t c) { return std::max<size_t>(8, kThreadCacheBytes / class_bytes(c)); }

// Lists of free blocks per class, kept as the batches threads handed over, so taking or
// giving a batch is O(1) under the lock: walking a list of cold blocks would miss the cache
// on every one.
class SharedCache {
 public:
  struct Batch {
    FreeBlock* head;
    size_t count;
  };
  // A batch of class `c`, or {nullptr, 0} when there is none.
  Batch take(size_t c) {
    Batch b{nullptr, 0};
    {
      std::lock_guard lock(mu_[c]);
      if (batches_[c].empty()) return b;
      b = batches_[c].back();
      batches_[c].pop_back();
    }
    bytes_.fetch_sub(b.count * class_bytes(c), std::memory_order_relaxed);
    return b;
  }
  // Keeps the batch, or frees its blocks when the cache already holds kSharedCacheBytes.
  void give(size_t c, Batch b) {
    const size_t add = b.count * class_bytes(c);
    if (bytes_.fetch_add(add, std::memory_order_relaxed) + add <= kSharedCacheBytes) {
      std::lock_guard lock(mu_[c]);
      batches_[c].push_back(b);
      return;
    }
    bytes_.fetch_sub(add, std::memory_order_relaxed);
    while (b.head != nullptr) {
      FreeBlock* next = b.head->next;
      std::free(b.head);
      b.head = next;
    }
  }

 private:
  std::mutex mu_[kClasses + 1];
  std::vector<Batch> batches_[kClasses + 1];
  std::atomic<size_t> bytes_{0};  // in all batches
};

// Never destroyed: threads return their blocks to it at exit, which may be after static
// destructors ran.
SharedCache& shared_cache() {
  static SharedCache* cache = new SharedCache;
  return *cache;
}

class ThreadCache {
 public:
  ~ThreadCache() {
    for (size_t c = 1; c <= kClasses; ++c)
      if (heads_[c] != nullptr) shared_cache().give(c, {heads_[c], counts_[c]});
    alive_ = false;
  }
  void* allocate(size_t c) {
    if (!alive_) return std::malloc(class_bytes(c));
    if (heads_[c] == nullptr) {
      const SharedCache::Batch b = shared_cache().take(c);
      heads_[c] = b.head;
      counts_[c] = b.count;
    }
    if (FreeBlock* b = heads_[c]) {
      heads_[c] = b->next;
      --counts_[c];
#if defined(__GNUC__)
      if (heads_[c] != nullptr) __builtin_prefetch(heads_[c]);  // the next allocation's link
#endif
      return b;
    }
    return std::malloc(class_bytes(c));
  }
  void deallocate(void* p, size_t c) {
    if (!alive_) {
      std::free(p);
      return;
    }
    auto* b = static_cast<FreeBlock*>(p);
    b->next = heads_[c];
    heads_[c] = b;
    if (++counts_[c] < thread_limit(c)) return;
    // Keep the most recently freed half (warm in this core's caches), share the rest.
    const size_t keep = counts_[c] / 2;
    FreeBlock* last_kept = heads_[c];
    for (size_t i = 1; i < keep; ++i) last_kept = last_kept->next;
    shared_cache().give(c, {last_kept->next, counts_[c] - keep});
    last_kept->next = nullptr;
    counts_[c] = keep;
  }

 private:
  FreeBlock* heads_[kClasses + 1] = {};
  size_t counts_[kClasses + 1] = {};
  // False once this thread's cache is destroyed: a tensor freed later in the thread's exit
  // (the main thread's static objects die after its thread_locals) goes straight to free().
  bool alive_ = true;
};

ThreadCache& thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

// The allocator of storage blocks (control block and bytes in one): cached by size class up
// to kMaxCachedBytes, malloc above.
template <typename T>
struct StorageAllocator {
  using value_type = T;
  StorageAllocator() = default;
  template <typename U>
  StorageAllocator(const StorageAllocator<U>&) {}  // NOLINT: rebinding, as allocators do
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    void* p = kCacheStorage && bytes <= kMaxCachedBytes ? thread_cache().allocate(class_of(bytes))
                                                        : std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (kCacheStorage && bytes <= kMaxCachedBytes)
      thread_cache().deallocate(p, class_of(bytes));
    else
      std::free(p);
  }
  template <typename U>
  bool operator==(const StorageAllocator<U>&) const {
    return true;
  }
};

std::shared_ptr<std::byte> allocate_aligned(int64_t bytes, const Shape& shape, bool zero) {
  // One block holds the reference counts and the bytes (allocate_shared), with slack to align
  // the bytes by hand: aligned_alloc would go through glibc's memalign path, which splits and
  // frees the slack around every block. The usable size stays a non-zero multiple of the
  // alignment, as kernels may read a whole vector past the last element.
  size_t size = (static_cast<size_t>(bytes) + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  if (size == 0) size = kHostAlignment;
  std::shared_ptr<std::byte[]> block;
  try {
    block = std::allocate_shared_for_overwrite<std::byte[]>(StorageAllocator<std::byte>{},
                                                            size + kHostAlignment - 1);
  } catch (const std::bad_alloc&) {
    KILN_THROW(OutOfMemoryError, "[HostTensor] cannot allocate ", bytes, " bytes for ", shape,
               ". Hint: reduce the batch size or use bf16 to halve activation memory.");
  }
  const uintptr_t aligned = (reinterpret_cast<uintptr_t>(block.get()) + kHostAlignment - 1) &
                            ~uintptr_t{kHostAlignment - 1};
  auto* p = reinterpret_cast<std::byte*>(aligned);
  if (zero) std::memset(p, 0, size);
  return std::shared_ptr<std::byte>(std::move(block), p);  // shares the block's counts
}

static_assert(sizeof(std::string) == size_of(DType::kString), "size_of(kString) is std::string's size");

// String elements are constructed objects (destroyed with the block), never raw bytes.
std::shared_ptr<std::byte> allocate_strings(const Shape& shape) {
  const auto n = static_cast<size_t>(shape.num_elements());
  std::shared_ptr<std::string[]> block;
  try {
    block = std::make_shared<std::string[]>(std::max<size_t>(n, 1));
  } catch (const std::bad_alloc&) {
    KILN_THROW(OutOfMemoryError, "[HostTensor] cannot allocate ", n, " strings for ", shape, ".");
  }
  auto* p = reinterpret_cast<std::byte*>(block.get());
  return std::shared_ptr<std::byte>(std::move(block), p);
}

void refuse_strings(const char* where, const Shape& shape) {
  if (shape.dtype() == DType::kString)
    KILN_THROW(DTypeError, "[HostTensor::", where, "] ", shape,
               ": a string tensor cannot be made over raw memory. Hint: make it with "
               "HostTensor(shape) or from_vector<std::string>.");
}

}  // namespace

HostTensor::HostTensor(Shape shape) : shape_(std::move(shape)) {
  storage_ = is_string() ? allocate_strings(shape_)
                         : allocate_aligned(shape_.byte_size(), shape_, /*zero=*/true);
  data_ = storage_.get();
}

HostTensor HostTensor::uninitialized(Shape shape) {
  if (shape.dtype() == DType::kString) return HostTensor(std::move(shape));
  HostTensor t;
  t.shape_ = std::move(shape);
  t.storage_ = allocate_aligned(t.shape_.byte_size(), t.shape_, /*zero=*/false);
  t.data_ = t.storage_.get();
  return t;
}

HostTensor HostTensor::from_storage(Shape shape, std::shared_ptr<std::byte> storage) {
  KILN_CHECK(storage != nullptr, "from_storage needs storage for ", shape);
  refuse_strings("from_storage", shape);
  HostTensor t;
  t.shape_ = std::move(shape);
  t.storage_ = std::move(storage);
  t.data_ = t.storage_.get();
  return t;
}

HostTensor HostTensor::view(Shape shape, void* data) {
  refuse_strings("view", shape);
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

void HostTensor::throw_no_raw_data() const {
  KILN_THROW(DTypeError, "[HostTensor] a string tensor (", shape(),
             ") where a numeric one is expected: strings have no raw bytes, and compiled steps, "
             "kernels and numeric files take numbers only. Hint: turn strings into ids first "
             "(StringLookup, TextVectorization, Hashing in a Dataset::map or as a model's first "
             "layers), or read them with data<std::string>().");
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
  r.copy_elements_from(*this, 0);
  return r;
}

void HostTensor::copy_elements_from(const HostTensor& src, int64_t first) {
  if (src.dtype() != dtype() || first < 0 || first + src.num_elements() > num_elements())
    KILN_THROW(ShapeError, "[HostTensor::copy_elements_from] ", src.shape(), " does not fit in ",
               shape(), " at element ", first, ".");
  if (is_string()) {
    const auto* from = static_cast<const std::string*>(src.data_);
    auto* to = static_cast<std::string*>(data_) + first;
    std::copy(from, from + src.num_elements(), to);
    return;
  }
  if (src.byte_size() > 0)
    std::memcpy(static_cast<std::byte*>(data_) + first * static_cast<int64_t>(size_of(dtype())),
                src.data_, static_cast<size_t>(src.byte_size()));
}

HostTensor HostTensor::astype(DType target) const {
  if (target == dtype()) return *this;
  if (is_string() || target == DType::kString)
    KILN_THROW(DTypeError, "[HostTensor::astype] cannot convert ", shape(), " to ", target,
               ": strings and numbers do not convert. Hint: StringLookup or TextVectorization "
               "turn strings into ids.");
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
  if (defined() && (shape.dtype() == DType::kString) != is_string())
    KILN_THROW(DTypeError, "[HostTensor::view_at] ", shape, " cannot view a ", shape_,
               " tensor: strings and numbers do not share bytes.");
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
