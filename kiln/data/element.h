// Element: what flows through a pipeline, a small tuple of HostTensors ((x, y) from
// from_tensor_slices is a 2-component element). Up to kInlineComponents live inline, so a
// typical element costs no heap allocation beyond its tensors.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/host_tensor.h"

namespace kiln::data {

/// A tuple of HostTensors; the unit a Dataset yields.
class Element {
 public:
  /// Components stored without a heap allocation.
  static constexpr size_t kInlineComponents = 4;

  Element() = default;
  /// A one-component element (so a map function may simply return a HostTensor).
  Element(HostTensor t) { push_back(std::move(t)); }  // NOLINT: implicit on purpose
  Element(std::initializer_list<HostTensor> components);
  explicit Element(std::vector<HostTensor> components);
  Element(const Element&) = default;
  Element& operator=(const Element&) = default;
  /// Moves touch only the components in use: an element is moved several times per stage.
  Element(Element&& other) noexcept { *this = std::move(other); }
  Element& operator=(Element&& other) noexcept;
  ~Element() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  HostTensor& operator[](size_t i) { return data()[i]; }
  const HostTensor& operator[](size_t i) const { return data()[i]; }
  /// Component `i`; throws ValueError naming the element's size when out of range.
  const HostTensor& at(size_t i) const;

  void push_back(HostTensor t);
  /// Appends every component of `other` (zip flattens its inputs this way).
  void append(Element other);

  HostTensor* begin() { return data(); }
  HostTensor* end() { return data() + size_; }
  const HostTensor* begin() const { return data(); }
  const HostTensor* end() const { return data() + size_; }

  /// "(u8[28,28], u8[])": the component shapes, as used in messages.
  std::string shapes_string() const;

 private:
  HostTensor* data() { return spilled() ? heap_.data() : inline_.data(); }
  const HostTensor* data() const { return spilled() ? heap_.data() : inline_.data(); }
  bool spilled() const { return size_ > kInlineComponents; }

  std::array<HostTensor, kInlineComponents> inline_;
  std::vector<HostTensor> heap_;  // used only past kInlineComponents components
  size_t size_ = 0;
};

/// Asks the CPU to start loading [p, p + bytes) into its caches, for data a stage will touch
/// soon (shuffle's slots, batch's rows): for reading, or `for_write` for a destination about to
/// be overwritten (the line arrives owned, so the stores do not stall on it). A hint only: no
/// effect on results.
inline void prefetch_bytes(const void* p, size_t bytes, bool for_write = false) {
#if defined(__GNUC__)
  if (bytes == 0) return;
  const auto* c = static_cast<const char*>(p);
  for (size_t off = 0; off < bytes; off += 64) {
    if (for_write) {
      __builtin_prefetch(c + off, 1);
    } else {
      __builtin_prefetch(c + off);
    }
    // GCC deletes a loop whose only statements are prefetches (they have no side effects);
    // the empty volatile asm keeps it.
    asm volatile("");
  }
  // The last line, when p is not line-aligned. (The read/write argument must be a constant
  // for clang, hence the branch.)
  if (for_write) {
    __builtin_prefetch(c + bytes - 1, 1);
  } else {
    __builtin_prefetch(c + bytes - 1);
  }
#else
  (void)p;
  (void)bytes;
  (void)for_write;
#endif
}

/// "(u8[28,28], u8[])" for any list of components.
std::string shapes_string(std::span<const HostTensor> components);

/// A byte string as a u8[n] tensor of its bytes (what decoders read: file contents, TFRecord
/// bytes features, list_files's names). Text for StringLookup and TextVectorization is a
/// DType::kString tensor instead (HostTensor::from_vector<std::string>).
HostTensor string_tensor(std::string_view text);
/// The bytes of a u8 tensor, or the element of a string[] scalar, as a string; throws
/// DTypeError for other dtypes.
std::string tensor_string(const HostTensor& t);

}  // namespace kiln::data
