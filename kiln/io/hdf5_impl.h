// Internal to kiln/io: RAII over HDF5 identifiers, error-stack capture and the mapping between
// Kiln dtypes and HDF5 types. Only hdf5_*.cpp include this (public headers never see hdf5.h).
#pragma once

#include <hdf5.h>

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/core/shape.h"

namespace kiln::io::h5 {

static_assert(std::is_same_v<hid_t, int64_t>, "hdf5_file.h stores hid_t as int64_t");

/// Owns one HDF5 identifier and releases it with the matching H5?close function.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Closer close) : id_(id), close_(close) {}
  ~Id() { reset(); }
  Id(Id&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Id& operator=(Id&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      close_ = other.close_;
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  hid_t release() { return std::exchange(id_, -1); }
  void reset() {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

/// The open file shared by Hdf5File and its groups; the file closes with the last of them.
struct FileState {
  Id id;
  std::string path;
};

/// Turns off HDF5's automatic printing of its error stack (failures become IOErrors instead).
void silence_error_printing();

/// The most specific message on HDF5's error stack (e.g. "file signature not found"), or ""
/// if the stack is empty; clears the stack.
std::string take_error_detail();

/// Throws IOError "[file:object] what (HDF5: detail). Hint: ...".
[[noreturn]] void fail(const std::string& file, const std::string& object, const std::string& what);

/// `id` if it is valid, else fail(file, object, what) with HDF5's detail.
hid_t check(hid_t id, const std::string& file, const std::string& object, const std::string& what);
/// Same for herr_t results (negative is failure).
void check_status(herr_t status, const std::string& file, const std::string& object,
                  const std::string& what);

/// The HDF5 type Kiln stores `dtype` as (also used as the memory type on little-endian hosts):
/// f32/f64/i32/i64/u8 as IEEE/STD little-endian, f16 as IEEE half (h5py's 'f2'), bf16 as a
/// 16-bit float with bf16's layout (sign 15, exponent 7-14 biased by 127, mantissa 0-6),
/// bool as h5py's enum {FALSE=0, TRUE=1} over int8.
Id type_for(DType dtype);

/// The Kiln dtype that holds values of HDF5 type `type` (narrow integers widen to i32/i64), or
/// fail() naming the type's class and size when Kiln has none.
DType dtype_for(hid_t type, const std::string& file, const std::string& object);

/// Dims of a dataspace (scalar -> {}); fail() for a null dataspace or an unreadable one.
Dims extent_dims(hid_t space, const std::string& file, const std::string& object);
/// A scalar dataspace for {} dims, else a simple one.
Id make_space(const Dims& dims);
/// Shape(dtype, dims), with an absurd element count turned into fail().
Shape checked_shape(DType dtype, const Dims& dims, const std::string& file,
                    const std::string& object);

/// H5Literate / H5Aiterate2 callback that appends each name to a std::vector<std::string>.
template <typename Info>
herr_t collect_name(hid_t, const char* name, const Info*, void* names) {
  static_cast<std::vector<std::string>*>(names)->push_back(name);
  return 0;
}

/// Where Kiln stored a variable-length text in HDF5's global heap, recorded beside the
/// attribute (kTextRefSuffix) so reads can check the unchecksummed heap first.
struct HeapTextRef {
  uint64_t collection = 0;  // file offset of the "GCOL" collection
  uint64_t index = 0;       // object index inside it
  uint64_t size = 0;        // text bytes
  uint32_t crc = 0;         // CRC-32C of the text
};

/// Name suffix of the int64[4] attribute {collection, index, size, crc} beside a text one.
inline constexpr const char* kTextRefSuffix = ".kiln_ref";

/// The global heap object of the (flushed) file at `path` holding exactly `text`; the newest
/// one if several do. Collections that do not parse are skipped.
std::optional<HeapTextRef> find_heap_text(const std::string& path, std::string_view text);

/// Checks the collection `ref` names as libhdf5 will walk it (every object inside it, sizes
/// that tile it exactly, no repeated index), and the object against `ref`'s size and CRC:
/// fail() naming the file, `object` and the problem, so libhdf5 never reads a corrupt heap.
void check_heap_text(const std::string& path, const std::string& object, const HeapTextRef& ref);

/// Joins an object path and a child name: ("/", "a") -> "/a", ("/a", "b/c") -> "/a/b/c".
std::string join_path(const std::string& parent, const std::string& name);

}  // namespace kiln::io::h5
