// Model::summary: the Keras (TF 2.x) table, 65 columns with fields at 29 / 55 / 65, or 98
// columns at 32 / 53 / 65 / 98 with "Connected to" for non-sequential functional models.
#include <sstream>
#include <vector>

#include "kiln/keras/models/model.h"

namespace kiln::keras {
namespace {

// Keras print_row: each field cut or padded to end at its position.
std::string row(const std::vector<std::string>& fields, const std::vector<int>& positions) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line = line.substr(0, line.size() - 1) + " ";  // Keras keeps one space between
    line += fields[i];
    line = line.substr(0, static_cast<size_t>(positions[i]));
    line += std::string(static_cast<size_t>(positions[i]) - line.size(), ' ');
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
  for (int64_t d : dims) out += ", " + (d == kNoneDim ? std::string("None") : std::to_string(d));
  return out + ")";
}

}  // namespace

std::vector<Model::SummaryRow> Model::summary_rows() const {
  const std::vector<Dims> shapes = layer_output_shapes();
  std::vector<SummaryRow> rows;
  for (size_t i = 0; i < layers_.size(); ++i)
    rows.push_back({.layer = layers_[i].get(), .output_shape = i < shapes.size() ? shapes[i] : Dims{}});
  return rows;
}

std::string Model::summary_text() const {
  const bool connections = summary_shows_connections();
  const int line_length = connections ? 98 : 65;
  const std::vector<int> positions = connections ? std::vector<int>{32, 53, 65, 98} : std::vector<int>{29, 55, 65};
  std::vector<std::string> header = {"Layer (type)", "Output Shape", "Param #"};
  if (connections) header.push_back("Connected to");
  std::ostringstream out;
  out << "Model: \"" << name_ << "\"\n" << std::string(line_length, '_') << "\n";
  out << row(header, positions) << "\n" << std::string(line_length, '=') << "\n";
  int64_t trainable = 0, total = 0;
  const std::vector<SummaryRow> rows = summary_rows();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Layer& l = *rows[i].layer;
    const std::string shape = shape_text(rows[i].output_shape);
    std::vector<std::string> fields = {l.name() + " (" + l.class_name() + ")",
                                       rows[i].list_shape ? "[" + shape + "]" : shape, std::to_string(l.count_params())};
    if (connections) fields.push_back(rows[i].connected_to.empty() ? "" : rows[i].connected_to[0]);
    out << row(fields, positions) << "\n";
    for (size_t c = 1; connections && c < rows[i].connected_to.size(); ++c)
      out << row({"", "", "", rows[i].connected_to[c]}, positions) << "\n";
    out << std::string(static_cast<size_t>(line_length), i + 1 < rows.size() ? '_' : '=') << "\n";
    total += l.count_params();
    for (const Variable& w : l.trainable_weights()) trainable += w.shape().num_elements();
  }
  out << "Total params: " << with_commas(total) << "\n"
      << "Trainable params: " << with_commas(trainable) << "\n"
      << "Non-trainable params: " << with_commas(total - trainable) << "\n"
      << std::string(static_cast<size_t>(line_length), '_') << "\n";
  return out.str();
}

void Model::summary(std::ostream& out) const { out << summary_text(); }

}  // namespace kiln::keras
