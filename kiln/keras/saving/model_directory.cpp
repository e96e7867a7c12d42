// The model directory: model.json is the table of contents (format, version, configs, the
// checksums of the tensor files and its own); the tensors are safetensors, named by variable.
#include "kiln/keras/saving/model_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/core/crc32c.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/file_reader.h"
#include "kiln/io/safetensors.h"
#include "kiln/keras/saving/keras_h5.h"
#include "kiln/keras/saving/saving_impl.h"
#include "kiln/keras/saving/training_config.h"

namespace kiln::keras {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFormat = "kiln.model_directory";
// Version 3 adds model.json's checksum of its own content ("crc32c"); 2 keeps the tensor
// files in the data directory model.json names; 1 beside model.json.
constexpr int64_t kVersion = 3;
constexpr std::string_view kDataPrefix = "data-";
// A read that keeps meeting new saves gives up after this many tries.
constexpr int kReadAttempts = 4;

uint32_t file_crc(const std::string& path) {
  std::string bytes = io::read_file(path);
  return crc32c(bytes.data(), bytes.size());
}

std::string toc_path_of(const std::string& dir) {
  return (fs::path(dir) / kModelJsonFile).string();
}

// Writes `vars` by name and returns the file's entry for model.json.
json write_tensors(const std::string& path, const std::vector<Variable>& vars, const std::string& kind) {
  std::vector<io::NamedTensor> tensors;
  for (const Variable& v : vars) tensors.push_back({v.name(), v.host_value().clone()});
  io::write_safetensors(path, tensors, {{"format", kind}});
  return {{"file", fs::path(path).filename().string()}, {"crc32c", file_crc(path)}};
}

// model.json names files and the data directory by bare names: a load never leaves `dir`.
bool is_bare_name(const std::string& name) {
  const fs::path p(name);
  return !name.empty() && name != "." && name != ".." && p.filename() == p && !p.is_absolute();
}

// The keys model.json holds in each version: every one of `required`, any of `optional`.
struct TocKeys {
  std::vector<std::string_view> required;
  std::vector<std::string_view> optional;
};
const TocKeys& toc_keys(int64_t version) {
  static const TocKeys kV1 = {{"format", "version", "keras_version", "model_config", "weights"},
                              {"training_config", "optimizer"}};
  static const TocKeys kV2 = {{"format", "version", "keras_version", "model_config", "weights", "data_dir"},
                              {"training_config", "optimizer"}};
  static const TocKeys kV3 = {{"format", "version", "keras_version", "model_config", "weights", "data_dir", "crc32c"},
                              {"training_config", "optimizer"}};
  return version == 1 ? kV1 : version == 2 ? kV2 : kV3;
}

// model.json's checksum: the CRC-32C of its compact JSON (keys sorted, no whitespace, as
// nlohmann::json::dump() writes it) without the "crc32c" key. Over the content rather than
// the bytes, so a reformatted file still checks, and any changed value, key or number does not.
uint32_t toc_crc(json toc) {
  toc.erase("crc32c");
  const std::string text = toc.dump();
  return crc32c(text.data(), text.size());
}

[[noreturn]] void damaged(const std::string& toc_path, const std::string& what) {
  KILN_THROW(IOError, "[", toc_path, "] ", what, ". Hint: the directory is damaged or was edited by hand; save the "
             "model again (or load a copy of the whole directory).");
}

// The strict reading of model.json's own structure: exactly the keys its version has, each of
// the type Kiln writes, and (version 3) a checksum that matches. The configs inside are read
// strictly by their own readers.
void check_toc(const std::string& toc_path, const json& toc) {
  const int64_t version = toc["version"].get<int64_t>();
  const TocKeys& keys = toc_keys(version);
  for (const auto& [key, value] : toc.items()) {
    const auto is = [&key = key](std::string_view k) { return k == key; };
    if (std::none_of(keys.required.begin(), keys.required.end(), is) &&
        std::none_of(keys.optional.begin(), keys.optional.end(), is))
      damaged(toc_path, str_cat("has an unknown key '", key, "' (version ", version, " holds ",
                                str_join(keys.required, ", "), " and optionally ", str_join(keys.optional, ", "),
                                ")"));
  }
  for (std::string_view key : keys.required)
    if (!toc.contains(key)) damaged(toc_path, str_cat("lacks the key '", key, "'"));
  if (!toc["keras_version"].is_string()) damaged(toc_path, str_cat("has keras_version ", toc["keras_version"].dump()));
  for (const char* key : {"model_config", "training_config"})
    if (toc.contains(key) && !toc[key].is_object())
      damaged(toc_path, str_cat("has a ", key, " that is not a JSON object: ", toc[key].dump().substr(0, 80)));
  for (const char* key : {"weights", "optimizer"}) {
    if (!toc.contains(key)) continue;
    const json& entry = toc[key];
    if (!entry.is_object() || entry.size() != 2 || !entry.contains("file") || !entry["file"].is_string() ||
        !entry.contains("crc32c") || !entry["crc32c"].is_number_unsigned() ||
        entry["crc32c"].get<uint64_t>() > UINT32_MAX)
      damaged(toc_path, str_cat("has no valid '", key, "' entry (expected {\"file\": name, \"crc32c\": checksum}, "
                                "received ", entry.dump().substr(0, 120), ")"));
  }
  if (toc.contains("optimizer") && !toc.contains("training_config"))
    damaged(toc_path, "lists optimizer state but no training_config");
  if (version >= 3) {
    const json& crc = toc["crc32c"];
    if (!crc.is_number_unsigned() || crc.get<uint64_t>() > UINT32_MAX)
      damaged(toc_path, str_cat("has crc32c ", crc.dump(), ", not a CRC-32C"));
    if (crc.get<uint32_t>() != toc_crc(toc))
      damaged(toc_path, "does not match the CRC-32C of its content that it records (crc32c): the file is corrupt");
  }
}

// Where the tensor files of a model.json live: its data directory, or `dir` (version 1).
std::string data_dir_of(const std::string& dir, const json& toc) {
  if (!toc.contains("data_dir")) return dir;
  const json& d = toc["data_dir"];
  if (!d.is_string() || !is_bare_name(d.get<std::string>()))
    KILN_THROW(IOError, "[", toc_path_of(dir), "] lists ", d.dump(), " as its data directory, which is not a name "
               "inside the model directory. Hint: the directory is damaged or was edited by hand.");
  return (fs::path(dir) / d.get<std::string>()).string();
}

// Reads `vars` by name from the file model.json lists under `key`, after its checksum.
void read_tensors(const std::string& dir, const json& toc, const char* key, const std::vector<Variable>& vars) {
  const std::string toc_path = toc_path_of(dir);
  const std::string name = toc[key]["file"].get<std::string>();
  if (!is_bare_name(name))
    KILN_THROW(IOError, "[", toc_path, "] lists '", name, "' as its '", key, "' file, which is not a file name inside "
               "the model directory. Hint: the directory is damaged or was edited by hand.");
  const std::string path = (fs::path(data_dir_of(dir, toc)) / name).string();
  if (!fs::exists(path))
    KILN_THROW(IOError, "[", path, "] is missing (listed in model.json). Hint: copy the whole model directory.");
  if (file_crc(path) != toc[key]["crc32c"].get<uint32_t>())
    KILN_THROW(IOError, "[", path, "] does not match the checksum model.json records: the file is corrupt or "
               "from another save. Hint: save the model again.");
  io::SafetensorsFile file = io::read_safetensors(path);
  std::vector<HostTensor> values;
  std::vector<std::string> where;
  for (const Variable& v : vars) {
    const HostTensor* t = io::find_tensor(file.tensors, v.name());
    if (t == nullptr)
      KILN_THROW(IOError, "[", path, "] has no tensor '", v.name(),
                 "'. Hint: load into the architecture (and optimizer) that was saved.");
    values.push_back(*t);
    where.push_back("tensor '" + v.name() + "'");
  }
  if (file.tensors.size() != vars.size())
    KILN_THROW(IOError, "[", path, "] holds ", file.tensors.size(), " tensors, but the model needs ", vars.size(),
               ". Hint: load into the architecture (and optimizer) that was saved.");
  internal::assign_checked(vars, values, path, where);
}

json parse_toc(const std::string& dir, const std::string& text) {
  const std::string path = toc_path_of(dir);
  json toc;
  try {
    toc = json::parse(text);
  } catch (const json::exception& e) {
    KILN_THROW(IOError, "[", path, "] is not valid JSON: ", e.what(), ". Hint: the directory is damaged.");
  }
  if (!toc.is_object() || !toc.contains("format") || toc["format"] != kFormat)
    KILN_THROW(IOError, "[", path, "] is not a Kiln model directory (expected format \"", kFormat, "\").");
  if (!toc.contains("version") || !toc["version"].is_number_integer() || toc["version"].get<int64_t>() < 1 ||
      toc["version"].get<int64_t>() > kVersion)
    KILN_THROW(IOError, "[", path, "] has version ", toc.value("version", json()).dump(),
               "; this Kiln reads versions 1 to ", kVersion, ". Hint: load it with the Kiln that saved it.");
  check_toc(path, toc);
  return toc;
}

std::string read_toc_text(const std::string& dir) {
  if (!fs::is_directory(dir))
    KILN_THROW(IOError, "[", dir, "] is not a model directory. Hint: pass the directory model.save wrote.");
  return io::read_file(toc_path_of(dir));
}

// A lock on a data directory: shared while a reader reads its files, exclusive (taken
// without waiting) before a saver deletes it. So a saver never deletes the files a reader is
// in the middle of, however many saves that reader falls behind.
class DataDirLock {
 public:
  DataDirLock(const std::string& path, int operation) : fd_(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    locked_ = fd_ >= 0 && ::flock(fd_, operation) == 0;
  }
  ~DataDirLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;
  bool locked() const { return locked_; }

