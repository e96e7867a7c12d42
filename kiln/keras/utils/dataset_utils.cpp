// Keras's folder listing, shuffle and split (keras/src/utils/dataset_utils.py), rewritten so
// that the files, their order after the seeded shuffle and the subsets equal Keras's.
#include "kiln/keras/utils/dataset_utils.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <random>
#include <set>
#include <system_error>

#include "kiln/core/check.h"

namespace kiln::keras::utils {
namespace {

namespace fs = std::filesystem;

// os.path.join(a, b) for relative b: one '/' between, none added after a trailing one.
std::string py_join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return a.back() == '/' ? a + b : a + "/" + b;
}

// os.path.basename: what follows the last '/' ("" for "dir/").
std::string py_basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool has_allowed_extension(const std::string& name, const std::vector<std::string>& formats) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::any_of(formats.begin(), formats.end(), [&](const std::string& f) { return lower.ends_with(f); });
}

// One folder of os.walk: its path as Python's join spells it, its path relative to the walk's
// top, and its file names (entries that are not folders, symlinks followed), sorted.
struct WalkedFolder {
  std::string root;
  std::string relative;
  std::vector<std::string> files;
};

// os.walk(top, followlinks): every folder below top, top first. A symlinked folder is listed
// but entered only with follow_links; a folder reached twice through links is entered once
// (os.walk would loop forever). Unlike os.walk, which skips a folder it cannot read, this
// throws DataError naming it: a silently missing class folder would change the labels.
void walk(const std::string& root, const std::string& relative, bool follow_links, const std::string& caller,
          std::set<fs::path>& visited, std::vector<WalkedFolder>& out) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(root, ec);
  if (!ec && !visited.insert(canonical).second) return;
  WalkedFolder folder{root, relative, {}};
  std::vector<std::string> subfolders;
  fs::directory_iterator it(root, ec);
  if (ec) KILN_THROW(DataError, "[", caller, "] cannot list the folder ", root, ": ", ec.message(), ".");
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) KILN_THROW(DataError, "[", caller, "] cannot list the folder ", root, ": ", ec.message(), ".");
    const std::string name = it->path().filename().string();
    std::error_code dir_ec;
    if (it->is_directory(dir_ec)) {
      std::error_code link_ec;
      if (follow_links || !it->is_symlink(link_ec)) subfolders.push_back(name);
    } else {
      folder.files.push_back(name);
    }
  }
  std::sort(folder.files.begin(), folder.files.end());
  out.push_back(std::move(folder));
  std::sort(subfolders.begin(), subfolders.end());
  for (const std::string& name : subfolders)
    walk(py_join(root, name), py_join(relative, name), follow_links, caller, visited, out);
}

// The class subfolders of `directory`, sorted, as Keras lists them: folders (symlinks
// followed, as os.path.isdir does) whose name does not start with '.'.
std::vector<std::string> class_subfolders(const std::string& directory, const std::string& caller) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec))
    KILN_THROW(DataError, "[", caller, "] ", directory, " is not a folder",
               fs::exists(directory, ec) ? "" : " (it does not exist)",
               ". Hint: pass the folder holding one subfolder per class.");
  std::vector<std::string> subdirs;
  fs::directory_iterator it(directory, ec);
  if (ec) KILN_THROW(DataError, "[", caller, "] cannot list the folder ", directory, ": ", ec.message(), ".");
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) KILN_THROW(DataError, "[", caller, "] cannot list the folder ", directory, ": ", ec.message(), ".");
    std::error_code dir_ec;
    const std::string name = it->path().filename().string();
    if (it->is_directory(dir_ec) && !name.starts_with(".")) subdirs.push_back(name);
  }
  std::sort(subdirs.begin(), subdirs.end());
  return subdirs;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s + "]";
}

// numpy's legacy random_interval: a uniform integer in [0, max] by masked rejection on 32-bit
// draws (every max here is below 2^32).
uint32_t random_interval(std::mt19937& gen, uint32_t max) {
  if (max == 0) return 0;
  uint32_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  uint32_t value;
  while ((value = static_cast<uint32_t>(gen()) & mask) > max) {
  }
  return value;
}

}  // namespace

