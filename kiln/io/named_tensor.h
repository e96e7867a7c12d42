// NamedTensor and what the tensor container formats (safetensors, checkpoints) share: the
// on-disk dtype names and the checks every loaded tensor passes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/host_tensor.h"

namespace kiln::io {

/// A tensor with the name it is stored under. Containers keep a vector of these so the
/// order of the file is preserved.
struct NamedTensor {
  std::string name;
  HostTensor tensor;
};

/// The tensor called `name`, or nullptr.
const HostTensor* find_tensor(const std::vector<NamedTensor>& tensors, std::string_view name);

/// Safetensors dtype name ("F32", "BF16", "BOOL", ...) of a Kiln dtype; checkpoints use it too.
std::string_view file_dtype_name(DType dtype);
/// The Kiln dtype of a safetensors dtype name, or nullopt for names Kiln does not hold
/// (I8, U16, F8_E4M3, ...).
std::optional<DType> parse_file_dtype(std::string_view name);
/// The accepted names, for messages: "F32, F64, BF16, F16, I32, I64, U8, BOOL".
std::string file_dtype_names();

/// Throws IOError "[path] tensor 'name' ..." if bytes loaded from a file are not valid
/// values of the dtype (a bool byte other than 0 or 1).
void check_loaded_values(const HostTensor& tensor, const std::string& path, std::string_view name);

/// Throws ValueError if two tensors share a name or one is undefined; `where` names the writer.
void check_unique_defined(const std::vector<NamedTensor>& tensors, const std::string& where);

}  // namespace kiln::io
