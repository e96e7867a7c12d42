#include "kiln/io/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "kiln/core/error.h"
#include "kiln/io/file_reader.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::io {
namespace {

class AtomicFileTest : public ::testing::Test {
 protected:
  size_t files_in_dir() const {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) n += e.is_regular_file();
    return n;
  }
  kiln::testing::TempDir dir_;
};

TEST_F(AtomicFileTest, WritesANewFile) {
  std::string path = dir_.file("a.bin");
  write_file_atomically(path, std::string("hello\0world", 11));
  EXPECT_EQ(read_file(path), std::string("hello\0world", 11));
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(AtomicFileTest, CommitReplacesTheExistingFile) {
  std::string path = dir_.file("a.bin");
  write_file_atomically(path, "old contents");
  AtomicFileWriter writer(path);
  writer.write("new ");
  writer.write("contents");
  EXPECT_EQ(writer.bytes_written(), 12u);
  EXPECT_EQ(read_file(path), "old contents");  // invisible until commit
  writer.commit();
  EXPECT_EQ(read_file(path), "new contents");
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(AtomicFileTest, DestroyingWithoutCommitKeepsTheOldFileAndRemovesTheTemp) {
  std::string path = dir_.file("ckpt");
  write_file_atomically(path, "previous checkpoint");
  {
    AtomicFileWriter writer(path);
    writer.write("half a checkp");
    EXPECT_TRUE(std::filesystem::exists(writer.temp_path()));
    EXPECT_EQ(std::filesystem::path(writer.temp_path()).parent_path(), dir_.path());
  }
  EXPECT_EQ(read_file(path), "previous checkpoint");
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(AtomicFileTest, TempFileNamesAreRecognised) {
  AtomicFileWriter writer(dir_.file("model.h5"));
  std::string name = std::filesystem::path(writer.temp_path()).filename().string();
  EXPECT_TRUE(is_atomic_temp_file_name(name)) << name;
  EXPECT_FALSE(is_atomic_temp_file_name("model.h5"));
}

TEST_F(AtomicFileTest, MissingDirectoryIsAnIOErrorNamingThePath) {
  std::string path = dir_.file("no/such/dir/file.bin");
  KILN_EXPECT_ERROR(write_file_atomically(path, "x"), IOError, path);
  KILN_EXPECT_ERROR(write_file_atomically(path, "x"), IOError, "No such file or directory");
}

TEST_F(AtomicFileTest, WriteAfterCommitIsRejected) {
  AtomicFileWriter writer(dir_.file("a"));
  writer.commit();
  KILN_EXPECT_ERROR(writer.write("x"), ValueError, "write after commit");
  KILN_EXPECT_ERROR(writer.commit(), ValueError, "commit twice");
}

TEST(FileReaderTest, ReadingPastTheEndIsATruncationError) {
  kiln::testing::TempDir dir;
  std::string path = dir.write("f", {1, 2, 3});
  FileReader reader(path);
  EXPECT_EQ(reader.size(), 3u);
  char buf[4];
  KILN_EXPECT_ERROR(reader.read_at(1, buf, 3, "the record"), IOError,
                    path + "] truncated: the record needs bytes [1, 4)");
}

TEST(FileReaderTest, MissingFilesAndDirectoriesAreIOErrors) {
  kiln::testing::TempDir dir;
  KILN_EXPECT_ERROR(FileReader(dir.file("nope")), IOError, "No such file");
  KILN_EXPECT_ERROR(FileReader(dir.path().string()), IOError, "is a directory");
}

}  // namespace
}  // namespace kiln::io
