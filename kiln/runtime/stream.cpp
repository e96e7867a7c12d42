#include "kiln/runtime/stream.h"

#include <utility>

namespace kiln::runtime {

Event Event::pending() {
  Event e;
  e.state_ = std::make_shared<State>();
  return e;
}

bool Event::ready() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

void Event::wait() const {
  if (!state_) return;
  std::unique_lock lock(state_->mutex);
  state_->done_cv.wait(lock, [&] { return state_->done; });
  if (state_->error) std::rethrow_exception(state_->error);
}

void Event::complete() const { fail(nullptr); }

void Event::fail(std::exception_ptr error) const {
  if (!state_) return;
  std::shared_ptr<const DeviceMarker> marker;  // no longer needed: dropped outside the lock
  {
    std::lock_guard lock(state_->mutex);
    state_->done = true;
    state_->error = std::move(error);
    marker = std::move(state_->marker);
  }
  state_->done_cv.notify_all();
}

void Event::issue(std::shared_ptr<const DeviceMarker> marker) const {
  if (!state_) return;
  {
    std::lock_guard lock(state_->mutex);
    if (state_->done) return;
    state_->marker = std::move(marker);
  }
  state_->done_cv.notify_all();
}

std::shared_ptr<const DeviceMarker> Event::wait_issued() const {
  if (!state_) return nullptr;
  std::unique_lock lock(state_->mutex);
  state_->done_cv.wait(lock, [&] { return state_->done || state_->marker != nullptr; });
  if (state_->error) std::rethrow_exception(state_->error);
  return state_->done ? nullptr : state_->marker;
}

Stream::Stream(std::string name, bool asynchronous) : name_(std::move(name)) {
  if (asynchronous) worker_ = std::thread([this] { run_queue(); });
}

Stream::~Stream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

Event Stream::enqueue(std::function<void()> work) {
  Event done = Event::pending();
  auto item = [this, done, work = std::move(work)] {
    try {
      work();
      done.complete();
    } catch (...) {
      std::exception_ptr error = std::current_exception();
      {
        std::lock_guard lock(mutex_);
        if (!unobserved_) unobserved_ = error;
      }
      done.fail(error);
    }
  };
  if (!asynchronous()) {
    item();
  } else {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(item));
    }
    queue_cv_.notify_one();
  }
  std::lock_guard lock(mutex_);
  last_ = done;
  return done;
}

void Stream::wait_for(const Event& event) {
  enqueue([event] { event.wait(); });
}

void Stream::synchronize() {
  Event last;
  {
    std::lock_guard lock(mutex_);
    last = last_;
  }
  try {
    last.wait();
  } catch (...) {  // reported below as the first unobserved error
  }
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    error = std::exchange(unobserved_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

void Stream::run_queue() {
  for (;;) {
    std::function<void()> item;
    {
      std::unique_lock lock(mutex_);
      queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    item();
  }
}

}  // namespace kiln::runtime
