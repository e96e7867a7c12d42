// host_name() over POSIX gethostname.
#include "kiln/core/host_name.h"

#include <unistd.h>

namespace kiln {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace kiln
