// On-disk dtype names and loaded-value checks shared by safetensors and checkpoints.
#include "kiln/io/named_tensor.h"

#include <cstring>
#include <unordered_set>

#include "kiln/core/check.h"

namespace kiln::io {
namespace {

struct DTypeName {
  DType dtype;
  std::string_view name;
};
constexpr DTypeName kNames[] = {
    {DType::kF32, "F32"}, {DType::kF64, "F64"}, {DType::kBF16, "BF16"}, {DType::kF16, "F16"},
    {DType::kI32, "I32"}, {DType::kI64, "I64"}, {DType::kU8, "U8"},     {DType::kBool, "BOOL"},
    {DType::kString, "STRING"},  // named so a message can say it; no format stores it
};
static_assert(std::size(kNames) == kNumDTypes, "every DType needs a file name");

}  // namespace

const HostTensor* find_tensor(const std::vector<NamedTensor>& tensors, std::string_view name) {
  for (const NamedTensor& t : tensors)
    if (t.name == name) return &t.tensor;
  return nullptr;
}

std::string_view file_dtype_name(DType dtype) {
  for (const DTypeName& n : kNames)
    if (n.dtype == dtype) return n.name;
  KILN_CHECK(false, "DType ", static_cast<int>(dtype), " has no file name");
  return {};
}

std::optional<DType> parse_file_dtype(std::string_view name) {
  for (const DTypeName& n : kNames)
    if (n.name == name) return n.dtype;
  return std::nullopt;
}

std::string file_dtype_names() {
  std::string out;
  for (const DTypeName& n : kNames) out += str_cat(out.empty() ? "" : ", ", n.name);
  return out;
}

void check_loaded_values(const HostTensor& tensor, const std::string& path, std::string_view name) {
  if (tensor.dtype() != DType::kBool) return;
  // Read the bytes as u8: a bool object holding 2 is undefined behaviour to load.
  const unsigned char* bytes = static_cast<const unsigned char*>(tensor.raw_data());
  for (int64_t i = 0; i < tensor.num_elements(); ++i)
    if (bytes[i] > 1)
      KILN_THROW(IOError, "[", path, "] tensor '", name, "' holds byte ", int{bytes[i]},
                 " at element ", i, ", which is not a bool (0 or 1). Hint: the file is corrupt.");
}

void check_unique_defined(const std::vector<NamedTensor>& tensors, const std::string& where) {
  std::unordered_set<std::string_view> seen;
  for (const NamedTensor& t : tensors) {
    if (!t.tensor.defined())
      KILN_THROW(ValueError, "[", where, "] tensor '", t.name,
                 "' is undefined. Hint: give every entry a HostTensor.");
    if (!seen.insert(t.name).second)
      KILN_THROW(ValueError, "[", where, "] tensor name '", t.name,
                 "' appears twice. Hint: names must be unique.");
  }
}

}  // namespace kiln::io