 private:
  int fd_;
  bool locked_ = false;
};

std::unique_ptr<Model> load_from_toc(const std::string& dir, const json& toc, bool compile) {
  const std::string toc_path = toc_path_of(dir);
  // Version 1 keeps its files in `dir` itself: nothing to lock. If the data directory is
  // gone already, reading fails and the caller retries with the new model.json.
  std::optional<DataDirLock> reading;
  try {
    if (toc.contains("data_dir")) reading.emplace(data_dir_of(dir, toc), LOCK_SH);
    std::unique_ptr<Model> model = internal::model_from_config(toc["model_config"].dump(), toc_path);
    read_tensors(dir, toc, "weights", model->weights());
    if (compile && toc.contains("training_config")) {
      internal::compile_from_training_config(*model, toc["training_config"].dump(), toc_path);
      if (toc.contains("optimizer")) {
        model->optimizer()->create_slots(model->trainable_weights());
        read_tensors(dir, toc, "optimizer", model->optimizer()->variables());
      }
    }
    return model;
  } catch (const json::exception& e) {
    KILN_THROW(IOError, "[", toc_path, "] is malformed: ", e.what(), ". Hint: the directory is damaged.");
  }
}

// The data directory name the current model.json names: "" when there is none or it is
// unreadable (then nothing of it is kept).
std::string current_data_name(const std::string& dir) {
  try {
    const json toc = parse_toc(dir, read_toc_text(dir));
    return toc.contains("data_dir") && toc["data_dir"].is_string() ? toc["data_dir"].get<std::string>() : "";
  } catch (const Error&) {
    return "";
  }
}

// Deletes the data directories, but the current and previous ones, that this process or a
// dead writer made (never a live writer's: it may be mid-save; never one a reader has locked),
// and version 1's files once they are two saves old.
void remove_old_data(const std::string& dir, const std::string& current, const std::string& previous) {
  const std::string own = str_cat(kDataPrefix, io::writer_tag(), "-");
  std::error_code ec, entry_ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::directory_entry& entry = *it;
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kDataPrefix) || name == current || name == previous || !entry.is_directory(entry_ec) ||
        entry.is_symlink(entry_ec))
      continue;
    if (!name.starts_with(own) && !io::is_dead_writers_name(name)) continue;
    DataDirLock deleting(entry.path().string(), LOCK_EX | LOCK_NB);
    if (deleting.locked()) fs::remove_all(entry.path(), entry_ec);  // else a reader holds it: next save
  }
  if (!previous.empty())
    for (const char* legacy : {kWeightsFile, kOptimizerFile}) fs::remove(fs::path(dir) / legacy, ec);
}

}  // namespace

