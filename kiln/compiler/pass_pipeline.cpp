// PassPipeline: ordering, verification between passes, disabling by name, IR dumps.
#include "kiln/compiler/pass_pipeline.h"

#include <algorithm>
#include <cstdio>

#include "kiln/compiler/ir_dump.h"
#include "kiln/core/check.h"
#include "kiln/core/trace_recorder.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/verifier.h"

namespace kiln::compiler {
namespace {

void verify_after(const ir::Module& module, std::string_view after) {
  try {
    ir::verify(module);
  } catch (const Error& e) {
    KILN_THROW(InternalError, "[pass ", after, "] produced invalid IR: ", e.what(),
               " This is a bug in Kiln; disable the pass with KILN_DISABLE_PASSES=", after,
               " to work around it.");
  }
}

void dump(const ir::Module& module, const PipelineOptions& options, int index,
          std::string_view pass_name, const std::vector<std::string>& notes) {
  char number[16];
  std::snprintf(number, sizeof(number), "%02d", index);
  std::string label = options.label.empty() ? module.name() : options.label;
  std::string text = ir::to_string(module, {.show_sources = true});
  if (!notes.empty()) {
    text += str_cat("\n# decisions of ", pass_name, ":\n");
    for (const std::string& n : notes) text += str_cat("#   ", n, "\n");
  }
  dump_text(options.dump_ir_dir, str_cat(label, ".", number, ".", pass_name, ".kir"), text);
}

}  // namespace

PipelineOptions PipelineOptions::from_debug_options(const DebugOptions& debug) {
  return {.verify_ir = debug.verify_ir,
          .disabled_passes = debug.disabled_passes,
          .dump_ir_dir = debug.dump_ir_dir,
          .label = {}};
}

PassPipeline& PassPipeline::add(std::unique_ptr<Pass> pass) {
  KILN_CHECK(pass != nullptr, "null pass added to ", name_);
  passes_.push_back(std::move(pass));
  return *this;
}

std::vector<std::string> PassPipeline::pass_names() const {
  std::vector<std::string> names;
  for (const auto& p : passes_) names.emplace_back(p->name());
  return names;
}

std::vector<PassRecord> PassPipeline::run(ir::Module& module, const PipelineOptions& options) {
  const bool dumping = !options.dump_ir_dir.empty();
  if (options.verify_ir) verify_after(module, "input");
  if (dumping) dump(module, options, 0, "input", {});
  std::vector<PassRecord> records;
  int index = 0;
  for (const auto& pass : passes_) {
    ++index;
    PassRecord record{.name = std::string(pass->name()), .skipped = false, .changed = false, .notes = {}};
    const auto& disabled = options.disabled_passes;
    if (std::find(disabled.begin(), disabled.end(), record.name) != disabled.end()) {
      record.skipped = true;
      records.push_back(std::move(record));
      continue;
    }
    pass->clear_notes();
    {
      TraceScope scope("compile", record.name, options.label.empty() ? module.name() : options.label);
      record.changed = pass->run(module);
    }
    record.notes = pass->notes();
    if (options.verify_ir && record.changed) verify_after(module, record.name);
    if (dumping) dump(module, options, index, record.name, record.notes);
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace kiln::compiler
