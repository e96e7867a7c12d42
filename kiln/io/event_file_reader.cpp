// TensorBoard event files through the generated lite messages of kiln/io/proto: TFRecord
// framing checked record by record, then each Event's summary values.
#include "kiln/io/event_file_reader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "kiln/core/check.h"
#include "kiln/core/crc32c.h"
#include "kiln/io/file_reader.h"
#include "kiln/io/little_endian.h"
#include "proto/event.pb.h"

namespace kiln::io {

std::vector<ScalarEvent> read_event_scalars(const std::string& path) {
  const std::string bytes = read_file(path);
  std::vector<ScalarEvent> scalars;
  auto fail = [&](size_t offset, const std::string& problem) {
    KILN_THROW(IOError, "[", path, "] record at byte offset ", offset, ": ", problem,
               ". Hint: the file is damaged or not a TensorBoard event file; write it again.");
  };
  for (size_t offset = 0, index = 0; offset < bytes.size(); ++index) {
    // u64 length | u32 masked CRC of the length | data | u32 masked CRC of the data
    if (bytes.size() - offset < 12) fail(offset, "truncated header");
    const auto* header = reinterpret_cast<const uint8_t*>(bytes.data() + offset);
    if (crc32c_mask(crc32c(header, 8)) != static_cast<uint32_t>(load_le(header + 8, 4))) fail(offset, "length CRC mismatch");
    const uint64_t length = load_le(header, 8);
    if (length > bytes.size() - offset - 12 || bytes.size() - offset - 12 - length < 4) fail(offset, "truncated data");
    const char* data = bytes.data() + offset + 12;
    if (crc32c_mask(crc32c(data, length)) != static_cast<uint32_t>(load_le(data + length, 4)))
      fail(offset, "data CRC mismatch");
    tensorboard::Event event;
    if (!event.ParseFromArray(data, static_cast<int>(length))) fail(offset, "not an Event protocol buffer");
    if (index == 0 && !event.file_version().starts_with("brain.Event:"))
      fail(offset, "the first event names no file version (brain.Event:2)");
    for (const tensorboard::Summary::Value& v : event.summary().value())
      if (v.value_case() == tensorboard::Summary::Value::kSimpleValue)
        scalars.push_back({v.tag(), event.step(), v.simple_value(), event.wall_time()});
    offset += 12 + length + 4;
  }
  return scalars;
}

std::vector<std::string> list_event_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().filename().string().starts_with("events.out.tfevents."))
      files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace kiln::io