void save_model_directory(const Model& model, const std::string& dir, SaveOptions options) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    io::throw_write_error(dir, "cannot create the model directory", ec ? ec.value() : ENOTDIR);
  const std::string previous = current_data_name(dir);
  const std::string data_name = io::unique_name(kDataPrefix);
  const fs::path data = fs::path(dir) / data_name;
  if (::mkdir(data.c_str(), 0777) != 0) io::throw_write_error(data.string(), "cannot create the data directory", errno);
  // Until model.json names it, the new data directory is garbage: drop it if the save fails.
  struct RemoveUnlessCommitted {
    const fs::path& p;
    bool committed = false;
    ~RemoveUnlessCommitted() {
      std::error_code e;
      if (!committed) fs::remove_all(p, e);
    }
  } guard{data};
  json toc = {{"format", kFormat}, {"version", kVersion}, {"keras_version", kKerasVersion},
              {"model_config", json::parse(model.to_json())}, {"data_dir", data_name}};
  toc["weights"] = write_tensors((data / kWeightsFile).string(), model.weights(), "kiln.weights");
  if (options.include_optimizer && model.is_compiled()) {
    toc["training_config"] = json::parse(training_config_json(model.compile_options()));
    if (model.optimizer()->slots_created())
      toc["optimizer"] = write_tensors((data / kOptimizerFile).string(), model.optimizer()->variables(),
                                       "kiln.optimizer");
  }
  toc["crc32c"] = toc_crc(toc);
  io::sync_directory(dir);  // the new data directory's entry is durable before the switch
  io::write_file_atomically(toc_path_of(dir), toc.dump(2) + "\n");
  guard.committed = true;
  remove_old_data(dir, data_name, previous);
}

std::unique_ptr<Model> load_model_directory(const std::string& dir, bool compile) {
  for (int attempt = 1;; ++attempt) {
    const std::string text = read_toc_text(dir);
    try {
      return load_from_toc(dir, parse_toc(dir, text), compile);
    } catch (const IOError&) {
      // A save that replaced the model meanwhile may have deleted the files this model.json
      // names: read the new one.
      if (attempt < kReadAttempts && read_toc_text(dir) != text) continue;
      throw;
    }
  }
}

}  // namespace kiln::keras
