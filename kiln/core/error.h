// The kiln::Error hierarchy: every failure a user can meet is one of these, and its message
// says where, what is wrong, and how to fix it ("[where] what: expected X, received Y. Hint: ...").
#pragma once

#include <stdexcept>
#include <string>

namespace kiln {

/// Base of every error Kiln throws on purpose.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
  /// A short name of the error class, e.g. "ShapeError".
  virtual const char* kind() const noexcept { return "Error"; }
};

#define KILN_DECLARE_ERROR(Name)                                      \
  class Name : public Error {                                         \
   public:                                                            \
    explicit Name(const std::string& message) : Error(message) {}     \
    const char* kind() const noexcept override { return #Name; }      \
  };

/// Shapes that do not fit together (operands, layers, reshapes, slices).
KILN_DECLARE_ERROR(ShapeError)
/// A dtype an op or layer does not accept, or a mismatch between operands.
KILN_DECLARE_ERROR(DTypeError)
/// The compiler cannot build the program: unsupported op, dynamic shape, bad signature.
KILN_DECLARE_ERROR(CompileError)
/// A planned or attempted allocation does not fit in the device's memory.
KILN_DECLARE_ERROR(OutOfMemoryError)
/// Input data is missing or malformed (dataset files, records, pipeline elements).
KILN_DECLARE_ERROR(DataError)
/// A file cannot be read or written, or its contents are corrupt (models, checkpoints).
KILN_DECLARE_ERROR(IOError)
/// A configuration value is invalid (options, environment variables, configs).
KILN_DECLARE_ERROR(ConfigError)
/// An argument value is out of its domain (negative sizes, unknown names).
KILN_DECLARE_ERROR(ValueError)
/// A broken invariant inside Kiln: a bug to report, never the user's fault.
KILN_DECLARE_ERROR(InternalError)

#undef KILN_DECLARE_ERROR

}  // namespace kiln
