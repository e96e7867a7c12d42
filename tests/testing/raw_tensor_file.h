// The fixture generators' tensor files (tests/fixtures/keras/*.py): raw little-endian, C order,
// no header, the shape told by the caller.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"

namespace kiln::testing {

/// The tensor of `dims` (f32 unless told) in the raw file at `path`; a test failure when the
/// file is shorter.
inline HostTensor read_raw_tensor(const std::string& path, const std::vector<int64_t>& dims, DType dtype = DType::kF32) {
  HostTensor t(Shape(dtype, dims));
  std::ifstream in(path, std::ios::binary);
  in.read(static_cast<char*>(t.raw_data()), t.byte_size());
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return t;
}

}  // namespace kiln::testing
