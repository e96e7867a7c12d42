// Kiln's own reading of HDF5 global heap collections (file format spec III.E): "GCOL",
// version 1, 3 reserved bytes, u64 collection size; then objects of u16 index, u16 reference
// count, 4 reserved bytes, u64 size and the data padded to 8 bytes; index 0 is free space.
// No checksum covers them, and libhdf5 1.10 trusts their sizes (a free-space size of 0 loops
// forever, an object size past the collection reads out of bounds), so Kiln checks a
// collection here, bounded by the file, before libhdf5 may read it.
#include <algorithm>
#include <cstring>
#include <set>

#include "kiln/core/check.h"
#include "kiln/core/crc32c.h"
#include "kiln/io/file_reader.h"
#include "kiln/io/hdf5_impl.h"
#include "kiln/io/little_endian.h"

namespace kiln::io::h5 {
namespace {

constexpr char kSignature[4] = {'G', 'C', 'O', 'L'};
constexpr uint64_t kHeaderBytes = 16;          // signature, version, reserved, size
constexpr uint64_t kObjectHeaderBytes = 16;    // index, refcount, reserved, size
constexpr uint64_t kMinCollectionBytes = 4096;  // libhdf5 never makes smaller ones
constexpr size_t kScanBlock = size_t{1} << 20;

struct HeapObject {
  uint64_t index = 0;
  uint64_t data_offset = 0;  // in the file
  uint64_t size = 0;
};

uint64_t align8(uint64_t n) {
  return (n + 7) & ~uint64_t{7};
}

// The objects of the collection at `offset`, parsed exactly as libhdf5 1.10 walks them
// (H5HG__cache_heap_deserialize); or none, with the reason libhdf5 would go wrong in `why`.
std::vector<HeapObject> parse_collection(const FileReader& file, uint64_t offset, std::string* why) {
  uint8_t header[kHeaderBytes];
  if (offset > file.size() || file.size() - offset < kHeaderBytes) {
    *why = str_cat("the global heap collection at byte ", offset, " lies past the end of the file");
    return {};
  }
  file.read_at(offset, header, sizeof header, "a global heap collection");
  const uint64_t size = load_le(header + 8, 8);
  if (std::memcmp(header, kSignature, 4) != 0 || header[4] != 1) {
    *why = str_cat("byte ", offset, " holds no global heap collection (signature or version)");
    return {};
  }
  if (size < kMinCollectionBytes || size > file.size() - offset) {
    *why = str_cat("the global heap collection at byte ", offset, " claims ", size, " bytes, but ",
                   file.size() - offset, " remain in the file");
    return {};
  }
  std::string bytes(size, '\0');
  file.read_at(offset, bytes.data(), bytes.size(), "a global heap collection");
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  std::vector<HeapObject> objects;
  std::set<uint64_t> seen;
  uint64_t p = kHeaderBytes;
  while (p < size) {
    if (size - p < kObjectHeaderBytes) break;  // a tail too small for a header is free space
    const uint64_t index = load_le(data + p, 2);
    const uint64_t object_size = load_le(data + p + 8, 8);
    // Index 0 is free space, whose size already counts its header and is never padded.
    const uint64_t need =
        index == 0 ? object_size
                   : (object_size > size ? UINT64_MAX : kObjectHeaderBytes + align8(object_size));
    if (need < kObjectHeaderBytes || need % 8 != 0 || need > size - p || !seen.insert(index).second) {
      *why = str_cat("the global heap collection at byte ", offset, " holds a malformed object at byte ",
                     offset + p, " (index ", index, ", size ", object_size, ")");
      return {};
    }
    if (index != 0) objects.push_back({index, offset + p + kObjectHeaderBytes, object_size});
    p += need;
  }
  return objects;
}

}  // namespace

std::optional<HeapTextRef> find_heap_text(const std::string& path, std::string_view text) {
  FileReader file(path);
  std::optional<HeapTextRef> found;
  std::string block;
  std::string why;
  for (uint64_t start = 0; start < file.size(); start += kScanBlock) {
    // Blocks overlap by 3 bytes so a signature across their border is seen once.
    const uint64_t n = std::min<uint64_t>(kScanBlock + 3, file.size() - start);
    block.resize(n);
    file.read_at(start, block.data(), n, "the file");
    for (size_t at = block.find(kSignature, 0, 4); at != std::string::npos && at < kScanBlock;
         at = block.find(kSignature, at + 1, 4)) {
      const uint64_t collection = start + at;
      for (const HeapObject& o : parse_collection(file, collection, &why)) {
        if (o.size != text.size()) continue;
        std::string bytes(o.size, '\0');
        file.read_at(o.data_offset, bytes.data(), bytes.size(), "a global heap object");
        // The newest copy (libhdf5 appends collections and numbers objects upward) is the one
        // just written when the same text is stored twice.
        if (bytes == text) found = HeapTextRef{collection, o.index, o.size, crc32c(bytes.data(), bytes.size())};
      }
    }
  }
  return found;
}

void check_heap_text(const std::string& path, const std::string& object, const HeapTextRef& ref) {
  FileReader file(path);
  std::string why;
  std::vector<HeapObject> objects = parse_collection(file, ref.collection, &why);
  if (!why.empty()) fail(path, object, why);
  auto o = std::find_if(objects.begin(), objects.end(), [&](const HeapObject& h) { return h.index == ref.index; });
  if (o == objects.end() || o->size != ref.size)
    fail(path, object,
         str_cat("the global heap collection at byte ", ref.collection, " holds no object ", ref.index, " of ",
                 ref.size, " bytes, where Kiln stored this text"));
  std::string bytes(o->size, '\0');
  file.read_at(o->data_offset, bytes.data(), bytes.size(), "a global heap object");
  if (crc32c(bytes.data(), bytes.size()) != ref.crc)
    fail(path, object, "the text in HDF5's global heap does not match the CRC-32C Kiln recorded when saving it");
}

}  // namespace kiln::io::h5
