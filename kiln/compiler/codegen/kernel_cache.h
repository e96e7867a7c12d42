// KernelCache: generated code on disk, so a second run of a program compiles nothing. An
// entry is one file named by a hash of (tag, key) holding the tag, the key, the code and a
// CRC32C of all three; a read checks every part, so a stale entry (another Kiln, LLVM or CPU)
// or a corrupt one (torn, flipped) is reported as a miss, recompiled and overwritten, never
// loaded. Writes go to a temporary sibling renamed over the entry, so concurrent processes
// see a whole entry or none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::codegen {

class KernelCache {
 public:
  /// `dir` (DebugOptions::kernel_cache_dir) is created on first store; empty disables the cache. `tag` is
  /// CodegenTarget::cache_tag() (versions and CPU features).
  KernelCache(std::string dir, std::string tag);

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  /// The entry's file for `key`.
  std::string path_for(const std::string& key) const;

  /// The code stored for `key`, or nullopt (absent, stale or corrupt: see stats()).
  std::optional<std::string> load(const std::string& key);
  /// Stores `code` for `key`. A failure (read-only or full disk) is logged once and ignored:
  /// the cache only saves time.
  void store(const std::string& key, const std::string& code);

  struct Stats {
    int64_t hits = 0, misses = 0, rejected = 0, stores = 0;  // rejected: stale or corrupt
  };
  const Stats& stats() const { return stats_; }

 private:
  std::string dir_, tag_;
  Stats stats_;
  bool warned_ = false;
};

}  // namespace kiln::codegen
