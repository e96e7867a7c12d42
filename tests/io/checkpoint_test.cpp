#include "kiln/io/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "kiln/core/crc32c.h"
#include "kiln/core/error.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/file_reader.h"
#include "tests/io/tensor_samples.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::io {
namespace {

class CheckpointTest : public ::testing::Test {
 protected:
  CheckpointContents sample() const {
    CheckpointContents c;
    c.tensors = testing::every_dtype_tensors();
    c.metadata = {{"step", "1200"},
                  {"epoch", "3"},
                  {"rng_state", std::string("\x00\x01\xff\x7f", 4)},
                  {"iterator_state", ""}};
    return c;
  }
  // Writes a valid checkpoint, lets `edit` change its bytes, and returns the new file's path.
  template <typename Edit>
  std::string edited(Edit edit) {
    std::string path = dir_.file("ckpt");
    write_checkpoint(path, sample());
    std::string bytes = read_file(path);
    edit(bytes);
    write_file_atomically(path, bytes);
    return path;
  }
  kiln::testing::TempDir dir_;
};

TEST_F(CheckpointTest, RoundTripsEveryDtypeAndBinaryMetadata) {
  std::string path = dir_.file("ckpt-1.kckpt");
  CheckpointContents original = sample();
  write_checkpoint(path, original);
  CheckpointContents loaded = read_checkpoint(path);
  EXPECT_EQ(loaded.metadata, original.metadata);
  ASSERT_EQ(loaded.tensors.size(), original.tensors.size());
  for (size_t i = 0; i < original.tensors.size(); ++i) {
    EXPECT_EQ(loaded.tensors[i].name, original.tensors[i].name);
    testing::expect_same_tensor(loaded.tensors[i].tensor, original.tensors[i].tensor,
                                original.tensors[i].name);
  }
}

TEST_F(CheckpointTest, EmptyCheckpointRoundTrips) {
  std::string path = dir_.file("empty");
  write_checkpoint(path, {});
  CheckpointContents loaded = read_checkpoint(path);
  EXPECT_TRUE(loaded.tensors.empty());
  EXPECT_TRUE(loaded.metadata.empty());
}

TEST_F(CheckpointTest, WriterRejectsDuplicateTensorNames) {
  CheckpointContents c;
  c.tensors = {{"w", HostTensor::scalar<float>(1)}, {"w", HostTensor::scalar<float>(2)}};
  KILN_EXPECT_ERROR(write_checkpoint(dir_.file("x"), c), ValueError, "'w' appears twice");
  EXPECT_FALSE(std::filesystem::exists(dir_.file("x")));
}

TEST_F(CheckpointTest, MissingFileIsAnIOErrorNamingIt) {
  std::string path = dir_.file("nope");
  KILN_EXPECT_ERROR(read_checkpoint(path), IOError, path + "] cannot open");
}

TEST_F(CheckpointTest, ForeignFileIsRejectedByItsMagic) {
  std::string path = edited([](std::string& b) { b[0] = 'X'; });
  KILN_EXPECT_ERROR(read_checkpoint(path), IOError, path + "] wrong magic");
}

TEST_F(CheckpointTest, CorruptHeaderIsRejectedByItsChecksum) {
  std::string path = edited([](std::string& b) { b[17] ^= 0x40; });  // payload size
  KILN_EXPECT_ERROR(read_checkpoint(path), IOError, path + "] header checksum mismatch");
}

TEST_F(CheckpointTest, CorruptPayloadIsRejectedByItsChecksum) {
  std::string path = edited([](std::string& b) { b[b.size() - 3] ^= 1; });
  KILN_EXPECT_ERROR(read_checkpoint(path), IOError, path + "] payload checksum mismatch");
}

TEST_F(CheckpointTest, TruncatedAndOverlongFilesAreRejected) {
  std::string path = edited([](std::string& b) { b.resize(b.size() - 10); });
  KILN_EXPECT_ERROR(read_checkpoint(path), IOError, path + "] truncated: header promises");
  path = edited([](std::string& b) { b.resize(20); });
  KILN_EXPECT_ERROR(read_checkpoint(path), IOError, "truncated: 20 bytes is shorter");
  path = edited([](std::string& b) { b += "junk"; });
  KILN_EXPECT_ERROR(read_checkpoint(path), IOError, "4 unexpected bytes after the");
}

// Sets header byte `at` to `value` and re-fixes the header CRC, as a writer would have.
std::string with_header_byte(std::string b, size_t at, char value) {
  b[at] = value;
  uint32_t crc = crc32c(b.data(), 28);
  for (int i = 0; i < 4; ++i) b[28 + i] = static_cast<char>(crc >> (8 * i));
  return b;
}

TEST_F(CheckpointTest, NewerVersionsAskForANewerKiln) {
  std::string path = dir_.file("v9");
  write_checkpoint(path, {});
  write_file_atomically(path, with_header_byte(read_file(path), 8, 9));
  KILN_EXPECT_ERROR(read_checkpoint(path), IOError, "unsupported checkpoint version 9");
}

TEST_F(CheckpointTest, NonZeroFlagsAreRejectedEvenWithAValidHeaderChecksum) {
  std::string path = dir_.file("flags");
  write_checkpoint(path, {});
  write_file_atomically(path, with_header_byte(read_file(path), 12, 1));
  KILN_EXPECT_ERROR(read_checkpoint(path), IOError, "[" + path + "] header flags are 0x1, but this version's flags are 0");
}

TEST_F(CheckpointTest, ProcessKilledMidWriteLeavesThePreviousCheckpointLoadable) {
  std::string path = dir_.file("ckpt-5.kckpt");
  write_checkpoint(path, sample());
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Like kill -9 during a save: the writer's destructor never runs.
    AtomicFileWriter* writer = new AtomicFileWriter(path);
    writer->write("KILNCKPT partial");
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  size_t temps = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
    temps += is_atomic_temp_file_name(e.path().filename().string());
  EXPECT_EQ(temps, 1u);  // the dead writer's leftover
  EXPECT_EQ(read_checkpoint(path).metadata.at("step"), "1200");
}

}  // namespace
}  // namespace kiln::io
