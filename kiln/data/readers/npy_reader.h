// NPY files (numpy.save): magic "\x93NUMPY", version, a header that is a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }, then the C-order elements.
#pragma once

#include <string>

#include "kiln/core/host_tensor.h"

namespace kiln::data {

/// Reads a version 1, 2 or 3 NPY file. Element types (little-endian or byte-sized): f4 -> f32,
/// f8 -> f64, i4 -> i32, i8 -> i64, u1 -> u8, b1 -> bool. Throws DataError naming the file and
/// the byte offset for a bad magic or header, big-endian or Fortran-order data, an unsupported
/// dtype, or data shorter or longer than the shape says.
HostTensor read_npy(const std::string& path);

/// Writes `t` as a version 1 NPY file numpy.load reads back. Throws IOError if the file cannot
/// be written, DTypeError for dtypes NPY readers here do not take (bf16, f16).
void write_npy(const std::string& path, const HostTensor& t);

}  // namespace kiln::data
