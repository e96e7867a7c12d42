// CSV files (RFC 4180): comma-separated fields, optional header row, double-quoted fields that
// may hold commas, newlines and "" for a quote. Each column is parsed to a declared dtype.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"

namespace kiln::data {

/// One column of a CSV file.
struct CsvColumn {
  std::string name;                   // checked against the header row when both are present
  DType dtype = DType::kF32;          // f32 f64 i32 i64 u8 bool
  std::optional<double> default_value;  // used for empty fields; without it they are errors
};

/// How to read a CSV file.
struct CsvOptions {
  std::vector<CsvColumn> columns;  // one per field, in file order
  bool header = true;              // the first record names the columns
  char delimiter = ',';
};

/// Reads the whole file into one 1-D tensor per column ([rows] of the column's dtype), ready
/// for Dataset::from_tensor_slices. Booleans accept true/false/1/0. Throws DataError naming
/// the file and line for a ragged row, an unparsable or empty field, an unterminated quote, or
/// a header that disagrees with the column names.
std::vector<HostTensor> read_csv(const std::string& path, const CsvOptions& options);

}  // namespace kiln::data
