// ProgbarLogger: Keras's "Epoch 1/5" + progress bar, plus samples/s and the share of step time
// spent waiting for input (the pipeline statistics), so a starving pipeline is visible.
#pragma once

#include <memory>

#include "kiln/keras/callbacks/callback.h"
#include "kiln/keras/callbacks/progbar.h"

namespace kiln::keras {

class ProgbarLogger : public Callback {
 public:
  /// Writes to std::cout; redraws in place only when stdout is a terminal and verbose == 1.
  ProgbarLogger();
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_batch_end(int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;

 private:
  bool interactive() const;
  std::unique_ptr<Progbar> bar_;
  int64_t seen_ = 0;
  Logs last_;
  bool in_fit_ = false;
};

}  // namespace kiln::keras
