// TFRecord reader and writer over stdio, and the restorable tfrecord_dataset source.
#include "kiln/data/readers/tfrecord_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "kiln/core/check.h"
#include "kiln/core/crc32c.h"

namespace kiln::data {
namespace {

uint64_t load_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// Frees a record's bytes and remembers where they came from (record_source).
struct RecordStorage {
  RecordSource source;
  void operator()(std::byte* p) const { std::free(p); }
};

[[noreturn]] void fail(const std::string& path, uint64_t offset, const std::string& what) {
  KILN_THROW(DataError, "[TFRecordReader] ", path, ": record at byte offset ", offset, ": ", what);
}

}  // namespace

TFRecordReader::TFRecordReader(std::string path) : path_(std::move(path)) {
  file_.reset(std::fopen(path_.c_str(), "rb"));
  if (!file_)
    KILN_THROW(DataError, "[TFRecordReader] ", path_, ": cannot open: ", std::strerror(errno), ".");
}

void TFRecordReader::seek(uint64_t offset) {
  if (std::fseek(file_.get(), static_cast<long>(offset), SEEK_SET) != 0)
    KILN_THROW(DataError, "[TFRecordReader] ", path_, ": cannot seek to byte offset ", offset, ".");
  offset_ = offset;
  index_ = offset == 0 ? 0 : -1;
}

std::optional<HostTensor> TFRecordReader::next() {
  uint8_t header[12];
  const size_t got = std::fread(header, 1, sizeof(header), file_.get());
  if (got == 0) return std::nullopt;
  if (got < sizeof(header))
    fail(path_, offset_, str_cat("truncated: ", got, " of the 12 header bytes present"));
  const uint64_t length = load_le(header, 8);
  if (crc32c_mask(crc32c(header, 8)) != static_cast<uint32_t>(load_le(header + 8, 4)))
    fail(path_, offset_, "the length's CRC does not match (corrupt file, or not a TFRecord file)");
  // Check the length against the file size before allocating, so a corrupt length cannot
  // make us allocate absurd memory.
  const long here = std::ftell(file_.get());
  std::fseek(file_.get(), 0, SEEK_END);
  const long size = std::ftell(file_.get());
  std::fseek(file_.get(), here, SEEK_SET);
  const auto remain = static_cast<uint64_t>(size - here);
  if (length > remain || remain - length < 4)  // (length + 4 could wrap around)
    fail(path_, offset_, str_cat("truncated: the record promises ", length, " data bytes + 4 CRC bytes, ",
                                 size - here, " remain"));
  // Aligned and padded as HostTensor's own storage (kernels may read a vector past the end).
  const size_t bytes = (std::max<size_t>(length, 1) + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  auto* block = static_cast<std::byte*>(std::aligned_alloc(kHostAlignment, bytes));
  if (block == nullptr)
    KILN_THROW(OutOfMemoryError, "[TFRecordReader] ", path_, ": cannot allocate ", length, " bytes for the record at byte offset ",
               offset_, ".");
  HostTensor data = HostTensor::from_storage(
      Shape(DType::kU8, {static_cast<int64_t>(length)}),
      std::shared_ptr<std::byte>(block, RecordStorage{RecordSource{path_, index_, offset_}}));
  uint8_t crc_bytes[4];
  if (std::fread(data.raw_data(), 1, length, file_.get()) != length ||
      std::fread(crc_bytes, 1, 4, file_.get()) != 4)
    fail(path_, offset_, "read failed");
  if (crc32c_mask(crc32c(data.raw_data(), length)) != static_cast<uint32_t>(load_le(crc_bytes, 4)))
    fail(path_, offset_, str_cat("the data's CRC does not match (", length, " bytes; corrupt record)"));
  offset_ += 12 + length + 4;
  if (index_ >= 0) ++index_;
  return data;
}

std::string RecordSource::describe() const {
  if (index < 0) return str_cat(path, ", record at byte offset ", offset);
  return str_cat(path, ", record ", index, " (byte offset ", offset, ")");
}

std::optional<RecordSource> record_source(const HostTensor& record) {
  if (const RecordStorage* s = std::get_deleter<RecordStorage>(record.storage())) return s->source;
  return std::nullopt;
}

TFRecordWriter::TFRecordWriter(const std::string& path) : path_(path) {
  file_.reset(std::fopen(path.c_str(), "wb"));
  if (!file_) KILN_THROW(IOError, "[TFRecordWriter] ", path, ": cannot create: ", std::strerror(errno), ".");
}

void TFRecordWriter::write(std::string_view record) {
  KILN_CHECK(file_ != nullptr, "write() after close() on ", path_);
  const TFRecordFrame frame = tfrecord_frame(record);
  if (std::fwrite(frame.header, 1, 12, file_.get()) != 12 ||
      std::fwrite(record.data(), 1, record.size(), file_.get()) != record.size() ||
      std::fwrite(frame.footer, 1, 4, file_.get()) != 4)
    KILN_THROW(IOError, "[TFRecordWriter] ", path_, ": write failed: ", std::strerror(errno), ".");
}

void TFRecordWriter::close() {
  if (!file_) return;
  std::FILE* f = file_.release();
  if (std::fclose(f) != 0)
    KILN_THROW(IOError, "[TFRecordWriter] ", path_, ": close failed: ", std::strerror(errno), ".");
}

namespace {

class TFRecordNode : public DatasetNode {
 public:
  explicit TFRecordNode(std::vector<std::string> files)
      : DatasetNode("tfrecord", {}), files_(std::move(files)) {}
  IteratorPtr make_iterator(const IteratorContext& ctx) const override;
  const std::vector<std::string>& files() const { return files_; }

 private:
  std::vector<std::string> files_;
};

class TFRecordIterator : public IteratorBase {
 public:
  TFRecordIterator(const TFRecordNode& node, const IteratorContext& ctx)
      : IteratorBase(node, ctx), node_(node) {}

 protected:
  std::optional<Element> get_next() override {
    while (file_ < node_.files().size()) {
      if (!reader_) reader_ = std::make_unique<TFRecordReader>(node_.files()[file_]);
      if (std::optional<HostTensor> record = reader_->next()) return Element(std::move(*record));
      reader_.reset();
      ++file_;
    }
    return std::nullopt;
  }
  void save_state(StateWriter& w) override {
    w.write_u64(file_);
    w.write_u64(reader_ ? reader_->offset() : 0);
  }
  void restore_state(StateReader& r) override {
    file_ = r.read_u64();
    const uint64_t offset = r.read_u64();
    reader_.reset();
    if (file_ < node_.files().size()) {
      reader_ = std::make_unique<TFRecordReader>(node_.files()[file_]);
      reader_->seek(offset);
    }
  }

 private:
  const TFRecordNode& node_;
  size_t file_ = 0;
  std::unique_ptr<TFRecordReader> reader_;
};

IteratorPtr TFRecordNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<TFRecordIterator>(*this, ctx);
}

}  // namespace

Dataset tfrecord_dataset(std::vector<std::string> files) {
  return Dataset(std::make_shared<TFRecordNode>(std::move(files)));
}

}  // namespace kiln::data
