// TFRecord: writer/reader round trip, the dataset source with restore, tf.train.Example
// parsing, and truncated or corrupt files that must name the file and record offset.
#include "kiln/data/readers/tfrecord_reader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "kiln/core/crc32c.h"
#include "kiln/data/readers/example_parser.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::data {
namespace {

using Bytes = std::vector<unsigned char>;

class TFRecordReaderTest : public ::testing::Test {
 protected:
  std::string write_records(const std::string& name, const std::vector<std::string>& records) {
    const std::string path = dir_.file(name);
    TFRecordWriter w(path);
    for (const std::string& r : records) w.write(r);
    w.close();
    return path;
  }
  Bytes read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
  }
  kiln::testing::TempDir dir_;
};

TEST_F(TFRecordReaderTest, RoundTripsRecords) {
  const std::string path = write_records("a.tfrecord", {"hello", "", std::string(1000, 'x')});
  TFRecordReader r(path);
  EXPECT_EQ(tensor_string(*r.next()), "hello");
  EXPECT_EQ(r.offset(), 12u + 5 + 4);
  EXPECT_EQ(r.next()->num_elements(), 0);
  EXPECT_EQ(tensor_string(*r.next()), std::string(1000, 'x'));
  EXPECT_FALSE(r.next());
}

TEST_F(TFRecordReaderTest, MatchesTensorFlowsBytes) {
  // The file TensorFlow's TFRecordWriter writes for the single record "abc".
  const std::string path = write_records("tf.tfrecord", {"abc"});
  const Bytes expected = {3, 0, 0, 0, 0, 0, 0, 0, 0x6d, 0x05, 0x4a, 0xfa,
                          'a', 'b', 'c', 0x7f, 0xd1, 0x9b, 0x29};
  // Length CRC and data CRC are masked CRC-32C values; recompute them rather than trust the
  // writer alone.
  Bytes got = read_bytes(path);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(Bytes(got.begin(), got.begin() + 8), Bytes(expected.begin(), expected.begin() + 8));
}

TEST_F(TFRecordReaderTest, TruncatedRecordNamesFileAndOffset) {
  const std::string path = write_records("t.tfrecord", {"first", "second record"});
  Bytes bytes = read_bytes(path);
  bytes.resize(bytes.size() - 6);
  const std::string cut = dir_.write("cut.tfrecord", bytes);
  TFRecordReader r(cut);
  EXPECT_EQ(tensor_string(*r.next()), "first");
  KILN_EXPECT_ERROR(r.next(), DataError, cut + ": record at byte offset 21: truncated");
  Bytes header_only(bytes.begin(), bytes.begin() + 25);
  TFRecordReader h(dir_.write("h.tfrecord", header_only));
  h.next();
  KILN_EXPECT_ERROR(h.next(), DataError, "record at byte offset 21: truncated: 4 of the 12 header bytes");
}

// A length of 2^64 - 1 with a valid length CRC: length + 4 wraps around to 3.
TEST_F(TFRecordReaderTest, AHugeLengthWithAValidCrcIsTruncationNotAShapeError) {
  Bytes b(8, 0xff);
  const uint32_t crc = crc32c_mask(crc32c(b.data(), 8));
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<unsigned char>(crc >> (8 * i)));
  b.insert(b.end(), {'a', 'b', 'c', 0, 0, 0, 0});
  const std::string path = dir_.write("huge.tfrecord", b);
  TFRecordReader r(path);
  KILN_EXPECT_ERROR(r.next(), DataError,
                    path + ": record at byte offset 0: truncated: the record promises 18446744073709551615 data bytes");
}

TEST_F(TFRecordReaderTest, BadCrcNamesFileAndOffset) {
  const std::string path = write_records("c.tfrecord", {"first", "second"});
  Bytes data_bad = read_bytes(path);
  data_bad[21 + 12 + 2] ^= 0x01;  // a bit of "second"
  const std::string bad = dir_.write("bad.tfrecord", data_bad);
  TFRecordReader r(bad);
  r.next();
  KILN_EXPECT_ERROR(r.next(), DataError, bad + ": record at byte offset 21: the data's CRC does not match");
  Bytes length_bad = read_bytes(path);
  length_bad[0] ^= 0x01;
  TFRecordReader l(dir_.write("len.tfrecord", length_bad));
  KILN_EXPECT_ERROR(l.next(), DataError, "record at byte offset 0: the length's CRC does not match");
}

