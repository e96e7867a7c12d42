// Safetensors reader and writer. The header is parsed with nlohmann::json and checked field
// by field; tensor data is then read straight into each HostTensor (no whole-file buffer).
#include "kiln/io/safetensors.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/file_reader.h"
#include "kiln/io/little_endian.h"

namespace kiln::io {
namespace {

using Json = nlohmann::ordered_json;
constexpr std::string_view kMetadataKey = "__metadata__";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  KILN_THROW(IOError, "[", path, "] ", what,
             ". Hint: the file is corrupt or not a safetensors file; write it again.");
}

// An entry as parsed, with offsets relative to the start of the data section.
struct RawEntry {
  SafetensorsEntry entry;
  uint64_t begin = 0;
  uint64_t end = 0;
};

uint64_t json_offset(const Json& v, const std::string& path, const std::string& name) {
  if (!v.is_number_unsigned())
    fail(path, str_cat("tensor '", name, "' has data_offsets entry ", v.dump(),
                       "; expected a non-negative integer"));
  return v.get<uint64_t>();
}

RawEntry parse_entry(const std::string& name, const Json& info, const std::string& path) {
  if (!info.is_object()) fail(path, str_cat("tensor '", name, "' is not a JSON object"));
  auto field = [&](const char* key) -> const Json& {
    auto it = info.find(key);
    if (it == info.end()) fail(path, str_cat("tensor '", name, "' lacks the field \"", key, "\""));
    return *it;
  };
  const Json& dtype_json = field("dtype");
  const Json& shape_json = field("shape");
  const Json& offsets_json = field("data_offsets");

  if (!dtype_json.is_string()) fail(path, str_cat("tensor '", name, "' has a non-string dtype"));
  auto dtype = parse_file_dtype(dtype_json.get<std::string>());
  if (!dtype)
    fail(path, str_cat("tensor '", name, "' has dtype '", dtype_json.get<std::string>(),
                       "', which Kiln does not read (Kiln reads ", file_dtype_names(), ")"));

  if (!shape_json.is_array()) fail(path, str_cat("tensor '", name, "' has a non-array shape"));
  Dims dims;
  for (const Json& d : shape_json) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(path, str_cat("tensor '", name, "' has shape ", shape_json.dump(),
                         "; expected non-negative integers"));
    dims.push_back(static_cast<int64_t>(d.get<uint64_t>()));
  }
  RawEntry raw;
  raw.entry.name = name;
  try {
    raw.entry.shape = Shape(*dtype, dims);
    (void)raw.entry.shape.byte_size();
  } catch (const ShapeError&) {
    fail(path, str_cat("tensor '", name, "' has shape ", shape_json.dump(),
                       " whose byte size overflows"));
  }

  if (!offsets_json.is_array() || offsets_json.size() != 2)
    fail(path, str_cat("tensor '", name, "' has data_offsets ", offsets_json.dump(),
                       "; expected [begin, end]"));
  raw.begin = json_offset(offsets_json[0], path, name);
  raw.end = json_offset(offsets_json[1], path, name);
  if (raw.end < raw.begin)
    fail(path, str_cat("tensor '", name, "' has data_offsets [", raw.begin, ", ", raw.end,
                       "] that end before they begin"));
  const uint64_t expected = static_cast<uint64_t>(raw.entry.shape.byte_size());
  if (raw.end - raw.begin != expected)
    fail(path, str_cat("tensor '", name, "' of shape ", raw.entry.shape, " needs ", expected,
                       " bytes but data_offsets [", raw.begin, ", ", raw.end, "] span ",
                       raw.end - raw.begin));
  return raw;
}

