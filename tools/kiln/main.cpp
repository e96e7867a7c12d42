// `kiln`: the command-line tool. `kiln devices` prints what this host offers and the strategy
// distribute::auto_detect() would pick; `kiln mnist [dir]` loads MNIST and prints its summary;
// `kiln summary` and `kiln inspect` describe a saved model. `kiln <command> --help` says more.
#include <array>
#include <iostream>
#include <map>
#include <string>

#include "kiln/core/error.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/distribute/cluster_resolver.h"
#include "tools/kiln/model_commands.h"

namespace {

// The cluster resolver's report: devices, MPI, GPUs, and the strategy auto_detect() picks.
int print_devices() {
  kiln::distribute::auto_detect(std::cout);
  return 0;
}

int print_mnist(const std::string& dir) {
  auto [train, test] = kiln::datasets::mnist::load_data(dir);
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

// One line of usage and a paragraph of help per command.
const std::map<std::string, std::pair<std::string, std::string>> kCommands = {
    {"devices", {"kiln devices", "Prints this host's devices, MPI and GPUs, and the strategy distribute::auto_detect() picks."}},
    {"mnist", {"kiln mnist [dir]", "Loads MNIST (from dir, else KILN_DATA or ~/.cache/kiln) and prints its shapes and label counts."}},
    {"summary",
     {"kiln summary <model.h5 | model.keras | model_dir>",
      "Prints the model's summary table, as model.summary() prints it, for a Keras 2 .h5, a Keras 3\n"
      ".keras archive or a Kiln model directory."}},
    {"inspect",
     {"kiln inspect <model.h5 | model.keras | model_dir>",
      "Prints the file's format and the Keras version that wrote it, each layer's class and weights\n"
      "(name and shape), and the optimizer's class, config and state variables."}},
};

int usage() {
  std::cerr << "usage:\n";
  for (const auto& [name, text] : kCommands) std::cerr << "  " << text.first << "\n";
  std::cerr << "kiln <command> --help describes one.\n";
  return 2;
}

int help(const std::string& command) {
  const auto& [line, text] = kCommands.at(command);
  std::cout << "usage: " << line << "\n\n" << text << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    usage();
    return 0;
  }
  if (!kCommands.contains(command)) {
    std::cerr << "kiln: unknown command '" << command << "'.\n";
    return usage();
  }
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) return help(command);
  try {
    if (command == "devices") return print_devices();
    if (command == "mnist")
      return print_mnist(argc > 2 ? argv[2] : kiln::datasets::mnist::default_dir());
    if (argc != 3) {
      std::cerr << "kiln " << command << ": expected one model path.\n";
      return usage();
    }
    if (command == "summary") return kiln::cli::summary(argv[2], std::cout);
    if (command == "inspect") return kiln::cli::inspect(argv[2], std::cout);
  } catch (const kiln::Error& e) {
    std::cerr << "kiln " << command << ": " << e.kind() << ": " << e.what() << '\n';
    return 1;
  }
  return usage();
}
