#include "kiln/data/readers/idx_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>

#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::data {
namespace {

using Bytes = std::vector<unsigned char>;

Bytes header(unsigned char type, std::vector<uint32_t> dims) {
  Bytes b = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) b.push_back(static_cast<unsigned char>(d >> shift));
  return b;
}

Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class IdxReaderTest : public ::testing::Test {
 protected:
  kiln::testing::TempDir dir_;
};

TEST_F(IdxReaderTest, ReadsU8Images) {
  auto path = dir_.write("img", concat(header(0x08, {2, 2, 3}), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255}));
  HostTensor t = read_idx(path);
  EXPECT_EQ(t.shape(), Shape(DType::kU8, {2, 2, 3}));
  EXPECT_EQ(t.data<uint8_t>()[11], 255);
  EXPECT_EQ(t.data<uint8_t>()[4], 4);
}

TEST_F(IdxReaderTest, ReadsBigEndianI32AndF32) {
  auto ipath = dir_.write("i32", concat(header(0x0C, {2}), {0, 0, 1, 2, 0xff, 0xff, 0xff, 0xfe}));
  EXPECT_EQ(read_idx(ipath).to_vector<int32_t>(), (std::vector<int32_t>{258, -2}));
  auto fpath = dir_.write("f32", concat(header(0x0D, {1}), {0x3f, 0xc0, 0, 0}));
  EXPECT_EQ(read_idx(fpath).to_vector<float>(), (std::vector<float>{1.5f}));
}

TEST_F(IdxReaderTest, ReadsGzipCompressedFiles) {
  Bytes raw = concat(header(0x08, {4}), {9, 8, 7, 6});
  std::string path = dir_.file("labels.gz");
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(f);
  EXPECT_EQ(read_idx(path).to_vector<int32_t>(), (std::vector<int32_t>{9, 8, 7, 6}));
}

TEST_F(IdxReaderTest, MissingFileIsADataErrorNamingIt) {
  std::string path = dir_.file("nope");
  KILN_EXPECT_ERROR(read_idx(path), DataError, path + ": file not found");
}

TEST_F(IdxReaderTest, WrongMagicIsRejected) {
  auto path = dir_.write("bad", {'P', 'K', 3, 4, 0, 0, 0, 0});
  KILN_EXPECT_ERROR(read_idx(path), DataError, "wrong magic");
  KILN_EXPECT_ERROR(read_idx(path), DataError, path);
}

TEST_F(IdxReaderTest, UnsupportedElementTypeIsRejected) {
  auto path = dir_.write("i8", concat(header(0x09, {1}), {1}));
  KILN_EXPECT_ERROR(read_idx(path), DataError, "unsupported IDX element type 0x9");
}

TEST_F(IdxReaderTest, TruncatedHeaderIsRejected) {
  auto path = dir_.write("short", {0, 0, 8, 3, 0, 0, 0, 5});
  KILN_EXPECT_ERROR(read_idx(path), DataError, "truncated header: expected 3 dimensions, found 1");
  auto tiny = dir_.write("tiny", {0, 0});
  KILN_EXPECT_ERROR(read_idx(tiny), DataError, "shorter than the 4-byte magic");
}

TEST_F(IdxReaderTest, TruncatedDataIsRejected) {
  auto path = dir_.write("trunc", concat(header(0x08, {10}), {1, 2, 3}));
  KILN_EXPECT_ERROR(read_idx(path), DataError, "promises 10 data bytes, file holds 3");
}

TEST_F(IdxReaderTest, TrailingBytesAreRejected) {
  auto path = dir_.write("long", concat(header(0x08, {2}), {1, 2, 3}));
  KILN_EXPECT_ERROR(read_idx(path), DataError, "unexpected trailing bytes");
}

TEST_F(IdxReaderTest, AbsurdDimensionsFailWithoutAHugeAllocation) {
  auto path = dir_.write("absurd", concat(header(0x08, {0xffffffffu, 0xffffffffu, 0xffffffffu}), {1}));
  KILN_EXPECT_ERROR(read_idx(path), DataError, "absurd dimensions");
  // Large but not absurd: 4 GiB promised by an 17-byte file fails as truncated, having
  // allocated only one chunk.
  auto lying = dir_.write("lying", concat(header(0x08, {65536, 65536}), {1}));
  KILN_EXPECT_ERROR(read_idx(lying), DataError, "truncated");
}

TEST_F(IdxReaderTest, AGzipFileMissingItsTrailerIsADataError) {
  Bytes raw = concat(header(0x08, {4}), {9, 8, 7, 6});
  std::string path = dir_.file("cut.gz");
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(f);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 8);  // drop CRC and length
  KILN_EXPECT_ERROR(read_idx(path), DataError, path + ": truncated gzip stream");
}

TEST_F(IdxReaderTest, CorruptGzipIsADataError) {
  Bytes raw = concat(header(0x08, {64}), Bytes(64, 7));
  std::string path = dir_.file("corrupt.gz");
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(f);
  // Flip bytes in the middle of the deflate stream.
  std::FILE* fp = std::fopen(path.c_str(), "r+b");
  std::fseek(fp, 12, SEEK_SET);
  const unsigned char junk[6] = {0xde, 0xad, 0xbe, 0xef, 0x00, 0xff};
  std::fwrite(junk, 1, sizeof junk, fp);
  std::fclose(fp);
  try {
    read_idx(path);
    ADD_FAILURE() << "corrupt gzip was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::data
