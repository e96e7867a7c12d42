// StateWriter / StateReader: the byte format of a saved iterator position. Each stage writes
// its name as a tag and then its own fields, inputs nested inside, so a blob restores only
// into an iterator built from the same recipe.
#pragma once

#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/data/element.h"

namespace kiln::data {

/// Appends little-endian fields to a growing byte blob.
class StateWriter {
 public:
  void write_u64(uint64_t v);
  void write_i64(int64_t v) { write_u64(static_cast<uint64_t>(v)); }
  void write_bool(bool v) { write_u64(v ? 1 : 0); }
  void write_string(std::string_view s);
  /// Dtype, dims and bytes.
  void write_tensor(const HostTensor& t);
  void write_element(const Element& e);
  /// A failure waiting for the consumer (or none): its message, restored as a DataError.
  void write_error(const std::exception_ptr& error);
  /// Names the stage whose fields follow; StateReader::expect_tag checks it.
  void write_tag(std::string_view stage) { write_string(stage); }

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

/// Reads what StateWriter wrote; every malformed blob is a DataError naming the offset.
class StateReader {
 public:
  explicit StateReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t read_u64();
  int64_t read_i64() { return static_cast<int64_t>(read_u64()); }
  bool read_bool() { return read_u64() != 0; }
  std::string read_string();
  HostTensor read_tensor();
  Element read_element();
  /// What write_error wrote: null, or a DataError with the saved message.
  std::exception_ptr read_error();
  /// Throws DataError unless the next tag is `stage` (the blob came from another recipe).
  void expect_tag(std::string_view stage);

  bool at_end() const { return pos_ == bytes_.size(); }
  size_t offset() const { return pos_; }

 private:
  const uint8_t* take(size_t n, const char* what);

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace kiln::data
