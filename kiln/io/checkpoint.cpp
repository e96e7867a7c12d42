// Checkpoint writer and reader. The payload is emitted twice through a sink (once to size and
// checksum it, once to the file), so nothing is buffered beyond the caller's tensors. The
// reader checks the CRC in a streaming pass before it parses or allocates anything.
#include "kiln/io/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_set>

#include "kiln/core/check.h"
#include "kiln/core/crc32c.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/file_reader.h"
#include "kiln/io/little_endian.h"

namespace kiln::io {
namespace {

using Sink = std::function<void(const void*, size_t)>;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  KILN_THROW(IOError, "[", path, "] ", what,
             ". Hint: the checkpoint is damaged; restore from an earlier checkpoint.");
}

void emit_le(const Sink& sink, uint64_t v, int bytes) {
  std::string s;
  append_le(s, v, bytes);
  sink(s.data(), s.size());
}

void emit_payload(const CheckpointContents& c, const Sink& sink) {
  emit_le(sink, c.metadata.size(), 4);
  for (const auto& [key, value] : c.metadata) {
    emit_le(sink, key.size(), 4);
    sink(key.data(), key.size());
    emit_le(sink, value.size(), 8);
    sink(value.data(), value.size());
  }
  emit_le(sink, c.tensors.size(), 4);
  for (const NamedTensor& t : c.tensors) {
    emit_le(sink, t.name.size(), 4);
    sink(t.name.data(), t.name.size());
    std::string_view dtype = file_dtype_name(t.tensor.dtype());
    emit_le(sink, dtype.size(), 1);
    sink(dtype.data(), dtype.size());
    emit_le(sink, static_cast<uint64_t>(t.tensor.rank()), 4);
    for (int64_t d : t.tensor.dims()) emit_le(sink, static_cast<uint64_t>(d), 8);
    emit_le(sink, static_cast<uint64_t>(t.tensor.byte_size()), 8);
    sink(t.tensor.raw_data(), static_cast<size_t>(t.tensor.byte_size()));
  }
}

// Sequential reads inside [payload start, file end) with the bounds checks of FileReader.
class PayloadCursor {
 public:
  explicit PayloadCursor(const FileReader& file) : file_(file), pos_(kCheckpointHeaderBytes) {}

  uint64_t remaining() const { return file_.size() - pos_; }
  uint64_t uint(int bytes, const char* what) {
    unsigned char b[8];
    read(b, static_cast<size_t>(bytes), what);
    return load_le(b, bytes);
  }
  std::string string(uint64_t size, const char* what) {
    check_fits(size, what);
    std::string s(static_cast<size_t>(size), '\0');
    read(s.data(), s.size(), what);
    return s;
  }
  void read(void* dst, size_t n, const char* what) {
    check_fits(n, what);
    file_.read_at(pos_, dst, n, what);
    pos_ += n;
  }
  // Checked before allocating, so a corrupt size never triggers a huge allocation.
  void check_fits(uint64_t n, const char* what) const {
    if (n > remaining())
      fail(file_.path(), str_cat("corrupt payload: ", what, " claims ", n, " bytes but only ",
                                 remaining(), " remain"));
  }

 private:
  const FileReader& file_;
  uint64_t pos_;
};

void check_header(const FileReader& file, uint64_t* payload_size, uint32_t* payload_crc) {
  const std::string& path = file.path();
  if (file.size() < kCheckpointHeaderBytes)
    fail(path, str_cat("truncated: ", file.size(), " bytes is shorter than the ",
                       kCheckpointHeaderBytes, "-byte checkpoint header"));
  unsigned char h[kCheckpointHeaderBytes];
  file.read_at(0, h, sizeof h, "the checkpoint header");
  if (std::memcmp(h, kCheckpointMagic, sizeof kCheckpointMagic) != 0)
    fail(path, "wrong magic: not a Kiln checkpoint (expected the bytes \"KILNCKPT\")");
  const uint32_t header_crc = static_cast<uint32_t>(load_le(h + 28, 4));
  if (crc32c(h, 28) != header_crc) fail(path, "header checksum mismatch");
  const uint32_t version = static_cast<uint32_t>(load_le(h + 8, 4));
  if (version == 0 || version > kCheckpointVersion)
    fail(path, str_cat("unsupported checkpoint version ", version, " (this Kiln reads up to ",
                       kCheckpointVersion, "); upgrade Kiln to read it"));
  if (const uint32_t flags = static_cast<uint32_t>(load_le(h + 12, 4)); flags != 0)
    fail(path, str_cat("header flags are 0x", std::hex, flags, std::dec,
                       ", but this version's flags are 0 (a corrupt header, or a newer writer)"));
  *payload_size = load_le(h + 16, 8);
  *payload_crc = static_cast<uint32_t>(load_le(h + 24, 4));
  const uint64_t body = file.size() - kCheckpointHeaderBytes;
  if (body < *payload_size)
    fail(path, str_cat("truncated: header promises ", *payload_size, " payload bytes, file holds ",
                       body));
  if (body > *payload_size)
    fail(path, str_cat(body - *payload_size, " unexpected bytes after the ", *payload_size,
                       "-byte payload"));
}

void check_payload_crc(const FileReader& file, uint64_t payload_size, uint32_t expected) {
  std::string chunk(static_cast<size_t>(std::min<uint64_t>(payload_size, uint64_t{1} << 20)), '\0');
  uint32_t crc = 0;
  for (uint64_t done = 0; done < payload_size;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), payload_size - done));
    file.read_at(kCheckpointHeaderBytes + done, chunk.data(), n, "the payload");
    crc = crc32c_extend(crc, chunk.data(), n);
    done += n;
  }
  if (crc != expected)
    fail(file.path(), str_cat("payload checksum mismatch (stored CRC-32C 0x", std::hex, expected,
                              ", computed 0x", crc, ")"));
}

