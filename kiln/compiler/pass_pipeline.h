// PassPipeline: runs passes in order with the IR verifier between them, skips passes the user
// disabled (KILN_DISABLE_PASSES) and dumps the IR plus each pass's decisions (KILN_DUMP_IR).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/compiler/pass.h"
#include "kiln/core/debug_options.h"
#include "kiln/ir/module.h"

namespace kiln::compiler {

/// How a pipeline runs; the KILN_* debug knobs (from_debug_options) plus a dump label.
struct PipelineOptions {
  /// Run ir::verify before the first pass and after every pass that changed the module.
  bool verify_ir = true;
  /// Pass names to skip.
  std::vector<std::string> disabled_passes;
  /// When set, writes `<dir>/<label>.<NN>.<pass>.kir` after every pass that ran (NN is its
  /// position in the pipeline, 00 the input), with the decisions the pass recorded.
  std::string dump_ir_dir;
  /// File name prefix of dumps; empty means the module's name.
  std::string label;

  static PipelineOptions from_debug_options(const DebugOptions& debug);
};

/// What one run did, pass by pass (tests and compile logs read it).
struct PassRecord {
  std::string name;
  bool skipped = false;
  bool changed = false;
  std::vector<std::string> notes;
};

class PassPipeline {
 public:
  explicit PassPipeline(std::string name) : name_(std::move(name)) {}
  PassPipeline(PassPipeline&&) = default;
  PassPipeline& operator=(PassPipeline&&) = default;

  const std::string& name() const { return name_; }

  /// Appends a pass; passes run in the order added (a pass may appear more than once).
  PassPipeline& add(std::unique_ptr<Pass> pass);
  template <typename P, typename... Args>
  PassPipeline& add(Args&&... args) {
    return add(std::make_unique<P>(std::forward<Args>(args)...));
  }

  /// Pass names in run order.
  std::vector<std::string> pass_names() const;

  /// Runs every enabled pass over `module`. Returns one record per pass. Throws InternalError
  /// naming the pass when the verifier rejects its output (a bug in that pass), and IOError
  /// when a dump cannot be written.
  std::vector<PassRecord> run(ir::Module& module, const PipelineOptions& options = {});

 private:
  std::string name_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

}  // namespace kiln::compiler
