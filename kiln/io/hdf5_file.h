// Hdf5File and Hdf5Group: an RAII C++ face over libhdf5 for the Keras 2 .h5 format: groups,
// string and numeric attributes (including Keras's split of long lists into name0, name1, ...)
// and datasets read and written as HostTensors. Every failure is an IOError naming the file
// and the object path; HDF5's own error printing is switched off.
//
// dtypes on disk: f32, f64, i32, i64, u8 as IEEE/STD little-endian; f16 as IEEE half; bool as
// h5py's enum {FALSE=0, TRUE=1}. HDF5 has no bfloat16, so bf16 is stored as a custom 16-bit
// float type with bf16's bit layout: it round-trips exactly through Kiln, and other HDF5
// readers see a float they can convert (h5py: `ds.astype('f4')[()]`). tf.keras never writes
// bf16 variables (mixed precision keeps f32 weights), so keras/saving should store f32 there.
//
// Corruption: files Kiln creates use the HDF5 1.8 format (Hdf5CreateOptions), whose
// superblock, object headers and indexes carry checksums, so a flipped or missing byte there
// is an IOError. Two parts carry none: dataset values and the global heap, where
// variable-length strings live and where libhdf5 1.10 trusts sizes (a corrupt one crashes it
// in H5HG_read or loops forever). So each dataset Kiln writes gets a "kiln_crc32c" attribute
// (the CRC-32C of its values, in the checksummed header) that read_dataset checks; and for
// each variable-length text attribute it writes, Kiln records the text's heap place, length
// and CRC-32C in a fixed-size attribute "<name>.kiln_ref", and read_string_attribute checks
// the heap against it before libhdf5 reads it. Other writers' files have no such records,
// and h5py's default format no checksums: truncation is still detected there, but libhdf5
// itself may crash on arbitrary corrupt bytes, which no wrapper prevents short of validating
// every HDF5 structure independently.
//
// Absent and unreadable are different answers: every existence test (contains, has_group,
// has_dataset, has_attribute, has_keras_string_list) answers false only for an object that
// is not there, and throws IOError naming the file and the object for one that is listed but
// cannot be read (a damaged header or index), so a damaged part never passes for a missing one.
//
// Not thread-safe: Debian's libhdf5 is built without its global lock, so use one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"

namespace kiln::io {

/// How a text attribute is stored. h5py (and so Keras) writes a Python str as kVariableUtf8,
/// bytes as kVariableAscii and NumPy 'S' arrays (Keras's layer_names/weight_names) as
/// kFixedAscii (null-padded, as long as the longest element). Readers accept all three.
/// Kiln writes kFixedAscii by default: h5py 2 and 3 both return it as bytes, which every
/// tf.keras version's `.decode('utf8')` accepts, and it avoids HDF5's unchecksummed global
/// heap (see the corruption note above for how variable-length texts are guarded).
enum class StringKind { kVariableUtf8, kVariableAscii, kFixedAscii };

/// Keras's HDF5_OBJECT_HEADER_LIMIT: a string-list attribute larger than this many bytes is
/// split into numbered attributes.
inline constexpr size_t kKerasAttributeLimit = 64512;

namespace h5 {
struct FileState;  // the open file id, shared by every object of the file
}

/// A group in an open HDF5 file (the root is "/"). Names may be paths ("dense/kernel:0"); on
/// creation the intermediate groups are created as h5py does. Move-only; closes on destruction.
class Hdf5Group {
 public:
  Hdf5Group(Hdf5Group&& other) noexcept;
  Hdf5Group& operator=(Hdf5Group&& other) noexcept;
  Hdf5Group(const Hdf5Group&) = delete;
  Hdf5Group& operator=(const Hdf5Group&) = delete;
  ~Hdf5Group();

  /// Object path inside the file, e.g. "/model_weights/dense".
  const std::string& path() const { return path_; }
  /// Path of the file on disk.
  const std::string& file_path() const;

  // ---- links and groups -------------------------------------------------------------------
  /// True if `name` (a relative path) names any object; false if it does not. IOError if a
  /// link or object on the way cannot be read (damage is never "absent").
  bool contains(const std::string& name) const;
  /// True if `name` is a group (false if absent or another kind); IOError if it is listed but
  /// its header cannot be read.
  bool has_group(const std::string& name) const;
  /// True if `name` is a dataset; as has_group otherwise.
  bool has_dataset(const std::string& name) const;
  /// Names of the direct children, sorted by name (HDF5's order for h5py-written files).
  std::vector<std::string> children() const;
  /// Creates a new group (and missing intermediate groups). Throws IOError if it exists.
  Hdf5Group create_group(const std::string& name);
  /// Opens an existing group. Throws IOError "... no group 'name'" if absent or a dataset.
  Hdf5Group open_group(const std::string& name) const;
  /// Opens the group, creating it first if absent.
  Hdf5Group require_group(const std::string& name);
  /// Removes the link `name` (group or dataset).
  void remove(const std::string& name);