NamedTensor read_tensor(PayloadCursor& in, const std::string& path) {
  NamedTensor t;
  t.name = in.string(in.uint(4, "tensor name size"), "tensor name");
  std::string dtype_name = in.string(in.uint(1, "dtype name size"), "dtype name");
  auto dtype = parse_file_dtype(dtype_name);
  if (!dtype) fail(path, str_cat("tensor '", t.name, "' has unknown dtype '", dtype_name, "'"));
  const uint64_t rank = in.uint(4, "tensor rank");
  if (rank > kMaxCheckpointRank)
    fail(path,
         str_cat("tensor '", t.name, "' has rank ", rank, " (more than ", kMaxCheckpointRank, ")"));
  Dims dims;
  for (uint64_t i = 0; i < rank; ++i) {
    uint64_t d = in.uint(8, "tensor dimension");
    if (d > static_cast<uint64_t>(INT64_MAX))
      fail(path, str_cat("tensor '", t.name, "' has dimension ", d));
    dims.push_back(static_cast<int64_t>(d));
  }
  Shape shape;
  try {
    shape = Shape(*dtype, dims);
    (void)shape.byte_size();
  } catch (const ShapeError&) {
    fail(path, str_cat("tensor '", t.name, "' has dimensions ", dims_to_string(dims),
                       " whose byte size overflows"));
  }
  const uint64_t size = in.uint(8, "tensor data size");
  if (size != static_cast<uint64_t>(shape.byte_size()))
    fail(path, str_cat("tensor '", t.name, "' of shape ", shape, " needs ", shape.byte_size(),
                       " bytes but the file stores ", size));
  in.check_fits(size, "tensor data");
  t.tensor = HostTensor(shape);
  in.read(t.tensor.raw_data(), static_cast<size_t>(size), "tensor data");
  check_loaded_values(t.tensor, path, t.name);
  return t;
}

}  // namespace

void write_checkpoint(const std::string& path, const CheckpointContents& contents) {
  check_unique_defined(contents.tensors, path);
  uint64_t payload_size = 0;
  uint32_t crc = 0;
  emit_payload(contents, [&](const void* p, size_t n) {
    crc = crc32c_extend(crc, p, n);
    payload_size += n;
  });
  std::string header(kCheckpointMagic, sizeof kCheckpointMagic);
  append_le(header, kCheckpointVersion, 4);
  append_le(header, 0, 4);
  append_le(header, payload_size, 8);
  append_le(header, crc, 4);
  append_le(header, crc32c(header.data(), header.size()), 4);

  AtomicFileWriter writer(path);
  writer.write(header);
  emit_payload(contents, [&](const void* p, size_t n) { writer.write(p, n); });
  KILN_CHECK(writer.bytes_written() == kCheckpointHeaderBytes + payload_size);
  writer.commit();
}

CheckpointContents read_checkpoint(const std::string& path) {
  FileReader file(path);
  uint64_t payload_size = 0;
  uint32_t payload_crc = 0;
  check_header(file, &payload_size, &payload_crc);
  check_payload_crc(file, payload_size, payload_crc);

  CheckpointContents out;
  PayloadCursor in(file);
  const uint64_t n_metadata = in.uint(4, "metadata count");
  for (uint64_t i = 0; i < n_metadata; ++i) {
    std::string key = in.string(in.uint(4, "metadata key size"), "metadata key");
    std::string value = in.string(in.uint(8, "metadata value size"), "metadata value");
    if (!out.metadata.emplace(std::move(key), std::move(value)).second)
      fail(path, "metadata key appears twice");
  }
  const uint64_t n_tensors = in.uint(4, "tensor count");
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    NamedTensor t = read_tensor(in, path);
    if (!names.insert(t.name).second) fail(path, str_cat("tensor '", t.name, "' appears twice"));
    out.tensors.push_back(std::move(t));
  }
  if (in.remaining() != 0)
    fail(path, str_cat(in.remaining(), " unexpected bytes after the last tensor"));
  return out;
}

}  // namespace kiln::io
