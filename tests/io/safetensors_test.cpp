#include "kiln/io/safetensors.h"

#include <gtest/gtest.h>

#include "kiln/core/error.h"
#include "kiln/io/file_reader.h"
#include "kiln/io/little_endian.h"
#include "tests/io/python_check.h"
#include "tests/io/tensor_samples.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::io {
namespace {

class SafetensorsTest : public ::testing::Test {
 protected:
  // A file with the given JSON header and data bytes, laid out by hand.
  std::string make_file(const std::string& header, const std::string& data = "") {
    std::string bytes;
    append_le(bytes, header.size(), 8);
    bytes += header + data;
    return dir_.write("t.safetensors", std::vector<unsigned char>(bytes.begin(), bytes.end()));
  }
  void expect_rejected(const std::string& header, const std::string& data,
                       const std::string& problem) {
    std::string path = make_file(header, data);
    KILN_EXPECT_ERROR(read_safetensors(path), IOError, path + "] " + problem);
  }
  kiln::testing::TempDir dir_;
};

TEST_F(SafetensorsTest, RoundTripsEveryDtypeScalarsAndMetadata) {
  auto tensors = testing::every_dtype_tensors();
  std::string path = dir_.file("all.safetensors");
  write_safetensors(path, tensors, {{"format", "pt"}, {"step", "12"}});
  SafetensorsFile loaded = read_safetensors(path);
  ASSERT_EQ(loaded.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(loaded.tensors[i].name, tensors[i].name);  // order kept
    testing::expect_same_tensor(loaded.tensors[i].tensor, tensors[i].tensor, tensors[i].name);
  }
  EXPECT_EQ(loaded.metadata,
            (std::map<std::string, std::string>{{"format", "pt"}, {"step", "12"}}));
  EXPECT_NE(find_tensor(loaded.tensors, "u8"), nullptr);
  EXPECT_EQ(find_tensor(loaded.tensors, "nope"), nullptr);
}

TEST_F(SafetensorsTest, HeaderIsPaddedSoDataStartsAligned) {
  std::string path = dir_.file("a.safetensors");
  write_safetensors(path, {{"w", HostTensor::from_vector<float>({3}, {1, 2, 3})}});
  std::string bytes = read_file(path);
  uint64_t n = load_le(bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 12);
  EXPECT_EQ(bytes.substr(8, n).find(R"("w":{"dtype":"F32","shape":[3],"data_offsets":[0,12]})"),
            1u);
}

TEST_F(SafetensorsTest, HeaderAloneGivesShapesAndOffsets) {
  std::string path = dir_.file("a.safetensors");
  write_safetensors(path, {{"a", HostTensor(Shape(DType::kI64, {2}))},
                           {"b", HostTensor(Shape(DType::kBF16, {3, 1}))}});
  SafetensorsHeader h = read_safetensors_header(path);
  ASSERT_EQ(h.entries.size(), 2u);
  EXPECT_EQ(h.entries[1].name, "b");
  EXPECT_EQ(h.entries[1].shape, Shape(DType::kBF16, {3, 1}));
  EXPECT_EQ(h.entries[1].file_offset, h.entries[0].file_offset + 16);
}

TEST_F(SafetensorsTest, ReadsTensorsInDataOrderWhateverTheHeaderOrder) {
  std::string path = make_file(R"({"late":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
                               R"("early":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                               "\x07\x09");
  SafetensorsFile f = read_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "early");
  EXPECT_EQ(f.tensors[1].tensor.to_vector<int32_t>(), std::vector<int32_t>{9});
}

TEST_F(SafetensorsTest, WriterRejectsDuplicateAndReservedNames) {
  auto t = HostTensor::scalar<float>(1);
  KILN_EXPECT_ERROR(write_safetensors(dir_.file("x"), {{"a", t}, {"a", t}}), ValueError,
                    "'a' appears twice");
  KILN_EXPECT_ERROR(write_safetensors(dir_.file("x"), {{"__metadata__", t}}), ValueError,
                    "reserved");
}

TEST_F(SafetensorsTest, RejectsFilesTooShortOrWithAbsurdHeaderLengths) {
  std::string path = dir_.write("short", {1, 2, 3});
  KILN_EXPECT_ERROR(read_safetensors(path), IOError, path + "] truncated: 3 bytes");
  std::string huge;
  append_le(huge, uint64_t{1} << 40, 8);
  path = dir_.write("huge", std::vector<unsigned char>(huge.begin(), huge.end()));
  KILN_EXPECT_ERROR(read_safetensors(path), IOError, "exceeds the limit");
  std::string cut;
  append_le(cut, 100, 8);
  cut += "{}";
  path = dir_.write("cut", std::vector<unsigned char>(cut.begin(), cut.end()));
  KILN_EXPECT_ERROR(read_safetensors(path), IOError, "truncated: header length 100 but only 2");
}

TEST_F(SafetensorsTest, RejectsMalformedHeaders) {
  expect_rejected("{\"a\":", "", "header is not valid JSON");
  expect_rejected("[1,2]", "", "header is not a JSON object");
  expect_rejected(R"({"a":{"dtype":"F32","shape":[1]}})", "abcd",
                  "tensor 'a' lacks the field \"data_offsets\"");
  expect_rejected(R"({"a":{"dtype":"I16","shape":[1],"data_offsets":[0,2]}})", "ab",
                  "tensor 'a' has dtype 'I16', which Kiln does not read (Kiln reads F32, F64");
  expect_rejected(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd",
                  "tensor 'a' has shape [-1]");
  expect_rejected(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd",
                  "tensor 'a' of shape f32[2] needs 8 bytes but data_offsets [0, 4] span 4");
  expect_rejected(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})",
                  "abcd", "tensor 'a' has shape [4294967296,4294967296] whose byte size overflows");
  expect_rejected(R"({"__metadata__":{"k":1}})", "", "\"__metadata__\" entry 'k' is not a string");
}