  // ---- datasets ---------------------------------------------------------------------------
  /// Writes `tensor` as a new contiguous dataset (rank 0 as a scalar dataspace) with its
  /// "kiln_crc32c" attribute. Throws IOError if `name` exists.
  void write_dataset(const std::string& name, const HostTensor& tensor);
  /// Dtype and dims of a dataset without reading it.
  Shape dataset_shape(const std::string& name) const;
  /// Reads a dataset. Types widen to the nearest Kiln dtype (i8/i16/u16 -> i32, u32 -> i64);
  /// other types (strings, compounds, u64) are an IOError naming the type. Values that do not
  /// match the dataset's "kiln_crc32c" (when it has one) are an IOError.
  HostTensor read_dataset(const std::string& name) const;

  // ---- attributes -------------------------------------------------------------------------
  /// True if the attribute exists, false if not; IOError if the attribute index cannot be read.
  bool has_attribute(const std::string& name) const;
  /// Attribute names, sorted by name.
  std::vector<std::string> attribute_names() const;
  /// Deletes the attribute (and its "<name>.kiln_ref" record) if present.
  void remove_attribute(const std::string& name);

  /// Writes a scalar text attribute, replacing any attribute of that name. A variable-length
  /// one also gets its "<name>.kiln_ref" record (which costs a flush and a scan of the file so
  /// far: write such texts before large datasets).
  void write_string_attribute(const std::string& name, const std::string& value,
                              StringKind kind = StringKind::kFixedAscii);
  /// Reads a text attribute of any StringKind (a scalar, or a 1-element array). With a
  /// "<name>.kiln_ref" record, the global heap is checked first and the text after: IOError
  /// if either does not match.
  std::string read_string_attribute(const std::string& name) const;

  /// Writes a 1-D text attribute, replacing any attribute of that name.
  void write_string_list_attribute(const std::string& name, const std::vector<std::string>& values,
                                   StringKind kind = StringKind::kFixedAscii);
  /// Reads a text attribute of any StringKind and rank as a list; a zero-length attribute of
  /// any type (Keras writes an empty float64 array for an empty list) gives an empty list. A
  /// text with a "<name>.kiln_ref" record is checked as read_string_attribute checks it.
  std::vector<std::string> read_string_list_attribute(const std::string& name) const;

  /// Writes a numeric attribute (rank 0 as a scalar), replacing any attribute of that name.
  void write_tensor_attribute(const std::string& name, const HostTensor& value);
  /// Reads a numeric attribute with the dtype rules of read_dataset.
  HostTensor read_tensor_attribute(const std::string& name) const;

  /// Writes a string list as Keras's save_attributes_to_hdf5_group does: one fixed-length
  /// array `name` if it fits in kKerasAttributeLimit bytes, else chunks `name0`, `name1`, ...
  /// split like np.array_split. An empty list is an empty float64 array. Removes stale chunks
  /// of an earlier write. Throws IOError if one string alone exceeds the limit.
  void write_keras_string_list(const std::string& name, const std::vector<std::string>& values);
  /// Reads `name`, or else concatenates `name0`, `name1`, ... until one is missing (Keras's
  /// load_attributes_from_hdf5_group). Absent entirely: an empty list.
  std::vector<std::string> read_keras_string_list(const std::string& name) const;
  /// True if `name` or `name0` exists.
  bool has_keras_string_list(const std::string& name) const;

 private:
  friend class Hdf5File;
  Hdf5Group(int64_t id, std::shared_ptr<h5::FileState> file, std::string path);
  [[noreturn]] void fail(const std::string& object, const std::string& what) const;
  void write_attribute_raw(const std::string& name, int64_t type, int64_t space, const void* data);
  void record_text_ref(const std::string& name, const std::string& value);

  int64_t id_ = -1;  // hid_t; owned
  std::shared_ptr<h5::FileState> file_;
  std::string path_;
};

/// How Hdf5File::create lays out a new file.
struct Hdf5CreateOptions {
  /// Write the HDF5 1.8 format (superblock v2, object headers v2), whose metadata carries
  /// checksums: a corrupt file is then an IOError rather than a crash inside libhdf5. Every
  /// HDF5 >= 1.8 reader (h5py, tf.keras, Keras 3) reads it. Off gives h5py's default (1.6
  /// compatible, unchecksummed) layout, where libhdf5 1.10 may crash on corrupt metadata.
  bool checksummed_metadata = true;
};

/// An open HDF5 file. The file stays open while this object or any of its groups lives.
class Hdf5File {
 public:
  /// Opens an existing file (read-only unless `writable`). Throws IOError naming the path for
  /// a missing file, a file that is not HDF5, or a corrupt one.
  static Hdf5File open(const std::string& path, bool writable = false);
  /// Creates `path`, replacing an existing file. Throws IOError if it cannot be created.
  static Hdf5File create(const std::string& path, Hdf5CreateOptions options = {});

  Hdf5File(Hdf5File&&) noexcept = default;
  Hdf5File& operator=(Hdf5File&&) noexcept = default;
  ~Hdf5File() = default;

  const std::string& path() const;
  /// The root group "/".
  Hdf5Group& root() { return root_; }
  const Hdf5Group& root() const { return root_; }
  /// Flushes buffered data to disk. Throws IOError on failure.
  void flush();

 private:
  explicit Hdf5File(Hdf5Group root) : root_(std::move(root)) {}
  Hdf5Group root_;
};

}  // namespace kiln::io
