// CSV: typed columns, header check, RFC 4180 quoting, defaults, and errors naming file:line.
#include "kiln/data/readers/csv_reader.h"

#include <gtest/gtest.h>

#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::data {
namespace {

class CsvReaderTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    return dir_.write(name, std::vector<unsigned char>(text.begin(), text.end()));
  }
  kiln::testing::TempDir dir_;
  CsvOptions options_{.columns = {{"x", DType::kF32}, {"n", DType::kI64}, {"ok", DType::kBool}}};
};

TEST_F(CsvReaderTest, ReadsTypedColumns) {
  auto path = write("a.csv", "x,n,ok\n1.5,3,true\r\n-2,-7,0\n\n");
  std::vector<HostTensor> cols = read_csv(path, options_);
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[0].to_vector<float>(), (std::vector<float>{1.5f, -2}));
  EXPECT_EQ(cols[1].to_vector<int64_t>(), (std::vector<int64_t>{3, -7}));
  EXPECT_EQ(cols[2].shape(), Shape(DType::kBool, {2}));
  EXPECT_EQ(cols[2].to_vector<int32_t>(), (std::vector<int32_t>{1, 0}));
}

TEST_F(CsvReaderTest, HonoursQuotingAcrossLines) {
  CsvOptions opts{.columns = {{"id", DType::kI32}, {"note", DType::kI32}, {"v", DType::kF64}}};
  auto path = write("q.csv", "id,note,v\n1,\"2\",0.5\n\"3\",\"4\",\"1e3\"\n");
  std::vector<HostTensor> cols = read_csv(path, opts);
  EXPECT_EQ(cols[0].to_vector<int32_t>(), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(cols[2].to_vector<double>(), (std::vector<double>{0.5, 1000}));
  // A quoted header field with a comma, a doubled quote and a newline still counts as one
  // field, and the lines after it keep their numbers.
  CsvOptions two{.columns = {{"", DType::kI32}, {"", DType::kI32}}};
  auto multi = write("m.csv", "\"a,\"\"b\"\"\nc\",d\n1,2\n3\n");
  KILN_EXPECT_ERROR(read_csv(multi, two), DataError, multi + ":4: ragged row: expected 2 fields, found 1");
}

TEST_F(CsvReaderTest, RaggedRowNamesFileAndLine) {
  auto path = write("r.csv", "x,n,ok\n1,2,true\n3,4\n");
  KILN_EXPECT_ERROR(read_csv(path, options_), DataError, path + ":3: ragged row: expected 3 fields, found 2");
}

TEST_F(CsvReaderTest, BadFieldNamesFileLineAndColumn) {
  auto path = write("b.csv", "x,n,ok\n1,2,true\n1,two,true\n");
  KILN_EXPECT_ERROR(read_csv(path, options_), DataError, path + ":3: column 'n': cannot parse \"two\" as i64");
  auto range = write("o.csv", "x,n,ok\n1,2,maybe\n");
  KILN_EXPECT_ERROR(read_csv(range, options_), DataError, "cannot parse \"maybe\" as bool");
  CsvOptions u8{.columns = {{"b", DType::kU8}}};
  auto big = write("u.csv", "b\n300\n");
  KILN_EXPECT_ERROR(read_csv(big, u8), DataError, "300 is out of range for u8");
}

TEST_F(CsvReaderTest, EmptyFieldsUseDefaults) {
  CsvOptions opts{.columns = {{"x", DType::kF32, -1.0}, {"y", DType::kI32}}};
  auto path = write("d.csv", "x,y\n,5\n");
  EXPECT_EQ(read_csv(path, opts)[0].to_vector<float>(), (std::vector<float>{-1}));
  auto bad = write("e.csv", "x,y\n1,\n");
  KILN_EXPECT_ERROR(read_csv(bad, opts), DataError, bad + ":2: column 'y' is empty");
}

TEST_F(CsvReaderTest, HeaderMustMatchColumnNames) {
  auto path = write("h.csv", "x,count,ok\n1,2,true\n");
  KILN_EXPECT_ERROR(read_csv(path, options_), DataError, path + ":1: header field 1 is 'count', expected 'n'");
}

TEST_F(CsvReaderTest, AnEmptyFileWithAHeaderExpectedIsAnError) {
  auto empty = write("empty.csv", "");
  KILN_EXPECT_ERROR(read_csv(empty, options_), DataError, empty + ": the file is empty, but options.header says");
  auto header_only = write("header.csv", "x,n,ok\n");  // a table of no rows is fine
  EXPECT_EQ(read_csv(header_only, options_)[0].num_elements(), 0);
}

TEST_F(CsvReaderTest, UnterminatedQuoteNamesItsLine) {
  auto path = write("u.csv", "x,n,ok\n1,2,true\n\"3,4,true\n");
  KILN_EXPECT_ERROR(read_csv(path, options_), DataError, path + ":3: a quoted field is never closed");
}

}  // namespace
}  // namespace kiln::data
