// read_event_scalars: hand-encoded Event records (protobuf wire bytes written out below) and
// files EventFileWriter made read back; damaged files fail naming the file and the offset.
#include "kiln/io/event_file_reader.h"

#include <gtest/gtest.h>

#include <fstream>

#include "kiln/core/crc32c.h"
#include "kiln/core/error.h"
#include "kiln/io/event_file_writer.h"
#include "tests/testing/temp_dir.h"

namespace kiln::io {
namespace {

std::string framed(const std::string& record) {
  const TFRecordFrame f = tfrecord_frame(record);
  return std::string(reinterpret_cast<const char*>(f.header), 12) + record +
         std::string(reinterpret_cast<const char*>(f.footer), 4);
}

std::string write_bytes(const kiln::testing::TempDir& dir, const std::string& bytes) {
  const std::string path = dir.file("events.out.tfevents.1.host.1.0.v2");
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Event{file_version: "brain.Event:2"}: field 3, wire type 2 (0x1a), 13 bytes.
const std::string kVersionEvent = std::string("\x1a\x0d", 2) + "brain.Event:2";
// Event{step: 3, summary{value{tag: "x", simple_value: 2.5f}}}: step (0x10) varint 3;
// summary (0x2a) of 10 bytes = value (0x0a) of 8 bytes = tag (0x0a 0x01 'x') and
// simple_value (0x15) little-endian 2.5f = 0x40200000.
const std::string kScalarEvent("\x10\x03\x2a\x0a\x0a\x08\x0a\x01x\x15\x00\x00\x20\x40", 14);

TEST(EventFileReaderTest, ReadsHandEncodedScalarEvents) {
  kiln::testing::TempDir dir;
  const auto scalars = read_event_scalars(write_bytes(dir, framed(kVersionEvent) + framed(kScalarEvent)));
  ASSERT_EQ(scalars.size(), 1u);
  EXPECT_EQ(scalars[0].tag, "x");
  EXPECT_EQ(scalars[0].step, 3);
  EXPECT_EQ(scalars[0].value, 2.5);
}

TEST(EventFileReaderTest, ReadsBackWhatTheWriterWroteSkippingHistogramsAndGraphs) {
  kiln::testing::TempDir dir;
  EventFileWriter w(dir.path().string());
  w.add_scalar("epoch_loss", 0.25, 0);
  const std::vector<double> values = {1, 2, 3};
  w.add_histogram("dense/kernel_0/histogram", values, 0);
  w.add_graph({{.name = "a", .op = "add"}});
  w.add_scalar("epoch_loss", 1.0 / 3.0, 1);
  w.close();
  EXPECT_EQ(list_event_files(dir.path().string()), std::vector<std::string>{w.path()});
  const auto scalars = read_event_scalars(w.path());
  ASSERT_EQ(scalars.size(), 2u);
  EXPECT_EQ(scalars[0].tag, "epoch_loss");
  EXPECT_EQ(scalars[0].value, 0.25);
  EXPECT_EQ(scalars[1].step, 1);
  EXPECT_EQ(scalars[1].value, static_cast<float>(1.0 / 3.0));
  EXPECT_GT(scalars[1].wall_time, 1.7e9);
}

TEST(EventFileReaderTest, DamagedFilesNameTheFileOffsetAndProblem) {
  kiln::testing::TempDir dir;
  std::string bytes = framed(kVersionEvent) + framed(kScalarEvent);
  const size_t second = framed(kVersionEvent).size();
  auto expect_error = [&](const std::string& file_bytes, const std::string& problem) {
    const std::string path = write_bytes(dir, file_bytes);
    try {
      read_event_scalars(path);
      ADD_FAILURE() << "no error for " << problem;
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    }
  };
  std::string flipped = bytes;
  flipped[second + 12 + 1] ^= 0x01;  // the step's value
  expect_error(flipped, "byte offset " + std::to_string(second) + ": data CRC mismatch");
  expect_error(bytes.substr(0, bytes.size() - 2), "truncated data");
  expect_error(bytes.substr(0, second + 5), "truncated header");
  expect_error(framed(kScalarEvent), "names no file version");
}

}  // namespace
}  // namespace kiln::io
