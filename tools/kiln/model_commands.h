// `kiln summary` and `kiln inspect`: what a saved model holds, without writing a program.
#pragma once

#include <iosfwd>
#include <string>

namespace kiln::cli {

/// `kiln summary <model>`: model.summary()'s table for a .h5, .keras or model directory.
int summary(const std::string& path, std::ostream& out);
/// `kiln inspect <model>`: format, the Keras version that wrote it, each layer's class and
/// weights (name, shape), and the optimizer with its state variables.
int inspect(const std::string& path, std::ostream& out);

}  // namespace kiln::cli