TEST_F(SafetensorsTest, RejectsOverlapsGapsTruncationAndTrailingBytes) {
  expect_rejected(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                  R"("b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
                  "abc", "tensor 'b' at data_offsets [1, 3] overlaps tensor 'a'");
  expect_rejected(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", "ab",
                  "gap of 1 bytes in the data before tensor 'a'");
  expect_rejected(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", "ab",
                  "truncated: the header describes 4 data bytes but the file holds 2");
  expect_rejected(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "ab",
                  "1 unexpected bytes after the last tensor");
}

TEST_F(SafetensorsTest, RejectsBoolBytesOtherThanZeroAndOne) {
  expect_rejected(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})",
                  std::string("\x01\x02", 2), "tensor 'm' holds byte 2 at element 1");
}

TEST_F(SafetensorsTest, MissingFileIsAnIOErrorNamingIt) {
  std::string path = dir_.file("missing.safetensors");
  KILN_EXPECT_ERROR(read_safetensors(path), IOError, path + "] cannot open");
}

TEST_F(SafetensorsTest, PythonReadsWhatKilnWrites) {
  if (!testing::python_has("numpy")) GTEST_SKIP() << "python3 with numpy not available";
  std::string path = dir_.file("py.safetensors");
  write_safetensors(path,
                    {{"w", HostTensor::from_vector<float>({2, 2}, {1, 2, 3, 4})},
                     {"step", HostTensor::scalar<int64_t>(7)}},
                    {{"epoch", "3"}});
  // An independent reader: struct + json + numpy, as the format's spec describes.
  std::string script =
      "import json,struct,sys,numpy as np\n"
      "b=open(sys.argv[1],'rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n])\n"
      "d=b[8+n:]; w=h['w']; s=h['step']\n"
      "assert h['__metadata__']=={'epoch':'3'}\n"
      "a=np.frombuffer(d[w['data_offsets'][0]:w['data_offsets'][1]],'<f4').reshape(w['shape'])\n"
      "assert (a==np.array([[1,2],[3,4]],'f4')).all(), a\n"
      "assert s['shape']==[] and "
      "np.frombuffer(d[s['data_offsets'][0]:s['data_offsets'][1]],'<i8')[0]==7\n";
  EXPECT_EQ(testing::run_python(dir_.file("check.py"), script, path), 0);
}

}  // namespace
}  // namespace kiln::io