std::vector<int64_t> numpy_shuffle_permutation(int64_t n, uint64_t seed) {
  if (seed > 0xffffffffULL)
    KILN_THROW(ValueError, "[shuffle] seed must be between 0 and 2**32 - 1 (numpy's RandomState), received seed=",
               seed, ".");
  if (n > 0xffffffffLL) KILN_THROW(ValueError, "[shuffle] cannot shuffle ", n, " items (at most 2**32).");
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  // RandomState(seed) seeds MT19937 with init_genrand(seed), as std::mt19937(seed) does, and its
  // shuffle is Fisher-Yates from the end: swap x[i] with x[random_interval(i)].
  std::mt19937 gen(static_cast<std::mt19937::result_type>(seed));
  for (int64_t i = n - 1; i >= 1; --i) {
    const auto j = static_cast<int64_t>(random_interval(gen, static_cast<uint32_t>(i)));
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  return perm;
}

DirectoryIndex index_directory(const std::string& directory, const LabelsArg& labels,
                               const std::vector<std::string>& formats,
                               const std::vector<std::string>& class_names, bool shuffle, uint64_t seed,
                               bool follow_links, const std::string& caller) {
  const bool inferred = labels && std::holds_alternative<std::string>(*labels);
  if (inferred && std::get<std::string>(*labels) != "inferred")
    KILN_THROW(ValueError, "[", caller, "] labels must be \"inferred\", a list of integer labels or none, received "
               "labels=\"", std::get<std::string>(*labels), "\".");
  std::vector<std::string> subdirs;
  if (inferred) {
    subdirs = class_subfolders(directory, caller);
    if (!class_names.empty()) {
      const std::set<std::string> known(subdirs.begin(), subdirs.end());
      std::set<std::string> seen;
      for (const std::string& c : class_names) {
        if (!known.contains(c))
          KILN_THROW(ValueError, "[", caller, "] class_names=", join_names(class_names), " names '", c,
                     "', which is not a subfolder of ", directory, ": expected some of ", join_names(subdirs), ".");
        if (!seen.insert(c).second)
          KILN_THROW(ValueError, "[", caller, "] class_names=", join_names(class_names), " names '", c, "' twice.");
      }
      subdirs = class_names;  // the caller's order
    }
  } else {
    if (!class_names.empty())
      KILN_THROW(ValueError, "[", caller, "] class_names can only be given with labels=\"inferred\"; received ",
                 labels ? "a labels list" : "no labels", " and class_names=", join_names(class_names), ".");
    std::error_code ec;
    if (!fs::is_directory(directory, ec))
      KILN_THROW(DataError, "[", caller, "] ", directory, " is not a folder",
                 fs::exists(directory, ec) ? "" : " (it does not exist)", ".");
    subdirs = {""};  // the whole folder, its structure ignored
  }

  DirectoryIndex index;
  std::set<fs::path> visited;
  for (size_t label = 0; label < subdirs.size(); ++label) {
    const std::string top = py_join(directory, subdirs[label]);
    std::vector<WalkedFolder> folders;
    walk(top, "", follow_links, caller, visited, folders);
    visited.clear();  // a class folder linked from another class still counts for both, as in Keras
    // Keras sorts os.walk's folders by their path text.
    std::stable_sort(folders.begin(), folders.end(),
                     [](const WalkedFolder& a, const WalkedFolder& b) { return a.root < b.root; });
    const std::string class_dir = py_basename(top);
    for (const WalkedFolder& folder : folders)
      for (const std::string& name : folder.files) {
        if (!has_allowed_extension(name, formats)) continue;
        index.file_paths.push_back(py_join(directory, py_join(class_dir, py_join(folder.relative, name))));
        if (inferred) index.labels.push_back(static_cast<int64_t>(label));
      }
  }

  if (inferred) {
    index.class_names = subdirs;
  } else if (labels) {
    const auto& given = std::get<std::vector<int64_t>>(*labels);
    if (given.size() != index.file_paths.size())
      KILN_THROW(ValueError, "[", caller, "] labels has ", given.size(), " entries, and ", directory, " holds ",
                 index.file_paths.size(), " files of the allowed formats: expected one label per file, in the sorted "
                 "order of the file paths.");
    index.labels = given;
    const std::set<int64_t> distinct(given.begin(), given.end());
    for (int64_t l : distinct) index.class_names.push_back(std::to_string(l));
  }

  if (shuffle) {
    const std::vector<int64_t> perm = numpy_shuffle_permutation(static_cast<int64_t>(index.file_paths.size()), seed);
    DirectoryIndex shuffled{{}, {}, index.class_names};
    for (int64_t i : perm) {
      shuffled.file_paths.push_back(std::move(index.file_paths[static_cast<size_t>(i)]));
      if (!index.labels.empty()) shuffled.labels.push_back(index.labels[static_cast<size_t>(i)]);
    }
    index = std::move(shuffled);
  }
  return index;
}

void check_validation_split_arg(double validation_split, const std::string& subset, bool shuffle,
                                const std::optional<uint64_t>& seed, const std::string& caller) {
  if (!(validation_split >= 0 && validation_split < 1))
    KILN_THROW(ValueError, "[", caller, "] validation_split must be between 0 and 1 (0: no split), received "
               "validation_split=", validation_split, ".");
  if (subset != "" && subset != "training" && subset != "validation" && subset != "both")
    KILN_THROW(ValueError, "[", caller, "] subset must be \"training\", \"validation\" or \"both\", received subset=\"",
               subset, "\".");
  if ((validation_split > 0) != !subset.empty())
    KILN_THROW(ValueError, "[", caller, "] subset and validation_split go together: received validation_split=",
               validation_split, " and subset=\"", subset, "\". Hint: give both, or neither.");
  if (validation_split > 0 && shuffle && !seed)
    KILN_THROW(ValueError, "[", caller, "] a validation_split with shuffle=true needs a seed, so that the training "
               "and validation subsets do not overlap. Hint: pass .seed = 1337 (any number) to every call.");
}

std::pair<int64_t, int64_t> training_or_validation_range(int64_t n, double validation_split,
                                                         const std::string& subset, const std::string& directory,
                                                         const std::string& caller) {
  if (validation_split == 0) return {0, n};
  // Python's int() truncates, as the cast does for a non-negative product.
  const auto num_val = static_cast<int64_t>(validation_split * static_cast<double>(n));
  if (num_val == 0)
    KILN_THROW(ValueError, "[", caller, "] validation_split=", validation_split, " of the ", n, " files in ",
               directory, " gives no validation files (int(", validation_split, " * ", n, ") = 0). Hint: add files "
               "or raise validation_split.");
  KILN_CHECK(subset == "training" || subset == "validation", "subset=", subset);
  return subset == "training" ? std::pair<int64_t, int64_t>{0, n - num_val} : std::pair<int64_t, int64_t>{n - num_val, n};
}

}  // namespace kiln::keras::utils
