// CSV: a record splitter that follows RFC 4180 quoting and counts lines (a quoted field may
// span lines), then per-column parsing with std::from_chars.
#include "kiln/data/readers/csv_reader.h"

#include <charconv>
#include <fstream>
#include <iterator>
#include <limits>

#include "kiln/core/check.h"
#include "kiln/core/dtype_dispatch.h"

namespace kiln::data {
namespace {

struct Record {
  std::vector<std::string> fields;
  int64_t line = 0;  // 1-based line where the record starts
};

class RecordSplitter {
 public:
  RecordSplitter(const std::string& path, std::string text, char delimiter)
      : path_(path), text_(std::move(text)), delimiter_(delimiter) {}

  /// The next record, or false at the end of the text.
  bool next(Record& record) {
    record.fields.clear();
    if (pos_ >= text_.size()) return false;
    record.line = line_;
    std::string field;
    while (true) {
      if (pos_ < text_.size() && text_[pos_] == '"' && field.empty()) {
        read_quoted(field, record.line);
        if (pos_ < text_.size() && text_[pos_] != delimiter_ && text_[pos_] != '\n' && text_[pos_] != '\r')
          KILN_THROW(DataError, "[read_csv] ", path_, ":", line_, ": unexpected character '",
                     text_[pos_], "' after a closing quote. Hint: quotes inside a quoted field are "
                     "written twice (\"\").");
      }
      while (pos_ < text_.size() && text_[pos_] != delimiter_ && text_[pos_] != '\n' && text_[pos_] != '\r')
        field += text_[pos_++];
      record.fields.push_back(std::move(field));
      field.clear();
      if (pos_ >= text_.size()) return true;
      const char c = text_[pos_++];
      if (c == delimiter_) continue;
      if (c == '\r' && pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
      ++line_;
      return true;
    }
  }

 private:
  void read_quoted(std::string& field, int64_t start_line) {
    ++pos_;  // opening quote
    while (true) {
      if (pos_ >= text_.size())
        KILN_THROW(DataError, "[read_csv] ", path_, ":", start_line,
                   ": a quoted field is never closed. Hint: check for a stray '\"'.");
      const char c = text_[pos_++];
      if (c == '"') {
        if (pos_ < text_.size() && text_[pos_] == '"') {
          field += '"';
          ++pos_;
          continue;
        }
        return;
      }
      if (c == '\n') ++line_;
      field += c;
    }
  }

  const std::string& path_;
  std::string text_;
  char delimiter_;
  size_t pos_ = 0;
  int64_t line_ = 1;
};

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Parses `text` as the column's dtype and stores it at `row` of `dst`.
void parse_field(const std::string& text, const CsvColumn& col, const std::string& where,
                 HostTensor& dst, int64_t row) {
  const std::string s = trimmed(text);
  double value = 0;
  if (s.empty()) {
    if (!col.default_value)
      KILN_THROW(DataError, "[read_csv] ", where, ": column '", col.name,
                 "' is empty. Hint: give the column a default_value.");
    value = *col.default_value;
  } else if (col.dtype == DType::kBool) {
    if (s == "true" || s == "True" || s == "1") value = 1;
    else if (s == "false" || s == "False" || s == "0") value = 0;
    else KILN_THROW(DataError, "[read_csv] ", where, ": column '", col.name, "': cannot parse \"", s, "\" as bool.");
  } else {
    const char* end = s.data() + s.size();
    std::from_chars_result r{};
    if (is_floating(col.dtype)) {
      r = std::from_chars(s.data(), end, value);
    } else {
      int64_t i = 0;
      r = std::from_chars(s.data(), end, i);
      value = static_cast<double>(i);
      if (r.ec == std::errc() && r.ptr == end) {
        visit_dtype(col.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_integral_v<T>) {
            if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
                i > static_cast<int64_t>(std::numeric_limits<T>::max()))
              KILN_THROW(DataError, "[read_csv] ", where, ": column '", col.name, "': ", s,
                         " is out of range for ", col.dtype, ".");
            dst.data<T>()[static_cast<size_t>(row)] = static_cast<T>(i);
          }
        });
        return;
      }
    }
    if (r.ec != std::errc() || r.ptr != end)
      KILN_THROW(DataError, "[read_csv] ", where, ": column '", col.name, "': cannot parse \"", s,
                 "\" as ", col.dtype, ".");
  }
  visit_dtype(col.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    static_cast<T*>(dst.raw_data())[row] = from_double<T>(value);
  });
}

}  // namespace

std::vector<HostTensor> read_csv(const std::string& path, const CsvOptions& options) {
  if (options.columns.empty())
    KILN_THROW(ValueError, "[read_csv] ", path, ": options.columns is empty. Hint: declare one "
               "CsvColumn{name, dtype} per field.");
  for (const CsvColumn& c : options.columns)
    if (c.dtype == DType::kBF16 || c.dtype == DType::kF16)
      KILN_THROW(DTypeError, "[read_csv] column '", c.name, "' has dtype ", c.dtype,
                 "; CSV columns are f32 f64 i32 i64 u8 or bool. Hint: cast after reading.");
  std::ifstream in(path, std::ios::binary);
  if (!in) KILN_THROW(DataError, "[read_csv] ", path, ": cannot open the file (missing or unreadable).");
  RecordSplitter splitter(path, std::string(std::istreambuf_iterator<char>(in), {}), options.delimiter);

  const size_t ncols = options.columns.size();
  Record record;
  if (options.header && !splitter.next(record))
    KILN_THROW(DataError, "[read_csv] ", path, ": the file is empty, but options.header says its first line names "
               "the columns. Hint: an empty table still has its header line; set header = false for a file "
               "without one.");
  if (options.header) {
    if (record.fields.size() != ncols)
      KILN_THROW(DataError, "[read_csv] ", path, ":", record.line, ": the header has ",
                 record.fields.size(), " fields, expected ", ncols, " columns.");
    for (size_t c = 0; c < ncols; ++c) {
      const std::string name = trimmed(record.fields[c]);
      if (!options.columns[c].name.empty() && name != options.columns[c].name)
        KILN_THROW(DataError, "[read_csv] ", path, ":", record.line, ": header field ", c, " is '",
                   name, "', expected '", options.columns[c].name, "'.");
    }
  }
  std::vector<Record> rows;
  while (splitter.next(record)) {
    if (record.fields.size() == 1 && record.fields[0].empty()) continue;  // blank line
    if (record.fields.size() != ncols)
      KILN_THROW(DataError, "[read_csv] ", path, ":", record.line, ": ragged row: expected ", ncols,
                 " fields, found ", record.fields.size(), ".");
    rows.push_back(std::move(record));
    record = Record{};
  }
  std::vector<HostTensor> columns;
  for (const CsvColumn& c : options.columns)
    columns.emplace_back(Shape(c.dtype, {static_cast<int64_t>(rows.size())}));
  for (size_t r = 0; r < rows.size(); ++r) {
    const std::string where = str_cat(path, ":", rows[r].line);
    for (size_t c = 0; c < ncols; ++c)
      parse_field(rows[r].fields[c], options.columns[c], where, columns[c], static_cast<int64_t>(r));
  }
  return columns;
}

}  // namespace kiln::data
