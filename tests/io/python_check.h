// Runs a Python check script with Debian's /usr/bin/python3 (which has numpy and h5py), so
// tests can prove files interoperate with the Python tools that Keras users have.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace kiln::io::testing {

/// True if /usr/bin/python3 can import `modules` (e.g. "h5py, numpy").
inline bool python_has(const std::string& modules) {
  return std::system(("/usr/bin/python3 -c 'import " + modules + "' 2>/dev/null").c_str()) == 0;
}

/// Python that defines save_attributes(group, name, data): tf.keras 2.x's
/// hdf5_format.save_attributes_to_hdf5_group, which splits an attribute over 64512-byte
/// chunks (name0, name1, ...). Scripts that write Keras-style files start with it.
inline constexpr const char* kKerasSaveAttributesPy = R"PY(
import numpy as np
LIMIT = 64512
def save_attributes(group, name, data):
    data_npy = np.asarray(data)
    n = 1
    chunks = np.array_split(data_npy, n)
    while any(x.nbytes > LIMIT for x in chunks):
        n += 1
        chunks = np.array_split(data_npy, n)
    if n > 1:
        for i, c in enumerate(chunks):
            group.attrs['%s%d' % (name, i)] = c
    else:
        group.attrs[name] = data
)PY";

/// Writes `script` to `script_path` and runs it with `args`; returns the exit status (0 = the
/// script's asserts passed). Output goes to the test log.
inline int run_python(const std::string& script_path, const std::string& script,
                      const std::string& args) {
  std::ofstream(script_path) << script;
  return std::system(("/usr/bin/python3 " + script_path + " " + args).c_str());
}

}  // namespace kiln::io::testing
