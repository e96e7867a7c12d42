// Module: the unit the compiler works on, owning the entry computation (the whole step), the
// fusion bodies, and the output->parameter aliases that make variable updates in place.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/computation.h"

namespace kiln::ir {

/// Output `output_index` of the entry computation is the new value of parameter
/// `parameter_index` (a Variable): its buffer is donated and updated in place.
struct OutputAlias {
  int output_index;
  int parameter_index;
  friend bool operator==(const OutputAlias&, const OutputAlias&) = default;
};

class Module {
 public:
  explicit Module(std::string name);
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }
  Computation* entry() const { return computations_.front().get(); }
  /// Adds a computation (a fusion body) owned by this module.
  Computation* add_computation(std::string name);
  const std::vector<std::unique_ptr<Computation>>& computations() const { return computations_; }
  /// Deletes computations no instruction calls any more (fusion, while, conditional).
  void remove_unused_computations();

  /// A fresh id for a new instruction.
  int next_instruction_id() { return next_id_++; }

  void add_alias(OutputAlias alias) { aliases_.push_back(alias); }
  const std::vector<OutputAlias>& aliases() const { return aliases_; }
  std::vector<OutputAlias>& mutable_aliases() { return aliases_; }

 private:
  std::string name_;
  std::vector<std::unique_ptr<Computation>> computations_;
  std::vector<OutputAlias> aliases_;
  int next_id_ = 0;
};

}  // namespace kiln::ir
