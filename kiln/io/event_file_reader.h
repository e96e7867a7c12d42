// Reading TensorBoard event files back (events.out.tfevents.*): the scalars a run logged, as
// TensorBoard's scalars dashboard reads them, so Kiln's tools need no TensorFlow.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::io {

/// One logged scalar (Summary.Value.simple_value).
struct ScalarEvent {
  std::string tag;  // "epoch_loss", "batch_accuracy", ...
  int64_t step = 0;
  double value = 0;
  double wall_time = 0;  // unix seconds
};

/// Every scalar of one event file, in file order. Checks each record's length and data
/// CRC-32C and that the first event names the format ("brain.Event:..."). Throws IOError
/// naming the file and the record's byte offset for a truncated record, a CRC mismatch or an
/// event that does not parse. Histograms and graphs are skipped.
std::vector<ScalarEvent> read_event_scalars(const std::string& path);

/// The event files (events.out.tfevents.*) directly inside `dir`, sorted by name (so by
/// creation time for one host); empty when there are none or `dir` does not exist.
std::vector<std::string> list_event_files(const std::string& dir);

}  // namespace kiln::io
