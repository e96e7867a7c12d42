#include "kiln/io/atomic_file.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

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

// A writer killed mid-write leaves its temporary file; the next save of the file deletes it,
// but never the temporary file of a writer still running.
class StaleTempFileTest : public AtomicFileTest {
 protected:
  // Forks a writer of `path` that stops mid-write: it exits at once (killed), or waits until
  // release() (alive).
  void start_writer(const std::string& path, bool stay_alive) {
    if (::pipe(release_) != 0) FAIL() << "pipe";
    writer_ = ::fork();
    if (writer_ == 0) {
      auto* w = new AtomicFileWriter(path);  // never destroyed: as after SIGKILL
      w->write("half a sav");
      char c;
      if (stay_alive) (void)!::read(release_[0], &c, 1);
      ::_exit(0);
    }
    if (!stay_alive) release();
  }
  void release() {
    (void)!::write(release_[1], "x", 1);
    ::waitpid(writer_, nullptr, 0);
    ::close(release_[0]);
    ::close(release_[1]);
  }
  size_t temp_files() const {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
      n += is_atomic_temp_file_name(e.path().filename().string());
    return n;
  }
  pid_t writer_ = -1;
  int release_[2] = {-1, -1};
};

TEST_F(StaleTempFileTest, ADeadWritersTempFileIsDeletedByTheNextSave) {
  const std::string path = dir_.file("model.h5");
  for (int kill = 0; kill < 3; ++kill) {
    start_writer(path, /*stay_alive=*/false);
    EXPECT_EQ(temp_files(), 1u) << "each writer deletes its dead predecessor's";
  }
  write_file_atomically(path, "saved");
  EXPECT_EQ(temp_files(), 0u);
  EXPECT_EQ(read_file(path), "saved");
}

TEST_F(StaleTempFileTest, ALiveWritersTempFileIsKept) {
  const std::string path = dir_.file("model.h5");
  start_writer(path, /*stay_alive=*/true);
  for (int i = 0; i < 20 && temp_files() == 0; ++i) ::usleep(50'000);
  ASSERT_EQ(temp_files(), 1u);
  write_file_atomically(path, "saved");
  EXPECT_EQ(temp_files(), 1u);
  release();
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
