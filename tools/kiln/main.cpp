// `kiln`: the command-line tool. `kiln devices` prints what this host offers and the strategy
// distribute::auto_detect() would pick;
// `kiln mnist [dir]` loads MNIST and prints its summary.
#include <array>
#include <iostream>
#include <string>

#include "kiln/core/error.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/distribute/cluster_resolver.h"

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

int usage() {
  std::cerr << "usage: kiln devices | kiln mnist [dir]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string command = argv[1];
  try {
    if (command == "devices") return print_devices();
    if (command == "mnist")
      return print_mnist(argc > 2 ? argv[2] : kiln::datasets::mnist::default_dir());
  } catch (const kiln::Error& e) {
    std::cerr << "kiln " << command << ": " << e.kind() << ": " << e.what() << '\n';
    return 1;
  }
  return usage();
}
