// tf.train.Example: the wire format TensorFlow writes (packed and unpacked), round trips,
// fixed-length extraction, and malformed bytes.
#include "kiln/data/readers/example_parser.h"

#include <gtest/gtest.h>

#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

Example parse(const std::vector<uint8_t>& b) { return parse_example(b.data(), b.size()); }

TEST(ExampleParserTest, RoundTripsAllThreeKinds) {
  Example ex;
  ex["img"] = Feature{.kind = Feature::Kind::kBytes, .bytes_list = {"\x89PNG", ""}};
  ex["x"] = Feature{.kind = Feature::Kind::kFloat, .float_list = {1.5f, -0.25f}};
  ex["y"] = Feature{.kind = Feature::Kind::kInt64, .int64_list = {-3, 0, int64_t{1} << 50}};
  Example back = parse(bytes_of(serialize_example(ex)));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back["img"].kind, Feature::Kind::kBytes);
  EXPECT_EQ(back["img"].bytes_list, ex["img"].bytes_list);
  EXPECT_EQ(back["x"].float_list, ex["x"].float_list);
  EXPECT_EQ(back["y"].int64_list, ex["y"].int64_list);
}

TEST(ExampleParserTest, ReadsTensorFlowsEncodingWithUnpackedValues) {
  // features { feature { key: "a" value { int64_list { value: 5 value: 300 } } } }, written
  // unpacked (one tag per value), as older writers do.
  const std::vector<uint8_t> wire = {0x0a, 0x10,                                // features
                                     0x0a, 0x0e,                                // map entry
                                     0x0a, 0x01, 'a',                           // key
                                     0x12, 0x09,                                // Feature
                                     0x1a, 0x07,                                // int64_list
                                     0x08, 0x05, 0x08, 0xac, 0x02, 0x08, 0x01};  // 5, 300, 1
  Example ex = parse(wire);
  EXPECT_EQ(ex["a"].kind, Feature::Kind::kInt64);
  EXPECT_EQ(ex["a"].int64_list, (std::vector<int64_t>{5, 300, 1}));
}

TEST(ExampleParserTest, ParseSingleExampleExtractsFixedLenFeatures) {
  Example ex;
  ex["x"] = Feature{.kind = Feature::Kind::kFloat, .float_list = {1, 2, 3, 4}};
  ex["name"] = Feature{.kind = Feature::Kind::kBytes, .bytes_list = {"seven"}};
  const std::string s = serialize_example(ex);
  HostTensor record = HostTensor::from_vector<uint8_t>({static_cast<int64_t>(s.size())}, bytes_of(s));
  Element parsed = parse_single_example(
      record, {{"x", DType::kF32, {2, 2}},
               {"name", DType::kU8, {}},
               {"label", DType::kI64, {}, HostTensor::scalar<int64_t>(-1)}});
  EXPECT_EQ(parsed[0].shape(), Shape(DType::kF32, {2, 2}));
  EXPECT_EQ(tensor_string(parsed[1]), "seven");
  EXPECT_EQ(parsed[2].to_vector<int64_t>()[0], -1);
  KILN_EXPECT_ERROR(parse_single_example(record, {{"x", DType::kF32, {3}}}), DataError,
                    "feature 'x' has 4 values, expected 3");
  KILN_EXPECT_ERROR(parse_single_example(record, {{"x", DType::kI64, {4}}}), DataError,
                    "feature 'x' is not a int64_list");
  KILN_EXPECT_ERROR(parse_single_example(record, {{"missing", DType::kF32, {1}}}), DataError,
                    "feature 'missing' is missing");
}

TEST(ExampleParserTest, MalformedBytesNameTheOffset) {
  KILN_EXPECT_ERROR(parse({0x0a, 0x10, 0x0a}), DataError, "at byte offset 2: field of 16 bytes overruns");
  KILN_EXPECT_ERROR(parse({0x0a, 0x02, 0x0a, 0x80}), DataError, "at byte offset 4: truncated varint");
  KILN_EXPECT_ERROR(parse({0x0b}), DataError, "unsupported wire type 3");
}

}  // namespace
}  // namespace kiln::data
