// kiln::datasets::mnist::load_data, as keras.datasets.mnist.load_data() (seed S7), reading the
// real IDX files that scripts/fetch_mnist.sh places (nothing is downloaded at run time).
#pragma once

#include <string>

#include "kiln/core/host_tensor.h"

namespace kiln::datasets::mnist {

/// Images u8[N,28,28] and labels u8[N].
struct Split {
  HostTensor x;
  HostTensor y;
};

/// The two splits, bindable as in Keras: `auto [train, test] = load_data();`.
struct Data {
  Split train;  // 60000 examples
  Split test;   // 10000 examples
};

/// `${KILN_DATA:-$HOME/.cache/kiln}/mnist`.
std::string default_dir();

/// Loads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
/// t10k-labels-idx1-ubyte from `dir` (each may also be gzipped, with a .gz suffix).
/// Throws DataError naming the file and the fetch command when one is missing, and naming the
/// file and the problem when one is malformed or images and labels disagree in count.
Data load_data(const std::string& dir = default_dir());

}  // namespace kiln::datasets::mnist
