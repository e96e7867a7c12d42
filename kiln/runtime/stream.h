// Event and Stream: ordering of device work. A Stream runs its work items in order, on its own
// thread (asynchronous: a transfer or compute queue, as a CUDA stream is) or inline on the
// caller's thread (a host device, where there is nothing to overlap). An Event marks the end of
// one work item; a Buffer carries the Event of the work that produces it, and whoever reads the
// buffer waits on it first (PjRt's definition events, CUDA's cudaEvent_t).
//
// Work a device runs on its own queue (a copy or kernel on a CUDA stream) is "issued" before
// it is done: the Event then carries a DeviceMarker (a recorded CUevent) that other work of
// the device can wait on in the device's queue (cuStreamWaitEvent), so the host never blocks
// on the dependency; complete() still follows when the work has finished, for host waiters.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace kiln::runtime {

/// What a device's queue can wait on without the host (a recorded CUevent). Devices downcast
/// it to their own kind; a marker of another kind means nothing to them.
class DeviceMarker {
 public:
  virtual ~DeviceMarker() = default;
};

/// Completion of one work item. A default Event is already complete. Copies share the state.
class Event {
 public:
  Event() = default;
  /// An event that completes when complete() or fail() is called on it (or a copy).
  static Event pending();

  /// True once the work finished (successfully or not).
  bool ready() const;
  /// Blocks until the work finished; rethrows the error it failed with.
  void wait() const;

  void complete() const;
  void fail(std::exception_ptr error) const;

  /// The work is queued on a device and `marker` fires there when it finishes (complete() or
  /// fail() must still follow). Wakes wait_issued().
  void issue(std::shared_ptr<const DeviceMarker> marker) const;
  /// Blocks until the work is issued or done, not until it finished on the device. Returns
  /// the marker while the work may still be running there, null once it is done (or was never
  /// issued to a device); rethrows the error it failed with.
  std::shared_ptr<const DeviceMarker> wait_issued() const;

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable done_cv;  // signals issue() as well as done
    bool done = false;
    std::exception_ptr error;
    std::shared_ptr<const DeviceMarker> marker;
  };
  std::shared_ptr<State> state_;
};

class Stream {
 public:
  /// `asynchronous`: work runs in order on a thread of the stream's own; otherwise enqueue()
  /// runs it before returning.
  Stream(std::string name, bool asynchronous);
  ~Stream();  // finishes the queued work first
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  const std::string& name() const { return name_; }
  bool asynchronous() const { return worker_.joinable(); }

  /// Queues `work` after everything queued before; the returned Event completes when it has
  /// run, or fails with what it threw (later work still runs, as on a CUDA stream the error
  /// is reported where it is waited for).
  Event enqueue(std::function<void()> work);
  /// Later work waits for `event` (an event of another stream, say) before it starts; if the
  /// event failed, that work fails with its error.
  void wait_for(const Event& event);
  /// Blocks until all queued work has run; rethrows the first error of the work run since the
  /// last synchronize() (so an error is never lost, even when no one waited on its event).
  void synchronize();

 private:
  void run_queue();

  std::string name_;
  std::mutex mutex_;
  std::condition_variable queue_cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  Event last_;
  std::exception_ptr unobserved_;
  std::thread worker_;
};

}  // namespace kiln::runtime