TEST_F(TFRecordReaderTest, DatasetReadsFilesInOrderAndRestoresByOffset) {
  const std::string a = write_records("a.tfrecord", {"a0", "a1", "a2"});
  const std::string b = write_records("b.tfrecord", {"b0", "b1"});
  Dataset d = tfrecord_dataset({a, b});
  Iterator it = d.iterator();
  EXPECT_EQ(tensor_string((*it.next())[0]), "a0");
  EXPECT_EQ(tensor_string((*it.next())[0]), "a1");
  std::vector<uint8_t> state = it.save();
  Iterator resumed = d.iterator();
  resumed.restore(state);
  std::vector<std::string> rest;
  while (auto e = resumed.next()) rest.push_back(tensor_string((*e)[0]));
  EXPECT_EQ(rest, (std::vector<std::string>{"a2", "b0", "b1"}));
}

TEST_F(TFRecordReaderTest, ListFilesInterleaveAndParseExamples) {
  for (int f = 0; f < 3; ++f) {
    TFRecordWriter w(dir_.file("part-" + std::to_string(f) + ".tfrecord"));
    for (int i = 0; i < 4; ++i) {
      Example ex;
      ex["x"] = Feature{.kind = Feature::Kind::kFloat, .float_list = {float(f), float(i)}};
      ex["label"] = Feature{.kind = Feature::Kind::kInt64, .int64_list = {f * 10 + i}};
      w.write(serialize_example(ex));
    }
    w.close();
  }
  std::vector<FixedLenFeature> spec = {{"x", DType::kF32, {2}}, {"label", DType::kI64, {}}};
  Dataset d = Dataset::list_files(dir_.file("part-*.tfrecord"), /*shuffle=*/false)
                  .interleave([](const Element& f) { return tfrecord_dataset({tensor_string(f[0])}); },
                              /*cycle_length=*/3, /*block_length=*/1, /*num_parallel_calls=*/2)
                  .map([spec](Element e) { return parse_single_example(e[0], spec); }, 2);
  std::vector<int64_t> labels;
  Iterator it = d.iterator();
  while (auto e = it.next()) {
    EXPECT_EQ((*e)[0].shape(), Shape(DType::kF32, {2}));
    labels.push_back((*e)[1].to_vector<int64_t>()[0]);
  }
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 10, 20, 1, 11, 21, 2, 12, 22, 3, 13, 23}));
}

// A record that is not a valid Example, or lacks a feature, is named by file and record index,
// also after a pipeline's map ran the parse (the record keeps its source through the stages).
TEST_F(TFRecordReaderTest, ParseErrorsNameTheFileAndRecordIndex) {
  Example good;
  good["label"] = Feature{.kind = Feature::Kind::kInt64, .int64_list = {1}};
  Example unlabeled;
  unlabeled["x"] = Feature{.kind = Feature::Kind::kFloat, .float_list = {1.f}};
  const std::string path = write_records("mixed.tfrecord", {serialize_example(good), serialize_example(good),
                                                            std::string("\x0a\xff", 2), serialize_example(unlabeled)});
  TFRecordReader r(path);
  r.next();
  r.next();
  const HostTensor malformed = *r.next(), missing = *r.next();
  KILN_EXPECT_ERROR(parse_example(malformed), DataError, path + ", record 2 (byte offset ");
  KILN_EXPECT_ERROR(parse_example(malformed), DataError, "malformed tf.train.Example");
  const std::vector<FixedLenFeature> spec = {{"label", DType::kI64, {}}};
  KILN_EXPECT_ERROR(parse_single_example(missing, spec), DataError,
                    "[parse_single_example] " + path + ", record 3 (byte offset ");
  KILN_EXPECT_ERROR(parse_single_example(missing, spec), DataError, "feature 'label' is missing");

  Dataset d = tfrecord_dataset({path}).map([spec](Element e) { return parse_single_example(e[0], spec); });
  Iterator it = d.iterator();
  it.next();
  it.next();
  KILN_EXPECT_ERROR(it.next(), DataError, path + ", record 2 (byte offset ");
}

}  // namespace
}  // namespace kiln::data
