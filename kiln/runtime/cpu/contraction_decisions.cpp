#include "kiln/runtime/cpu/contraction_decisions.h"

#include <omp.h>

#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <limits>

#include "kiln/compiler/codegen/kernel_cache.h"
#include "kiln/core/logging.h"
#include "kiln/core/str_cat.h"

namespace kiln::cpu {

ContractionDecisions& ContractionDecisions::instance() {
  static ContractionDecisions decisions;
  return decisions;
}

std::optional<MatmulPath> ContractionDecisions::find(const std::string& key, const std::string& tag,
                                                const std::string& cache_dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = memory_.find(tag + "\n" + key); it != memory_.end()) {
    ++stats_.memory_hits;
    return it->second;
  }
  if (cache_dir.empty()) return std::nullopt;
  codegen::KernelCache disk(cache_dir, tag);
  std::optional<std::string> stored = disk.load(str_cat("path ", key));
  if (!stored) return std::nullopt;
  MatmulPath path;
  if (*stored == matmul_path_name(MatmulPath::kNative)) path = MatmulPath::kNative;
  else if (*stored == matmul_path_name(MatmulPath::kWidened)) path = MatmulPath::kWidened;
  else return std::nullopt;  // not a choice this Kiln writes: time again
  ++stats_.disk_hits;
  memory_[tag + "\n" + key] = path;
  return path;
}

void ContractionDecisions::record(const std::string& key, const std::string& tag, const std::string& cache_dir,
                             MatmulPath path) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.timed;
  memory_[tag + "\n" + key] = path;
  if (!cache_dir.empty()) codegen::KernelCache(cache_dir, tag).store(str_cat("path ", key), matmul_path_name(path));
}

ContractionDecisions::Stats ContractionDecisions::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void ContractionDecisions::forget_in_memory() {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.clear();
}

bool ContractionDecisions::first_time(const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  return reported_.insert(what).second;
}

void report_16bit_path(DType t, const std::string& what, MatmulOptions::Choice choice, const std::string& native_isa,
                       const std::string& f32_isa) {
  if (!ContractionDecisions::instance().first_time(str_cat(name(t), " ", what))) return;
  const std::string d(name(t));
  const std::string widened = str_cat("in f32 from ", d, " storage (", f32_isa, ", a tile at a time)");
  std::string how;
  if (choice == MatmulOptions::Choice::kF32)
    how = str_cat(widened, ", as KILN_16BIT_CONTRACTIONS=f32 asks");
  else if (native_isa.empty())
    how = str_cat(widened, ": oneDNN has no ", d, " ", what, " kernel on this CPU, so a ", d,
                  " policy saves activation memory here, not time");
  else if (choice == MatmulOptions::Choice::kNative)
    how = str_cat("on oneDNN's ", d, " kernel (", native_isa, "), as KILN_16BIT_CONTRACTIONS=native asks");
  else
    how = str_cat("on oneDNN's ", d, " kernel (", native_isa, ") or ", widened,
                  ", whichever is faster on each shape (timed once; KILN_LOG=2 lists the choices)");
  log(LogLevel::kWarning, str_cat("[cpu] ", d, " ", what, "s run ", how, ". Hint: KILN_LOG=0 hides this note."));
}

double min_ms(const std::function<void()>& run) {
  run();
  double best = std::numeric_limits<double>::infinity();
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

MatmulPath choose_16bit_path(const std::string& where, const std::string& what, const std::string& key,
                             const std::string& native_isa, const std::string& widened_isa,
                             const std::string& cache_dir, const std::function<double()>& time_native,
                             const std::function<double()>& time_widened) {
  const dnnl_version_t* v = dnnl_version();
  const std::string tag = str_cat("onednn ", v->major, ".", v->minor, ".", v->patch, "; ", native_isa, " vs ",
                                  widened_isa, "; threads ", omp_get_max_threads());
  ContractionDecisions& decisions = ContractionDecisions::instance();
  const std::string full_key = str_cat(what, " ", key);
  if (std::optional<MatmulPath> known = decisions.find(full_key, tag, cache_dir)) {
    log(LogLevel::kInfo, str_cat("[cpu] ", where, ": 16-bit ", full_key, " runs ", matmul_path_name(*known), " (",
                                 *known == MatmulPath::kNative ? native_isa : widened_isa, "; cached)"));
    return *known;
  }
  const double native_ms = time_native(), widened_ms = time_widened();
  const MatmulPath path = native_ms <= widened_ms ? MatmulPath::kNative : MatmulPath::kWidened;
  decisions.record(full_key, tag, cache_dir, path);
  log(LogLevel::kInfo, str_cat("[cpu] ", where, ": 16-bit ", full_key, " runs ", matmul_path_name(path), ": ",
                               native_isa, " ", native_ms, " ms, f32 from 16-bit storage (", widened_isa, ") ",
                               widened_ms, " ms"));
  return path;
}

}  // namespace kiln::cpu
