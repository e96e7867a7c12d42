// `kiln`: the command-line tool. `kiln devices` prints what this host offers and the strategy
// distribute::auto_detect() would pick; `kiln mnist [dir]` loads MNIST and prints its summary;
// `kiln summary`, `inspect`, `eval` and `convert` work on a saved model; `kiln report` turns a
// TensorBoard log directory into one HTML page. `kiln <command> --help` says more.
#include <array>
#include <exception>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "kiln/core/error.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/distribute/cluster_resolver.h"
#include "tools/kiln/args.h"
#include "tools/kiln/model_commands.h"
#include "tools/kiln/report_command.h"

namespace {

using kiln::cli::Args;
using kiln::cli::ArgSpec;

// The cluster resolver's report: devices, MPI, GPUs, and the strategy auto_detect() picks.
int print_devices(const Args&) {
  kiln::distribute::auto_detect(std::cout);
  return 0;
}

int print_mnist(const Args& args) {
  auto [train, test] =
      kiln::datasets::mnist::load_data(args.positional.empty() ? kiln::datasets::mnist::default_dir() : args.positional[0]);
  for (const auto& [label, split] : {std::pair{"train", &train}, std::pair{"test", &test}}) {
    std::array<int64_t, 10> counts{};
    for (uint8_t y : split->y.data<uint8_t>()) ++counts[y];
    std::cout << "MNIST " << label << ": x " << split->x.shape() << ", y " << split->y.shape()
              << ", label counts";
    for (int64_t c : counts) std::cout << ' ' << c;
    std::cout << '\n';
  }
  return 0;
}

struct Command {
  std::string usage;  // one line
  std::string help;   // a paragraph
  ArgSpec spec;
  std::function<int(const Args&)> run;
};

const std::map<std::string, Command> kCommands = {
    {"devices",
     {"kiln devices", "Prints this host's devices, MPI and GPUs, and the strategy distribute::auto_detect() picks.",
      {}, print_devices}},
    {"mnist",
     {"kiln mnist [dir]", "Loads MNIST (from dir, else KILN_DATA or ~/.cache/kiln) and prints its shapes and label counts.",
      {.max_positional = 1}, print_mnist}},
    {"summary",
     {"kiln summary <model.h5 | model.keras | model_dir>",
      "Prints the model's summary table, as model.summary() prints it, for a Keras 2 .h5, a Keras 3\n"
      ".keras archive or a Kiln model directory.",
      {.min_positional = 1, .max_positional = 1},
      [](const Args& a) { return kiln::cli::summary(a.positional[0], std::cout); }}},
    {"inspect",
     {"kiln inspect <model.h5 | model.keras | model_dir>",
      "Prints the file's format and the Keras version that wrote it, each layer's class and weights\n"
      "(name and shape), and the optimizer's class, config and state variables.",
      {.min_positional = 1, .max_positional = 1},
      [](const Args& a) { return kiln::cli::inspect(a.positional[0], std::cout); }}},
    {"eval",
     {"kiln eval <model> (--mnist | --x x.npy --y y.npy | --image-folder dir) [--sample-weight w.npy] [--batch-size 32]",
      "Runs model.evaluate with the saved compile arguments and prints the loss and each compiled\n"
      "metric (for several outputs each output's loss and metrics too), one 'name: value' line each,\n"
      "then the same as one JSON object on the last line (NaN or infinity there as null).\n"
      "  --mnist            the MNIST test split (from KILN_DATA or ~/.cache/kiln/mnist; fetch it with\n"
      "                     scripts/fetch_mnist.sh): pixels / 255 in the model's input shape (784\n"
      "                     values per example), integer labels (for sparse losses)\n"
      "  --x x.npy --y y.npy  inputs and targets as numpy.save wrote them, used as they are; a model\n"
      "                     with several outputs takes --y <output>=y.npy once per output (or one\n"
      "                     --y file per output, in the order of the outputs)\n"
      "  --sample-weight w.npy  sample weights (one per row) for every output, or\n"
      "                     --sample-weight <output>=w.npy once per output (evaluate's sample_weight)\n"
      "  --image-folder dir  image files in class folders, read by image_dataset_from_directory at the\n"
      "                     model's input size and channels (1 grayscale, 3 rgb, 4 rgba), labels from\n"
      "                     the folder names; with --validation-split f --seed n (as given to training)\n"
      "                     the validation subset, or --subset training; --label-mode int (default),\n"
      "                     categorical or binary; --interpolation bilinear (default) or another method\n"
      "  --batch-size n     evaluate's batch size (default 32)",
      {.value_options = {"--x", "--y", "--sample-weight", "--batch-size", "--image-folder", "--validation-split",
                         "--seed", "--subset", "--label-mode", "--interpolation"},
       .repeatable = {"--y", "--sample-weight"},
       .flags = {"--mnist"}, .min_positional = 1, .max_positional = 1},
      [](const Args& a) { return kiln::cli::eval(a, std::cout); }}},
    {"convert",
     {"kiln convert <in> <out> [--config <model>]",
      "Writes the model at <in> in the format <out>'s path names: .h5 (Keras 2 HDF5), .keras (Keras 3\n"
      "archive), .safetensors (the weights alone, by variable name), any other path a Kiln model\n"
      "directory. Weights, compile arguments and optimizer state carry over, so predictions are\n"
      "bitwise the same. A .safetensors <in> holds no architecture: --config names a model with the\n"
      "same architecture (.h5, .keras, model directory, or a model.to_json() .json file), whose\n"
      "weights are replaced; the result is not compiled.",
      {.value_options = {"--config"}, .min_positional = 2, .max_positional = 2},
      [](const Args& a) { return kiln::cli::convert(a, std::cout); }}},
    {"report",
     {"kiln report <log_dir> [-o report.html] [--trace trace.json]",
      "Writes one self-contained HTML page (no scripts, nothing fetched) from a TensorBoard log\n"
      "directory: SVG charts of every epoch_* scalar (train and validation) and of the batch_*\n"
      "scalars, and, when the Profiler or TensorBoard(profile_batch) traced steps into\n"
      "<log_dir>/plugins/profile/, the step time and input wait per traced step and the slowest\n"
      "kernels. -o defaults to <log_dir>/report.html. --trace takes another Chrome trace instead of\n"
      "the newest under plugins/profile (a KILN_PROFILE=fit.json trace of a whole fit).",
      {.value_options = {"-o", "--trace"}, .min_positional = 1, .max_positional = 1},
      [](const Args& a) { return kiln::cli::report(a, std::cout); }}},
};

int usage() {
  std::cerr << "usage:\n";
  for (const auto& [name, command] : kCommands) std::cerr << "  " << command.usage << "\n";
  std::cerr << "kiln <command> --help describes one.\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage();
    return 0;
  }
  auto it = kCommands.find(name);
  if (it == kCommands.end()) {
    std::cerr << "kiln: unknown command '" << name << "'.\n";
    return usage();
  }
  const Command& command = it->second;
  const std::vector<std::string> rest(argv + 2, argv + argc);
  for (const std::string& a : rest)
    if (a == "--help" || a == "-h") {
      std::cout << "usage: " << command.usage << "\n\n" << command.help << "\n";
      return 0;
    }
  try {
    return command.run(kiln::cli::parse_args(name, rest, command.spec));
  } catch (const kiln::Error& e) {
    std::cerr << "kiln " << name << ": " << e.kind() << ": " << e.what() << '\n';
    return 1;
  } catch (const std::exception& e) {  // from the standard library (a filesystem error, ...)
    std::cerr << "kiln " << name << ": " << e.what() << '\n';
    return 1;
  }
}
