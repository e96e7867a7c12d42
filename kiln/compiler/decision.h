// Decision: yes, or no with a reason and a hint (XLA's FusionDecision), so every choice the
// compiler makes (fuse? fold? supported?) can explain itself in dumps and errors.
#pragma once

#include <string>
#include <utility>

namespace kiln::compiler {

class Decision {
 public:
  static Decision yes() { return Decision(true, {}, {}); }
  static Decision no(std::string reason, std::string hint = {}) {
    return Decision(false, std::move(reason), std::move(hint));
  }
  explicit operator bool() const { return ok_; }
  bool ok() const { return ok_; }
  /// Why not (empty for yes).
  const std::string& reason() const { return reason_; }
  /// What the user can do instead (may be empty).
  const std::string& hint() const { return hint_; }

 private:
  Decision(bool ok, std::string reason, std::string hint)
      : ok_(ok), reason_(std::move(reason)), hint_(std::move(hint)) {}
  bool ok_;
  std::string reason_;
  std::string hint_;
};

}  // namespace kiln::compiler
