// TensorBoard: the Keras 2 callback that writes event files TensorBoard reads: epoch and batch
// scalars under log_dir/train and log_dir/validation, the learning rate, weight histograms,
// and the compiled train step's graph.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "kiln/keras/callbacks/callback.h"

namespace kiln::io {
class EventFileWriter;
}

namespace kiln::keras {

class Profiler;

/// keras.callbacks.TensorBoard options, with Keras 2.15's defaults.
struct TensorBoardOptions {
  /// "epoch": scalars once per epoch; "batch", or a count N: also `batch_<name>` every N train
  /// steps (the step is the count of train steps, as Keras's _train_counter).
  std::variant<std::string, int64_t> update_freq = std::string("epoch");
  /// Every this many epochs (0: never), a histogram of each weight, tagged as Keras tags it
  /// ("dense/kernel_0/histogram").
  int histogram_freq = 0;
  /// The compiled train step's graph (one node per instruction after the compiler's passes),
  /// written at the first train step.
  bool write_graph = true;
  /// Train steps to profile, {first, last}, 1-based over the whole fit; {0, 0} profiles none.
  /// The Chrome trace goes to log_dir/plugins/profile/<run>/ (see Profiler).
  std::pair<int64_t, int64_t> profile_batch = {0, 0};
};

/// Writes TensorBoard event files (`tensorboard --logdir <log_dir>` shows them; Kiln needs no
/// TensorFlow or TensorBoard to write them). Only the chief worker writes.
///   Scalars, as Keras 2 names them: epoch_<metric> at step = epoch (train/ and, without the
///   val_ prefix, validation/), epoch_learning_rate, batch_<metric> with update_freq, and
///   evaluation_<metric>_vs_iterations in validation/ after each validation run.
class TensorBoard : public Callback {
 public:
  explicit TensorBoard(std::string log_dir = "logs", TensorBoardOptions options = {});
  ~TensorBoard() override;

  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_train_batch_begin(int64_t batch, const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;

  /// The event files written so far (train first), for tests and tools.
  std::vector<std::string> event_files() const;

 private:
  io::EventFileWriter& validation_writer();
  void write_graph();
  void write_histograms(int epoch);

  std::string log_dir_;
  TensorBoardOptions o_;
  int64_t update_every_ = 0;  // train steps between batch scalars; 0 = per epoch only
  int64_t train_step_ = 0;    // train steps run while this callback watched (1-based after one)
  bool graph_written_ = false;
  std::shared_ptr<io::EventFileWriter> train_;
  std::shared_ptr<io::EventFileWriter> validation_;
  std::vector<std::string> files_;
  std::shared_ptr<Profiler> profiler_;  // with profile_batch
};

}  // namespace kiln::keras
