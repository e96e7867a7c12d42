#include "kiln/compiler/codegen/kernel_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/core/crc32c.h"
#include "kiln/core/fnv1a.h"
#include "kiln/core/logging.h"
#include "kiln/core/str_cat.h"

namespace kiln::codegen {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'K', 'R', 'N', '1'};

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool get_u64(const std::string& in, size_t& pos, uint64_t* v) {
  if (in.size() - pos < 8) return false;
  *v = 0;
  for (int i = 0; i < 8; ++i) *v |= static_cast<uint64_t>(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  pos += 8;
  return true;
}

bool get_string(const std::string& in, size_t& pos, std::string* s) {
  uint64_t n;
  if (!get_u64(in, pos, &n) || in.size() - pos < n) return false;
  *s = in.substr(pos, n);
  pos += n;
  return true;
}

}  // namespace

KernelCache::KernelCache(std::string dir, std::string tag) : dir_(std::move(dir)), tag_(std::move(tag)) {}

std::string KernelCache::path_for(const std::string& key) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.kk", static_cast<unsigned long long>(fnv1a64(key, fnv1a64("\xff", fnv1a64(tag_)))));
  return str_cat(dir_, "/", name);
}

std::optional<std::string> KernelCache::load(const std::string& key) {
  if (!enabled()) return std::nullopt;
  std::ifstream in(path_for(key), std::ios::binary);
  if (!in) {
    ++stats_.misses;
    return std::nullopt;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string file = buffer.str();
  std::string tag, stored_key, code;
  size_t pos = sizeof kMagic;
  const bool whole = file.size() >= sizeof kMagic + 4 && std::memcmp(file.data(), kMagic, sizeof kMagic) == 0 &&
                     get_string(file, pos, &tag) && get_string(file, pos, &stored_key) &&
                     get_string(file, pos, &code) && file.size() - pos == 4;
  uint32_t crc = 0;
  if (whole) std::memcpy(&crc, file.data() + pos, 4);
  if (!whole || crc != crc32c(file.data(), pos) || tag != tag_ || stored_key != key) {
    ++stats_.rejected;
    log(LogLevel::kInfo, str_cat("codegen: kernel cache entry ", path_for(key), " is stale or corrupt; recompiling"));
    return std::nullopt;
  }
  ++stats_.hits;
  return code;
}

void KernelCache::store(const std::string& key, const std::string& code) {
  if (!enabled()) return;
  std::string file(kMagic, sizeof kMagic);
  for (const std::string* s : {static_cast<const std::string*>(&tag_), &key, &code}) {
    put_u64(file, s->size());
    file += *s;
  }
  const uint32_t crc = crc32c(file.data(), file.size());
  file.append(reinterpret_cast<const char*>(&crc), 4);
  const std::string path = path_for(key);
  const std::string temp = str_cat(path, ".tmp-", ::getpid());
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
    out.close();
    if (!out) ec = std::make_error_code(std::errc::io_error);
  }
  if (!ec) std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    if (!warned_) log(LogLevel::kWarning, str_cat("codegen: cannot write the kernel cache in ", dir_,
                                                  " (kernels are recompiled next run). Hint: set KILN_CACHE_DIR."));
    warned_ = true;
    return;
  }
  ++stats_.stores;
}

}  // namespace kiln::codegen
