// CSVLogger: one CSV row per epoch (epoch, then the logs' names sorted), as Keras writes it.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "kiln/keras/callbacks/callback.h"

namespace kiln::keras {

struct CSVLoggerOptions {
  std::string separator = ",";
  bool append = false;
};

class CSVLogger : public Callback {
 public:
  explicit CSVLogger(std::string filename, CSVLoggerOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

 private:
  std::string filename_;
  CSVLoggerOptions o_;
  std::shared_ptr<std::ofstream> file_;  // shared: callbacks are copied into handles
  std::vector<std::string> keys_;
};

/// keras.callbacks.LearningRateScheduler: sets the optimizer's learning rate at each epoch
/// begin to schedule(epoch, current_lr).
class LearningRateScheduler : public Callback {
 public:
  using Schedule = std::function<double(int epoch, double lr)>;
  explicit LearningRateScheduler(Schedule schedule) : schedule_(std::move(schedule)) {}
  void on_epoch_begin(int epoch, const Logs& logs) override;

 private:
  Schedule schedule_;
};

}  // namespace kiln::keras
