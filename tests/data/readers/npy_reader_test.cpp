// NPY: round trips through write_npy, hand-made v1/v2 headers, and malformed files that must
// name the file and the byte offset.
#include "kiln/data/readers/npy_reader.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::data {
namespace {

using Bytes = std::vector<unsigned char>;

// A hand-made NPY file: magic, version, header (padded to 16 bytes), data.
Bytes npy(int major, std::string header, const Bytes& data) {
  const size_t len_size = major == 1 ? 2 : 4;
  while ((8 + len_size + header.size() + 1) % 16 != 0) header += ' ';
  header += '\n';
  Bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major), 0};
  for (size_t i = 0; i < len_size; ++i) b.push_back(static_cast<unsigned char>(header.size() >> (8 * i)));
  for (char c : header) b.push_back(static_cast<unsigned char>(c));  // (insert: a GCC 12 -Wstringop-overflow false positive at -O3)
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

Bytes f32_bytes(std::vector<float> v) {
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

class NpyReaderTest : public ::testing::Test {
 protected:
  kiln::testing::TempDir dir_;
};

TEST_F(NpyReaderTest, RoundTripsEveryDtype) {
  const std::string path = dir_.file("a.npy");
  write_npy(path, HostTensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  HostTensor f = read_npy(path);
  EXPECT_EQ(f.shape(), Shape(DType::kF32, {2, 3}));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  write_npy(path, HostTensor::from_vector<int64_t>({3}, {-1, 0, 1LL << 40}));
  EXPECT_EQ(read_npy(path).to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, 1LL << 40}));
  write_npy(path, HostTensor::from_vector<bool>({2}, {true, false}));
  EXPECT_EQ(read_npy(path).shape(), Shape(DType::kBool, {2}));
  write_npy(path, HostTensor::scalar<double>(2.5));
  EXPECT_EQ(read_npy(path).shape(), Shape(DType::kF64, {}));
}

TEST_F(NpyReaderTest, ReadsVersion2HeadersInAnyKeyOrder) {
  auto path = dir_.write("v2.npy", npy(2, "{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}",
                                       f32_bytes({1.5f, -2})));
  EXPECT_EQ(read_npy(path).to_vector<float>(), (std::vector<float>{1.5f, -2}));
  auto u8 = dir_.write("u8.npy", npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 3), }", {7, 8, 9}));
  EXPECT_EQ(read_npy(u8).shape(), Shape(DType::kU8, {1, 3}));
}

TEST_F(NpyReaderTest, RejectsFortranOrder) {
  auto path = dir_.write("f.npy", npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", f32_bytes({1})));
  KILN_EXPECT_ERROR(read_npy(path), DataError, path + ": at byte offset 10: fortran_order is True");
}

TEST_F(NpyReaderTest, RejectsBigEndianAndUnknownDtypes) {
  auto be = dir_.write("be.npy", npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", f32_bytes({1})));
  KILN_EXPECT_ERROR(read_npy(be), DataError, "big-endian dtype '>f4'");
  auto c8 = dir_.write("c8.npy", npy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", Bytes(8)));
  KILN_EXPECT_ERROR(read_npy(c8), DataError, "unsupported dtype '<c8'");
}

TEST_F(NpyReaderTest, BadMagicAndBadHeaderNameFileAndOffset) {
  auto magic = dir_.write("m.npy", {'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0});
  KILN_EXPECT_ERROR(read_npy(magic), DataError, magic + ": at byte offset 0: not an NPY file");
  auto header = dir_.write("h.npy", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [1], }", f32_bytes({1})));
  KILN_EXPECT_ERROR(read_npy(header), DataError, header + ": at byte offset 60: expected '('");
  Bytes cut = npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", {});
  cut.resize(30);
  auto truncated = dir_.write("t.npy", cut);
  KILN_EXPECT_ERROR(read_npy(truncated), DataError, "at byte offset 10: truncated header");
}

TEST_F(NpyReaderTest, DataSizeMustMatchTheShape) {
  auto path = dir_.write("s.npy", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f32_bytes({1, 2})));
  KILN_EXPECT_ERROR(read_npy(path), DataError, "at byte offset 80: header says f32[3] (12 data bytes), the file holds 8");
}

TEST_F(NpyReaderTest, GarbageInTheHeaderPaddingIsAnError) {
  Bytes b = npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f32_bytes({1}));
  b[10 + 62] = 'x';  // a padding space
  auto path = dir_.write("pad.npy", b);
  KILN_EXPECT_ERROR(read_npy(path), DataError, path + ": at byte offset 72: unexpected byte 0x78 in the header's padding");
}

TEST_F(NpyReaderTest, ABoolByteOtherThanZeroOrOneIsAnError) {
  auto path = dir_.write("b.npy", npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", {1, 0, 2}));
  KILN_EXPECT_ERROR(read_npy(path), DataError, path + ": at byte offset 82: bool element 2 is byte 2, not 0 or 1");
}

TEST_F(NpyReaderTest, AShapeWhoseByteCountOverflowsNamesTheFile) {
  auto path = dir_.write("o.npy", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", {}));
  KILN_EXPECT_ERROR(read_npy(path), DataError, path + ": at byte offset 10: the shape [4294967296,4294967296] holds more bytes");
}

TEST_F(NpyReaderTest, MissingFileIsADataError) {
  KILN_EXPECT_ERROR(read_npy(dir_.file("nope.npy")), DataError, "nope.npy: cannot open");
}

}  // namespace
}  // namespace kiln::data
