// TrainingState: where fit stands besides the variables (epoch, steps of it applied, the
// input iterator's position), which checkpoints record and BackupAndRestore resumes from.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::keras {

struct TrainingState {
  int epoch = 0;              // the epoch in progress (0-based)
  int64_t step_in_epoch = 0;  // steps of that epoch already applied
  /// data::Iterator::save() of the training input at that point; empty when not recorded.
  std::vector<uint8_t> iterator_state;
};

}  // namespace kiln::keras
