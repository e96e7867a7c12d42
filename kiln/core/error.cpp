// Out-of-line pieces of the error helpers.
#include "kiln/core/check.h"

namespace kiln::detail {

void check_failed(const char* file, int line, const char* condition,
                  const std::string& context) {
  throw InternalError(str_cat("[", file, ":", line, "] internal check failed: ", condition,
                              context.empty() ? "" : ": ", context,
                              ". This is a bug in Kiln; please report it."));
}

}  // namespace kiln::detail
