// tf.io.read_file / write_file: a whole file as one u8[n] string element. The tensor's storage
// remembers the path, so a decoder that fails on the bytes names the file (contents_source).
#pragma once

#include <string>

#include "kiln/core/host_tensor.h"

namespace kiln::data {

/// The bytes of the file at `path` as a u8[n] tensor. Throws DataError naming the path if it
/// cannot be opened or read.
HostTensor read_file(const std::string& path);
/// The same for a file-name element (u8[n], as list_files yields): `list_files(...).map(read_file)`.
HostTensor read_file(const HostTensor& filename);
/// Writes the bytes of a u8 tensor to `path`. Throws IOError if that fails, DTypeError for
/// another dtype.
void write_file(const std::string& path, const HostTensor& contents);

/// Where `contents` came from, for error messages: the path for read_file's tensors, "path,
/// record 17 (byte offset 4242)" for a TFRecord record, else "u8[n] contents" (bytes built in
/// memory). Views of such a tensor keep its source.
std::string contents_source(const HostTensor& contents);

}  // namespace kiln::data
