// KILN_THROW for user errors and KILN_CHECK for Kiln's own invariants (docs/style.md 2.4-2.5).
#pragma once

#include <string>

#include "kiln/core/error.h"
#include "kiln/core/str_cat.h"

namespace kiln::detail {

/// Throws InternalError naming the broken condition and the source location.
[[noreturn]] void check_failed(const char* file, int line, const char* condition,
                               const std::string& context);

}  // namespace kiln::detail

/// Throws `ErrorType` with the concatenated message parts.
#define KILN_THROW(ErrorType, ...) throw ErrorType(::kiln::str_cat(__VA_ARGS__))

/// Guards an invariant; a failure is a bug in Kiln and throws InternalError with file:line.
#define KILN_CHECK(cond, ...)                                                       \
  do {                                                                              \
    if (!(cond)) [[unlikely]]                                                       \
      ::kiln::detail::check_failed(__FILE__, __LINE__, #cond,                       \
                                   ::kiln::str_cat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)
