// IDX reader over zlib's gz* API, which reads plain files transparently too.
#include "kiln/data/readers/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  KILN_THROW(DataError, "[read_idx] ", path, ": ", what);
}

// Reads up to n bytes; returns how many arrived (fewer only at end of file).
size_t read_some(gzFile f, void* dst, size_t n, const std::string& path) {
  size_t got = 0;
  while (got < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 30));
    int r = gzread(f, static_cast<char*>(dst) + got, chunk);
    if (r < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      fail(path, str_cat("corrupt compressed data (", msg, ")"));
    }
    if (r == 0) {
      // zlib reports a gzip stream cut short (no CRC and length trailer) as a plain end of
      // file with Z_BUF_ERROR behind it.
      int err = 0;
      gzerror(f, &err);
      if (err == Z_BUF_ERROR)
        fail(path, "truncated gzip stream: it ends before its 8-byte CRC and length trailer");
      break;
    }
    got += static_cast<size_t>(r);
  }
  return got;
}

uint32_t big_endian_u32(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

DType idx_element_type(unsigned code, const std::string& path) {
  switch (code) {
    case 0x08: return DType::kU8;
    case 0x0C: return DType::kI32;
    case 0x0D: return DType::kF32;
    case 0x0E: return DType::kF64;
    default:
      fail(path, str_cat("unsupported IDX element type 0x", std::hex, code,
                         " (Kiln reads 0x08 u8, 0x0C i32, 0x0D f32, 0x0E f64)"));
  }
}

// IDX stores multi-byte elements big-endian; convert in place to host order.
void swap_to_host(std::vector<unsigned char>& bytes, size_t elem_size) {
  if (elem_size == 1) return;
  for (size_t i = 0; i + elem_size <= bytes.size(); i += elem_size)
    std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(i),
                 bytes.begin() + static_cast<std::ptrdiff_t>(i + elem_size));
}

}  // namespace

HostTensor read_idx(const std::string& path) {
  if (!std::filesystem::exists(path)) fail(path, "file not found");
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) fail(path, str_cat("cannot open: ", std::strerror(errno)));

  unsigned char magic[4];
  if (read_some(f.get(), magic, 4, path) != 4) fail(path, "truncated: shorter than the 4-byte magic");
  if (magic[0] != 0 || magic[1] != 0)
    fail(path, str_cat("wrong magic: expected 0x0000TTNN, received bytes ", int{magic[0]}, " ",
                       int{magic[1]}, " ", int{magic[2]}, " ", int{magic[3]},
                       ". Hint: is this an IDX file?"));
  const DType dtype = idx_element_type(magic[2], path);
  const int rank = magic[3];
  if (rank == 0) fail(path, "wrong magic: rank 0");

  Dims dims(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    unsigned char b[4];
    if (read_some(f.get(), b, 4, path) != 4)
      fail(path, str_cat("truncated header: expected ", rank, " dimensions, found ", i));
    dims[static_cast<size_t>(i)] = big_endian_u32(b);
  }
  int64_t count = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(count, d, &count) || count > kMaxIdxElements)
      fail(path, str_cat("absurd dimensions ", dims_to_string(dims), ": more than ",
                         kMaxIdxElements, " elements"));
  }
  const size_t elem = size_of(dtype);
  const size_t expected = static_cast<size_t>(count) * elem;

  // Grow the buffer as bytes arrive, so a header that lies about its size cannot make us
  // allocate more than the file holds (plus one chunk).
  std::vector<unsigned char> bytes;
  constexpr size_t kChunk = size_t{16} << 20;
  while (bytes.size() < expected) {
    size_t want = std::min(kChunk, expected - bytes.size());
    size_t old = bytes.size();
    bytes.resize(old + want);
    size_t got = read_some(f.get(), bytes.data() + old, want, path);
    if (got < want)
      fail(path, str_cat("truncated: header ", dims_to_string(dims), " promises ", expected,
                         " data bytes, file holds ", old + got));
  }
  unsigned char extra;
  if (read_some(f.get(), &extra, 1, path) != 0)
    fail(path, str_cat("unexpected trailing bytes after the ", expected,
                       " data bytes that header ", dims_to_string(dims), " promises"));

  swap_to_host(bytes, elem);
  HostTensor t(Shape(dtype, dims));
  if (expected > 0) std::memcpy(t.raw_data(), bytes.data(), expected);
  return t;
}

}  // namespace kiln::data
