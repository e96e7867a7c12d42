// TensorBoard: Keras 2.15's keras.callbacks.TensorBoard over io::EventFileWriter.
#include "kiln/keras/callbacks/tensor_board.h"

#include <filesystem>
#include <map>

#include "kiln/core/check.h"
#include "kiln/io/event_file_writer.h"
#include "kiln/ir/module.h"
#include "kiln/ir/printer.h"
#include "kiln/keras/callbacks/profiler.h"
#include "kiln/keras/models/model.h"
#include "kiln/runtime/executable.h"
#include "kiln/trace/function.h"

namespace kiln::keras {
namespace {

// NodeDef names must match [A-Za-z0-9.][A-Za-z0-9_>./]*; '/' nests a node under its layer.
std::string node_name_part(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/') ? c : '_';
  return out.empty() ? "_" : out;
}

// One node per instruction of the step's entry computation, named <layer>/<op>.<id> (the
// layer or call site that made it, when known), reading its operands.
std::vector<io::GraphNode> graph_nodes(const ir::Module& module) {
  std::map<const ir::Instruction*, std::string> names;
  for (const auto& inst : module.entry()->instructions()) {
    std::string name = str_cat(ir::opcode_name(inst->opcode()), ".", inst->id());
    if (!inst->source().empty()) name = node_name_part(inst->source()) + "/" + name;
    if (!std::isalnum(static_cast<unsigned char>(name[0])) && name[0] != '.') name = "n" + name;
    names[inst.get()] = name;
  }
  std::vector<io::GraphNode> nodes;
  for (const auto& inst : module.entry()->instructions()) {
    io::GraphNode node{.name = names.at(inst.get()), .op = std::string(ir::opcode_name(inst->opcode())),
                       .inputs = {}, .attrs = {{"shape", inst->shape().to_string()}}};
    // Operands live in the same computation (the verifier's rule), so each has a name.
    for (const ir::Instruction* operand : inst->operands()) node.inputs.push_back(names.at(operand));
    if (!inst->name().empty()) node.attrs.emplace_back("name", inst->name());
    if (!inst->source().empty()) node.attrs.emplace_back("source", inst->source());
    if (inst->opcode() == ir::Opcode::kFusion && inst->attrs().body != nullptr)
      node.attrs.emplace_back("fused", ir::to_string(*inst->attrs().body));
    nodes.push_back(std::move(node));
  }
  return nodes;
}

// Keras 2 weight names end in ":0" and the tag replaces ':' with '_' ("dense/kernel_0"); Kiln's
// names have no ":0", so the same model gets the same tags.
std::string histogram_tag(const std::string& weight_name) {
  std::string tag = weight_name;
  if (tag.find(':') == std::string::npos) tag += ":0";
  for (char& c : tag)
    if (c == ':') c = '_';
  return tag + "/histogram";
}

}  // namespace

TensorBoard::TensorBoard(std::string log_dir, TensorBoardOptions options)
    : log_dir_(std::move(log_dir)), o_(std::move(options)) {
  if (const auto* every = std::get_if<int64_t>(&o_.update_freq)) {
    if (*every < 1)
      KILN_THROW(ValueError, "[TensorBoard] update_freq=", *every,
                 " must be at least 1 (train steps between batch scalars). Hint: use \"epoch\" for none.");
    update_every_ = *every;
  } else {
    const std::string& freq = std::get<std::string>(o_.update_freq);
    if (freq == "batch") update_every_ = 1;
    else if (freq != "epoch")
      KILN_THROW(ValueError, "[TensorBoard] update_freq=\"", freq, "\" is not \"epoch\", \"batch\" or a step count.");
  }
  if (o_.histogram_freq < 0)
    KILN_THROW(ValueError, "[TensorBoard] histogram_freq=", o_.histogram_freq, " must be 0 (none) or a count of epochs.");
  if (o_.profile_batch != std::pair<int64_t, int64_t>{0, 0})
    profiler_ = std::make_shared<Profiler>(log_dir_, ProfilerOptions{.profile_batch = o_.profile_batch});
}

TensorBoard::~TensorBoard() = default;

std::vector<std::string> TensorBoard::event_files() const { return files_; }

void TensorBoard::on_train_begin(const Logs& logs) {
  if (profiler_) {
    profiler_->set_model(model());
    profiler_->set_params(params());
    profiler_->on_train_begin(logs);
  }
  train_.reset();
  validation_.reset();
  if (!model()->is_chief()) return;  // one set of files per cluster: worker 0 writes them
  train_ = std::make_shared<io::EventFileWriter>((std::filesystem::path(log_dir_) / "train").string());
  files_.push_back(train_->path());
  graph_written_ = !o_.write_graph;
}

io::EventFileWriter& TensorBoard::validation_writer() {
  // Made at the first validation, as Keras does: a run without validation has no validation/.
  if (!validation_) {
    validation_ = std::make_shared<io::EventFileWriter>((std::filesystem::path(log_dir_) / "validation").string());
    files_.push_back(validation_->path());
  }
  return *validation_;
}

void TensorBoard::on_train_end(const Logs& logs) {
  if (profiler_) profiler_->on_train_end(logs);
  if (train_) train_->close();
  if (validation_) validation_->close();
  train_.reset();
  validation_.reset();
}

void TensorBoard::on_train_batch_begin(int64_t batch, const Logs& logs) {
  if (profiler_) profiler_->on_train_batch_begin(batch, logs);
}

void TensorBoard::on_train_batch_end(int64_t batch, const Logs& logs) {
  if (profiler_) profiler_->on_train_batch_end(batch, logs);
  ++train_step_;
  if (!train_) return;
  if (!graph_written_) write_graph();
  if (update_every_ > 0 && train_step_ % update_every_ == 0)
    for (const auto& [name, value] : logs) train_->add_scalar("batch_" + name, value, train_step_);
}

void TensorBoard::write_graph() {
  graph_written_ = true;
  const Function* step = model()->train_function();
  const runtime::Executable* exe = step != nullptr ? step->last_executable() : nullptr;
  const ir::Module* module = exe != nullptr ? exe->lowered_module() : nullptr;
  if (module == nullptr)
    KILN_THROW(ConfigError, "[TensorBoard] write_graph: the train step's backend keeps no compiled module to draw. "
               "Hint: pass write_graph=false.");
  train_->add_graph(graph_nodes(*module));
}

void TensorBoard::on_test_end(const Logs& logs) {
  if (!train_) return;  // evaluate() outside fit, or not the chief
  io::EventFileWriter& w = validation_writer();
  for (const auto& [name, value] : logs) w.add_scalar("evaluation_" + name + "_vs_iterations", value, train_step_);
}

void TensorBoard::on_epoch_end(int epoch, const Logs& logs) {
  if (!train_) return;
  for (const auto& [name, value] : logs)
    if (!name.starts_with("val_")) train_->add_scalar("epoch_" + name, value, epoch);
  if (Optimizer* opt = model()->optimizer()) train_->add_scalar("epoch_learning_rate", opt->learning_rate(), epoch);
  bool has_validation = false;
  for (const auto& [name, value] : logs)
    if (name.starts_with("val_")) {
      validation_writer().add_scalar("epoch_" + name.substr(4), value, epoch);
      has_validation = true;
    }
  if (o_.histogram_freq > 0 && epoch % o_.histogram_freq == 0) write_histograms(epoch);
  train_->flush();
  if (has_validation) validation_->flush();
}

void TensorBoard::write_histograms(int epoch) {
  for (const LayerHandle& layer : model()->layers())
    for (const Variable& w : layer->weights()) {
      const std::vector<double> values = w.host_value().to_vector<double>();
      train_->add_histogram(histogram_tag(w.name()), values, epoch);
    }
}

}  // namespace kiln::keras
