// Computation: owns Instructions, has ordered parameters and outputs. The entry computation is
// the whole step; fusion bodies are computations too.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/instruction.h"

namespace kiln::ir {

class Module;

class Computation {
 public:
  Computation(std::string name, Module* module) : name_(std::move(name)), module_(module) {}
  Computation(const Computation&) = delete;
  Computation& operator=(const Computation&) = delete;

  const std::string& name() const { return name_; }
  Module* module() const { return module_; }

  /// Appends an instruction. Operands must belong to this computation. The shape is taken
  /// as given: use Builder for checked construction.
  Instruction* add(Opcode opcode, Shape shape, std::vector<Instruction*> operands, Attrs attrs = {});
  /// Appends a parameter at the next index.
  Instruction* add_parameter(Shape shape, std::string name);

  /// Every instruction ever added and not removed, in creation order.
  const std::vector<std::unique_ptr<Instruction>>& instructions() const { return instructions_; }
  /// Instructions reachable from the outputs (and all parameters), operands before users,
  /// deterministic. This is the order printers, evaluators and backends use.
  std::vector<Instruction*> post_order() const;

  const std::vector<Instruction*>& parameters() const { return parameters_; }
  Instruction* parameter(size_t i) const { return parameters_.at(i); }

  const std::vector<Instruction*>& outputs() const { return outputs_; }
  void set_outputs(std::vector<Instruction*> outputs) { outputs_ = std::move(outputs); }
  void add_output(Instruction* output) { outputs_.push_back(output); }
  void set_output(size_t i, Instruction* output) { outputs_.at(i) = output; }

  /// Points every user (and every output slot) of `old` at `replacement`.
  void replace_all_uses(Instruction* old, Instruction* replacement);
  /// Deletes an instruction that has no users and is no output or parameter.
  void remove(Instruction* instruction);
  /// Deletes every instruction not reachable from the outputs (parameters stay).
  /// Returns how many were removed.
  int remove_dead();

 private:
  std::string name_;
  Module* module_;
  std::vector<std::unique_ptr<Instruction>> instructions_;
  std::vector<Instruction*> parameters_;
  std::vector<Instruction*> outputs_;
};

}  // namespace kiln::ir
