// Decodes TensorBoard event files with tests/io/tfevents_reader.py (Debian's python3-protobuf
// and a schema written apart from Kiln's .proto files), so the writer is checked by a reader
// that shares none of its code.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/io/python_check.h"

namespace kiln::io::testing {

/// [{"file": ..., "events": [{"wall_time", "step", and "file_version" | "summary" | "graph"}]}]
/// for `files`, read through `json_path`; an empty array if the reader fails (it prints why).
inline nlohmann::json decode_event_files(const std::vector<std::string>& files, const std::string& json_path) {
  std::string command = "/usr/bin/python3 " KILN_TFEVENTS_READER " " + json_path;
  for (const std::string& f : files) command += " '" + f + "'";
  if (std::system(command.c_str()) != 0) return nlohmann::json::array();
  return nlohmann::json::parse(std::ifstream(json_path));
}

/// The scalars of decoded events with `tag`, as (step, value) pairs in file order.
inline std::vector<std::pair<int64_t, double>> scalars(const nlohmann::json& events, const std::string& tag) {
  std::vector<std::pair<int64_t, double>> out;
  for (const auto& e : events)
    if (e.contains("summary"))
      for (const auto& v : e["summary"])
        if (v["tag"] == tag && v.contains("simple_value"))
          out.emplace_back(e["step"].get<int64_t>(), v["simple_value"].get<double>());
  return out;
}

}  // namespace kiln::io::testing
