// Model::summary: the Keras (TF 2.x) table, 65 columns with fields at 29 / 55 / 65.
#include <sstream>

#include "kiln/keras/models/model.h"

namespace kiln::keras {
namespace {

constexpr int kLineLength = 65;
constexpr int kPositions[] = {29, 55, 65};

std::string row(const std::string (&fields)[3]) {
  std::string line;
  for (int i = 0; i < 3; ++i) {
    if (i > 0) line = line.substr(0, line.size() - 1) + " ";  // Keras keeps one space between
    line += fields[i];
    line = line.substr(0, kPositions[i]);
    line += std::string(static_cast<size_t>(kPositions[i]) - line.size(), ' ');
  }
  return line;
}

std::string with_commas(int64_t n) {  // 101770 -> "101,770"
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string shape_text(const Dims& dims) {
  if (dims.empty()) return "multiple";
  std::string out = "(None";
  for (int64_t d : dims) out += ", " + std::to_string(d);
  return out + ")";
}

}  // namespace

std::string Model::summary_text() const {
  std::ostringstream out;
  const std::vector<Dims> shapes = layer_output_shapes();
  out << "Model: \"" << name_ << "\"\n" << std::string(kLineLength, '_') << "\n";
  out << row({"Layer (type)", "Output Shape", "Param #"}) << "\n" << std::string(kLineLength, '=') << "\n";
  int64_t trainable = 0, total = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = *layers_[i];
    out << row({l.name() + " (" + l.class_name() + ")", i < shapes.size() ? shape_text(shapes[i]) : "multiple",
                std::to_string(l.count_params())})
        << "\n"
        << std::string(kLineLength, i + 1 < layers_.size() ? '_' : '=') << "\n";
    total += l.count_params();
    for (const Variable& w : l.trainable_weights()) trainable += w.shape().num_elements();
  }
  out << "Total params: " << with_commas(total) << "\n"
      << "Trainable params: " << with_commas(trainable) << "\n"
      << "Non-trainable params: " << with_commas(total - trainable) << "\n"
      << std::string(kLineLength, '_') << "\n";
  return out.str();
}

void Model::summary(std::ostream& out) const { out << summary_text(); }

}  // namespace kiln::keras
