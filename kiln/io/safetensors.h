// The safetensors format (Hugging Face): an 8-byte little-endian header length, a JSON header
// mapping each tensor name to {dtype, shape, data_offsets} plus an optional "__metadata__"
// string map, then the raw little-endian tensor bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/core/shape.h"
#include "kiln/io/named_tensor.h"

namespace kiln::io {

/// Largest JSON header read_safetensors accepts (the reference implementation's limit).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

/// Everything a safetensors file holds. `tensors` are in the order of their data in the file
/// (which, for files Kiln writes, is the order they were given to write_safetensors).
struct SafetensorsFile {
  std::vector<NamedTensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// Where one tensor lives in a safetensors file, known without reading its data.
struct SafetensorsEntry {
  std::string name;
  Shape shape;
  /// Absolute file offset of the first data byte.
  uint64_t file_offset = 0;
};

/// A validated safetensors header: entries in data order, plus the metadata map.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
};

/// Writes `tensors` (in the given order, data packed back to back) and `metadata` to `path`
/// atomically. The header is padded with spaces to a multiple of 8 bytes, so the data starts
/// aligned, as the reference writer does. Throws ValueError for duplicate or undefined
/// tensors or the reserved name "__metadata__"; IOError if the file cannot be written.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/// Reads and validates the header only: header length bounds, JSON syntax, entry fields,
/// dtype names, shape * dtype size == offset span, offsets contiguous (no gap, no overlap)
/// and covering exactly the rest of the file. Throws IOError "[path] <problem>. Hint: ...".
SafetensorsHeader read_safetensors_header(const std::string& path);

/// Reads the whole file after read_safetensors_header's checks; bool tensors must hold only
/// 0 and 1. Throws IOError naming the file and the problem.
SafetensorsFile read_safetensors(const std::string& path);

}  // namespace kiln::io
