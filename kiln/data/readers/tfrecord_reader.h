// TFRecord files, as TensorFlow writes them: each record is
//   u64 length | u32 masked_crc32c(length bytes) | data[length] | u32 masked_crc32c(data)
// (little-endian), so data prepared for TensorFlow is read as is.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/data/dataset.h"

namespace kiln::data {

/// Reads records one by one, checking both CRCs.
class TFRecordReader {
 public:
  /// Throws DataError if the file cannot be opened.
  explicit TFRecordReader(std::string path);

  /// The next record's bytes as a u8[n] tensor, or nullopt at a clean end of file. Throws
  /// DataError naming the file and the record's byte offset for a truncated record or a CRC
  /// mismatch.
  std::optional<HostTensor> next();
  /// Byte offset of the next record (a saved position).
  uint64_t offset() const { return offset_; }
  /// Continues from a position offset() returned.
  void seek(uint64_t offset);
  const std::string& path() const { return path_; }

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  uint64_t offset_ = 0;
  int64_t index_ = 0;  // of the next record; -1 after a seek past the start
};

/// Where a record TFRecordReader::next made comes from.
struct RecordSource {
  std::string path;
  int64_t index = -1;  // record number in the file (0-based); -1 when unknown (after a seek)
  uint64_t offset = 0;
  /// "data/train.tfrecord, record 17 (byte offset 4242)".
  std::string describe() const;
};
/// The source of a record tensor TFRecordReader::next made, or of a view of it; nullopt for
/// other tensors. parse_example's errors name it.
std::optional<RecordSource> record_source(const HostTensor& record);

/// Writes records with their length and data CRCs (for tests and for preparing data).
class TFRecordWriter {
 public:
  /// Throws IOError if the file cannot be created.
  explicit TFRecordWriter(const std::string& path);
  void write(std::string_view record);
  /// Flushes and closes; throws IOError if that fails. The destructor closes too.
  void close();

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
};

/// The records of `files`, in order, as u8[n] elements. The saved position is the file index
/// and byte offset, so a restore seeks instead of re-reading.
Dataset tfrecord_dataset(std::vector<std::string> files);

}  // namespace kiln::data
