// Glob over one directory with POSIX fnmatch, and the string source list_files builds on.
#include "kiln/data/readers/file_list.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

namespace fs = std::filesystem;

class FileListNode : public DatasetNode {
 public:
  explicit FileListNode(std::vector<std::string> files)
      : DatasetNode("list_files", {}), files_(std::move(files)) {}

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;
  const std::vector<std::string>& files() const { return files_; }
  int64_t cardinality() const override { return static_cast<int64_t>(files_.size()); }

 private:
  std::vector<std::string> files_;
};

class FileListIterator : public IteratorBase {
 public:
  FileListIterator(const FileListNode& node, const IteratorContext& ctx)
      : IteratorBase(node, ctx), node_(node) {}

 protected:
  std::optional<Element> get_next() override {
    if (next_ >= node_.files().size()) return std::nullopt;
    return Element(string_tensor(node_.files()[next_++]));
  }
  void save_state(StateWriter& w) override { w.write_u64(next_); }
  void restore_state(StateReader& r) override { next_ = r.read_u64(); }

 private:
  const FileListNode& node_;
  size_t next_ = 0;
};

IteratorPtr FileListNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<FileListIterator>(*this, ctx);
}

}  // namespace

std::vector<std::string> match_files(const std::string& pattern) {
  const fs::path p(pattern);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string name_pattern = p.filename().string();
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
      if (!entry.is_regular_file(ec)) continue;
      if (fnmatch(name_pattern.c_str(), entry.path().filename().c_str(), FNM_PERIOD) == 0)
        files.push_back((p.has_parent_path() ? entry.path() : entry.path().filename()).string());
    }
  }
  if (files.empty())
    KILN_THROW(DataError, "[list_files] no file matches '", pattern, "'",
               fs::is_directory(dir, ec) ? std::string() : str_cat(" (no directory ", dir.string(), ")"),
               ". Hint: wildcards are allowed in the file name only, e.g. data/train-*.tfrecord.");
  std::sort(files.begin(), files.end());
  return files;
}

NodePtr make_file_list_node(std::vector<std::string> files) {
  return std::make_shared<FileListNode>(std::move(files));
}

}  // namespace kiln::data