std::map<std::string, std::string> parse_metadata(const Json& meta, const std::string& path) {
  if (!meta.is_object()) fail(path, "\"__metadata__\" is not a JSON object of strings");
  std::map<std::string, std::string> out;
  for (auto it = meta.begin(); it != meta.end(); ++it) {
    if (!it.value().is_string())
      fail(path, str_cat("\"__metadata__\" entry '", it.key(), "' is not a string"));
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

// Sorted by offset, the tensors must tile [0, data_size) exactly.
void check_layout(std::vector<RawEntry>& raw, uint64_t data_size, const std::string& path) {
  std::stable_sort(raw.begin(), raw.end(), [](const RawEntry& a, const RawEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  const std::string* previous = nullptr;
  for (const RawEntry& r : raw) {
    if (r.begin < cursor)
      fail(path, str_cat("tensor '", r.entry.name, "' at data_offsets [", r.begin, ", ", r.end,
                         "] overlaps tensor '", *previous, "'"));
    if (r.begin > cursor)
      fail(path, str_cat("gap of ", r.begin - cursor, " bytes in the data before tensor '",
                         r.entry.name, "'"));
    cursor = r.end;
    previous = &r.entry.name;
  }
  if (cursor > data_size)
    fail(path, str_cat("truncated: the header describes ", cursor,
                       " data bytes but the file holds ", data_size));
  if (cursor < data_size)
    fail(path, str_cat(data_size - cursor, " unexpected bytes after the last tensor's data"));
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  check_unique_defined(tensors, path);
  Json header = Json::object();
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    if (t.name == kMetadataKey)
      KILN_THROW(ValueError, "[", path, "] '__metadata__' is reserved in safetensors and cannot",
                 " name a tensor. Hint: rename the tensor.");
    const uint64_t bytes = static_cast<uint64_t>(t.tensor.byte_size());
    header[t.name] = {{"dtype", file_dtype_name(t.tensor.dtype())},
                      {"shape", t.tensor.dims()},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string prefix;
  append_le(prefix, text.size(), 8);
  AtomicFileWriter writer(path);
  writer.write(prefix);
  writer.write(text);
  for (const NamedTensor& t : tensors)
    writer.write(t.tensor.raw_data(), static_cast<size_t>(t.tensor.byte_size()));
  writer.commit();
}

namespace {

SafetensorsHeader read_header(const FileReader& file) {
  const std::string& path = file.path();
  if (file.size() < 8)
    fail(path,
         str_cat("truncated: ", file.size(), " bytes is too short for the 8-byte header length"));
  unsigned char len_bytes[8];
  file.read_at(0, len_bytes, 8, "the header length");
  const uint64_t header_len = load_le(len_bytes, 8);
  if (header_len > kMaxSafetensorsHeaderBytes)
    fail(path, str_cat("header length ", header_len, " exceeds the limit of ",
                       kMaxSafetensorsHeaderBytes, " bytes"));
  if (header_len > file.size() - 8)
    fail(path, str_cat("truncated: header length ", header_len, " but only ", file.size() - 8,
                       " bytes follow it"));
  std::string text(static_cast<size_t>(header_len), '\0');
  file.read_at(8, text.data(), text.size(), "the JSON header");

  Json header;
  try {
    header = Json::parse(text);
  } catch (const Json::exception& e) {
    fail(path, str_cat("header is not valid JSON (", e.what(), ")"));
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");

  SafetensorsHeader out;
  std::vector<RawEntry> raw;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == kMetadataKey)
      out.metadata = parse_metadata(it.value(), path);
    else
      raw.push_back(parse_entry(it.key(), it.value(), path));
  }
  const uint64_t data_start = 8 + header_len;
  check_layout(raw, file.size() - data_start, path);
  out.entries.reserve(raw.size());
  for (RawEntry& r : raw) {
    r.entry.file_offset = data_start + r.begin;
    out.entries.push_back(std::move(r.entry));
  }
  return out;
}

}  // namespace

SafetensorsHeader read_safetensors_header(const std::string& path) {
  FileReader file(path);
  return read_header(file);
}

SafetensorsFile read_safetensors(const std::string& path) {
  FileReader file(path);
  SafetensorsHeader header = read_header(file);
  SafetensorsFile out;
  out.metadata = std::move(header.metadata);
  out.tensors.reserve(header.entries.size());
  for (SafetensorsEntry& e : header.entries) {
    HostTensor t(e.shape);
    const std::string what = str_cat("tensor '", e.name, "'");
    file.read_at(e.file_offset, t.raw_data(), static_cast<size_t>(t.byte_size()), what.c_str());
    check_loaded_values(t, path, e.name);
    out.tensors.push_back({std::move(e.name), std::move(t)});
  }
  return out;
}

}  // namespace kiln::io
