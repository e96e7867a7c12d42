// `kiln summary`, `kiln inspect`, `kiln eval` and `kiln convert`: what a saved model holds, how
// well it does, and the same model in another format, without writing a program.
#pragma once

#include <iosfwd>
#include <string>
#include <utility>

#include "tools/kiln/args.h"

namespace kiln::cli {

/// The format, as load_model decides it, and the Keras version its writer recorded ("-" for
/// a model directory, "unknown" when the file does not say).
std::pair<std::string, std::string> format_and_version(const std::string& path);
/// `kiln summary <model>`: model.summary()'s table for a .h5, .keras or model directory.
int summary(const std::string& path, std::ostream& out);
/// `kiln inspect <model>`: format, the Keras version that wrote it, each layer's class and
/// weights (name, shape), nested models' layers indented, and the optimizer with its state
/// variables (inspect_command.cpp). A .h5 or .keras file Kiln cannot load is shown from its
/// config and weight groups, after the reason it does not load.
int inspect(const std::string& path, std::ostream& out);
/// `kiln eval <model> (--mnist | --x x.npy --y y.npy) [--batch-size n]`: model.evaluate's loss
/// and compiled metrics, one `name: value` line each, then the same as one JSON object.
int eval(const Args& args, std::ostream& out);
/// `kiln convert <in> <out> [--config <model>]`: the model in the format of `out`'s path (.h5,
/// .keras, a directory, or .safetensors for the weights alone); a .safetensors `in` takes its
/// architecture from --config.
int convert(const Args& args, std::ostream& out);

}  // namespace kiln::cli
