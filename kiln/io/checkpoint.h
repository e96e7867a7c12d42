// Kiln's checkpoint container: named tensors plus named byte-string metadata (step, epoch,
// RNG state, data-iterator state) in one file, with a magic, a version and a CRC-32C over the
// payload, written atomically so a crash mid-save never leaves a broken checkpoint.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/io/named_tensor.h"

namespace kiln::io {

/// Bytes 0-7 of every checkpoint file.
inline constexpr char kCheckpointMagic[8] = {'K', 'I', 'L', 'N', 'C', 'K', 'P', 'T'};
/// The layout version write_checkpoint produces; read_checkpoint accepts versions <= this.
inline constexpr uint32_t kCheckpointVersion = 1;
/// Size of the fixed header: magic, version, flags, payload size, payload CRC, header CRC.
inline constexpr uint64_t kCheckpointHeaderBytes = 32;
/// Largest tensor rank a checkpoint may hold; beyond it a header is corrupt.
inline constexpr uint32_t kMaxCheckpointRank = 64;

/// What a checkpoint holds. Metadata values are arbitrary bytes (serialized RNG or iterator
/// state); tensors keep their order.
struct CheckpointContents {
  std::vector<NamedTensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// Writes `contents` to `path` atomically (temp file, fsync, rename, fsync directory).
/// Layout (little-endian):
///   header:  "KILNCKPT" | u32 version | u32 flags (0) | u64 payload size |
///            u32 CRC-32C of payload | u32 CRC-32C of the 28 header bytes before it
///   payload: u32 n_metadata, then per entry u32 key size, key, u64 value size, value;
///            u32 n_tensors, then per tensor u32 name size, name, u8 dtype-name size,
///            dtype name ("F32", as safetensors spells it), u32 rank, rank x u64 dims,
///            u64 data size, data.
/// Throws ValueError for duplicate or undefined tensors; IOError if the file cannot be written.
void write_checkpoint(const std::string& path, const CheckpointContents& contents);

/// Reads a checkpoint, verifying the header CRC, magic, version, exact file size and payload
/// CRC before parsing, then every field. Throws IOError "[path] <problem>. Hint: ..." for a
/// missing, truncated, corrupt or foreign file; never crashes on bad bytes.
CheckpointContents read_checkpoint(const std::string& path);

}  // namespace kiln::io
