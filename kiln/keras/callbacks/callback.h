// Callback: hooks fit/evaluate call around epochs and steps (keras.callbacks.Callback), and
// LambdaCallback for one-off hooks written inline.
#pragma once

#include <cstdint>
#include <functional>

#include "kiln/keras/handle.h"
#include "kiln/keras/trainer/logs.h"

namespace kiln::keras {

class Model;

/// What fit tells callbacks before training (Keras callback.params).
struct TrainingParams {
  int epochs = 1;
  int64_t steps = -1;  // steps per epoch; -1 when the dataset decides
  int64_t batch_size = 0;
  int verbose = 1;
};

class Callback {
 public:
  virtual ~Callback() = default;
  void set_model(Model* model) { model_ = model; }
  void set_params(const TrainingParams& params) { params_ = params; }
  Model* model() const { return model_; }
  const TrainingParams& params() const { return params_; }

  virtual void on_train_begin(const Logs& /*logs*/) {}
  virtual void on_train_end(const Logs& /*logs*/) {}
  virtual void on_epoch_begin(int /*epoch*/, const Logs& /*logs*/) {}
  virtual void on_epoch_end(int /*epoch*/, const Logs& /*logs*/) {}
  /// Once per step, also with steps_per_execution > 1 (the logs are then buffered).
  virtual void on_train_batch_begin(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_train_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_test_begin(const Logs& /*logs*/) {}
  virtual void on_test_end(const Logs& /*logs*/) {}
  virtual void on_test_batch_begin(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_test_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {}

 protected:
  Model* model_ = nullptr;
  TrainingParams params_;
};

using CallbackHandle = Handle<Callback>;

struct LambdaCallbackOptions {
  std::function<void(int epoch, const Logs&)> on_epoch_begin = nullptr;
  std::function<void(int epoch, const Logs&)> on_epoch_end = nullptr;
  std::function<void(int64_t batch, const Logs&)> on_train_batch_begin = nullptr;
  std::function<void(int64_t batch, const Logs&)> on_train_batch_end = nullptr;
  std::function<void(const Logs&)> on_train_begin = nullptr;
  std::function<void(const Logs&)> on_train_end = nullptr;
};

/// keras.callbacks.LambdaCallback: `LambdaCallback({.on_epoch_end = [](int e, const Logs& l) {...}})`.
class LambdaCallback : public Callback {
 public:
  explicit LambdaCallback(LambdaCallbackOptions options) : o_(std::move(options)) {}
  void on_epoch_begin(int epoch, const Logs& logs) override { if (o_.on_epoch_begin) o_.on_epoch_begin(epoch, logs); }
  void on_epoch_end(int epoch, const Logs& logs) override { if (o_.on_epoch_end) o_.on_epoch_end(epoch, logs); }
  void on_train_batch_begin(int64_t b, const Logs& logs) override {
    if (o_.on_train_batch_begin) o_.on_train_batch_begin(b, logs);
  }
  void on_train_batch_end(int64_t b, const Logs& logs) override {
    if (o_.on_train_batch_end) o_.on_train_batch_end(b, logs);
  }
  void on_train_begin(const Logs& logs) override { if (o_.on_train_begin) o_.on_train_begin(logs); }
  void on_train_end(const Logs& logs) override { if (o_.on_train_end) o_.on_train_end(logs); }

 private:
  LambdaCallbackOptions o_;
};

/// Forwards every hook to a list of callbacks in order (internal to fit/evaluate).
class CallbackList {
 public:
  CallbackList(std::vector<CallbackHandle> callbacks, Model* model, const TrainingParams& params);
  template <typename Hook, typename... Args>
  void call(Hook hook, const Args&... args) {
    for (auto& c : callbacks_) ((*c).*hook)(args...);
  }
  /// New parameters for every callback (fit learns an epoch's steps after the first one).
  void set_params(const TrainingParams& params) {
    for (auto& c : callbacks_) c->set_params(params);
  }

 private:
  std::vector<CallbackHandle> callbacks_;
};

}  // namespace kiln::keras
