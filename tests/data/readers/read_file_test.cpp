// read_file / write_file: bytes round trip, file-name elements, and the source a tensor keeps.
#include "kiln/data/readers/read_file.h"

#include <gtest/gtest.h>

#include "kiln/data/element.h"
#include "kiln/data/readers/tfrecord_reader.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::data {
namespace {

TEST(ReadFileTest, RoundTripsBytesAndRemembersThePath) {
  kiln::testing::TempDir dir;
  const std::string path = dir.file("a.bin");
  write_file(path, string_tensor(std::string("ab\0c", 4)));
  const HostTensor bytes = read_file(path);
  EXPECT_EQ(bytes.shape(), Shape(DType::kU8, {4}));
  EXPECT_EQ(tensor_string(bytes), std::string("ab\0c", 4));
  EXPECT_EQ(contents_source(bytes), path);
  EXPECT_EQ(contents_source(bytes.slice_rows(1, 3)), path);  // views keep the source
  EXPECT_EQ(tensor_string(read_file(string_tensor(path))), std::string("ab\0c", 4));
  write_file(dir.file("empty"), string_tensor(""));
  EXPECT_EQ(read_file(dir.file("empty")).num_elements(), 0);
  EXPECT_EQ(contents_source(string_tensor("xyz")), "u8[3] contents");
}

TEST(ReadFileTest, ATfRecordRecordIsNamedByFileAndIndex) {
  kiln::testing::TempDir dir;
  {
    TFRecordWriter writer(dir.file("r.tfrecord"));
    writer.write("one");
    writer.write("two");
  }
  TFRecordReader reader(dir.file("r.tfrecord"));
  reader.next();
  EXPECT_EQ(contents_source(*reader.next()), dir.file("r.tfrecord") + ", record 1 (byte offset 19)");
}

TEST(ReadFileTest, ErrorsNameThePath) {
  kiln::testing::TempDir dir;
  KILN_EXPECT_ERROR(read_file(dir.file("missing.png")), DataError, "[read_file] " + dir.file("missing.png") + ": cannot open");
  KILN_EXPECT_ERROR(read_file(HostTensor::zeros(Shape(DType::kF32, {2}))), DTypeError, "a string[] or u8[n] tensor");
  KILN_EXPECT_ERROR(read_file(dir.path().string()), DataError, "not a regular file (a directory)");
  KILN_EXPECT_ERROR(write_file(dir.file("nodir/x"), string_tensor("x")), IOError, "cannot create");
  KILN_EXPECT_ERROR(write_file(dir.file("x"), HostTensor::zeros(Shape(DType::kF32, {2}))), DTypeError, "u8 contents");
}

}  // namespace
}  // namespace kiln::data
