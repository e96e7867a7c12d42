// Instruction: one op in a Computation: opcode, result shape, operands, attributes, and the
// source (layer or call site) that made it, for error messages.
#pragma once

#include <string>
#include <vector>

#include "kiln/core/shape.h"
#include "kiln/ir/attrs.h"
#include "kiln/ir/opcode.h"

namespace kiln::ir {

class Computation;

class Instruction {
 public:
  Instruction(const Instruction&) = delete;
  Instruction& operator=(const Instruction&) = delete;

  /// Unique within the module; stable for the instruction's life.
  int id() const { return id_; }
  Opcode opcode() const { return opcode_; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return shape_.dtype(); }

  const std::vector<Instruction*>& operands() const { return operands_; }
  Instruction* operand(size_t i) const { return operands_.at(i); }
  size_t operand_count() const { return operands_.size(); }
  /// Instructions that use this one, once per use (an instruction using it twice appears twice).
  const std::vector<Instruction*>& users() const { return users_; }

  const Attrs& attrs() const { return attrs_; }
  Attrs& mutable_attrs() { return attrs_; }

  /// Optional readable name (parameters carry the variable or input name).
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  /// Where the op came from ("dense_1", "train_step.cpp:42"); empty when unknown.
  const std::string& source() const { return source_; }
  void set_source(std::string source) { source_ = std::move(source); }

  Computation* parent() const { return parent_; }

  /// Replaces operand i, keeping the users lists of both instructions right.
  void replace_operand(size_t i, Instruction* replacement);

 private:
  friend class Computation;
  Instruction(int id, Opcode opcode, Shape shape, std::vector<Instruction*> operands, Attrs attrs,
              Computation* parent)
      : id_(id), opcode_(opcode), shape_(std::move(shape)), operands_(std::move(operands)),
        attrs_(std::move(attrs)), parent_(parent) {}

  int id_;
  Opcode opcode_;
  Shape shape_;
  std::vector<Instruction*> operands_;
  std::vector<Instruction*> users_;
  Attrs attrs_;
  std::string name_;
  std::string source_;
  Computation* parent_;
};

}  // namespace kiln::ir
