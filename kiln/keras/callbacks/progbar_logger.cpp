// ProgbarLogger: drives a Progbar from fit's and evaluate's hooks.
#include "kiln/keras/callbacks/progbar_logger.h"

#include <cstdio>
#include <iostream>

#include "kiln/keras/models/model.h"

namespace kiln::keras {

ProgbarLogger::ProgbarLogger() = default;

bool ProgbarLogger::interactive() const { return params_.verbose == 1 && stdout_is_terminal(); }

void ProgbarLogger::on_epoch_begin(int epoch, const Logs& /*logs*/) {
  in_fit_ = true;
  std::cout << "Epoch " << epoch + 1 << "/" << params_.epochs << std::endl;
  bar_ = std::make_unique<Progbar>(params_.steps, std::cout, interactive());
  seen_ = 0;
}

void ProgbarLogger::on_train_batch_end(int64_t batch, const Logs& logs) {
  seen_ = batch + 1;
  last_ = logs;
  if (bar_) bar_->update(seen_, logs, /*finalize=*/false);
}

void ProgbarLogger::on_epoch_end(int /*epoch*/, const Logs& logs) {
  if (!bar_) return;
  const EpochStats& s = model_->last_epoch_stats();
  char extra[96];
  std::snprintf(extra, sizeof extra, " - %.0f samples/s - input wait %.1f%%",
                s.train_seconds > 0 ? static_cast<double>(s.samples) / s.train_seconds : 0.0,
                100.0 * s.input_wait_fraction);
  bar_->update(seen_, logs, /*finalize=*/true, extra);
  bar_.reset();
}

void ProgbarLogger::on_test_begin(const Logs& /*logs*/) {
  if (in_fit_) return;  // validation inside fit shows only in the epoch's final line
  bar_ = std::make_unique<Progbar>(params_.steps, std::cout, interactive());
  seen_ = 0;
}

void ProgbarLogger::on_test_batch_end(int64_t batch, const Logs& logs) {
  if (in_fit_ || !bar_) return;
  seen_ = batch + 1;
  bar_->update(seen_, logs, /*finalize=*/false);
}

void ProgbarLogger::on_test_end(const Logs& logs) {
  if (in_fit_ || !bar_) return;
  bar_->update(seen_, logs, /*finalize=*/true);
  bar_.reset();
}

}  // namespace kiln::keras
