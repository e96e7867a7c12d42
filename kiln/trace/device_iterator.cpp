#include "kiln/trace/device_iterator.h"

#include "kiln/core/check.h"
#include "kiln/core/str_cat.h"
#include "kiln/data/iterator_state.h"
#include "kiln/data/transforms/prefetch_to_device.h"

namespace kiln::trace {
namespace {

data::DevicePrefetch device_prefetch(const data::Dataset& dataset) {
  std::optional<data::DevicePrefetch> p = data::device_prefetch_of(dataset);
  if (!p)
    KILN_THROW(ValueError, "[DeviceIterator] the dataset does not end with prefetch_to_device. Hint: add "
               ".prefetch_to_device(device) as its last step, or iterate it on the host with iterator().");
  return *p;
}

}  // namespace

std::string DeviceBatch::shapes_string() const {
  std::string out = "(";
  for (size_t i = 0; i < shapes.size(); ++i) out += str_cat(i > 0 ? ", " : "", shapes[i]);
  return out + ")";
}

DeviceIterator::DeviceIterator(const data::Dataset& dataset, uint64_t epoch, Split split)
    : DeviceIterator(device_prefetch(dataset), epoch, std::move(split)) {}

DeviceIterator::DeviceIterator(const data::DevicePrefetch& prefetch, uint64_t epoch, Split split)
    : device_(prefetch.device), buffer_size_(static_cast<size_t>(prefetch.buffer_size)), split_(std::move(split)),
      host_(prefetch.host_input.iterator(epoch)) {}

DeviceIterator::Queued DeviceIterator::place(data::Element element) const {
  Queued q;
  for (const HostTensor& c : element) q.batch.shapes.push_back(c.shape());
  std::vector<data::Element> parts;
  if (split_) parts = split_(element);
  else parts.push_back(element);
  for (const data::Element& part : parts) {
    std::vector<runtime::Buffer>& buffers = q.batch.replicas.emplace_back();
    for (const HostTensor& c : part) buffers.push_back(device_->to_device(c));  // queued on the transfer stream
  }
  q.host = std::move(element);
  return q;
}

void DeviceIterator::fill() {
  while (!exhausted_ && queue_.size() <= buffer_size_) {
    std::optional<data::Element> e = host_.next();
    if (!e) {
      exhausted_ = true;
      break;
    }
    queue_.push_back(place(std::move(*e)));
  }
}

std::optional<DeviceBatch> DeviceIterator::next() {
  fill();
  if (queue_.empty()) return std::nullopt;
  DeviceBatch out = std::move(queue_.front().batch);
  queue_.pop_front();  // buffer_size elements stay queued: their copies overlap the step on this one
  return out;
}

std::vector<uint8_t> DeviceIterator::save() {
  data::StateWriter w;
  w.write_tag("prefetch_to_device");
  const std::vector<uint8_t> host = host_.save();
  w.write_string(std::string_view(reinterpret_cast<const char*>(host.data()), host.size()));
  w.write_bool(exhausted_);
  w.write_u64(queue_.size());
  for (const Queued& q : queue_) w.write_element(q.host);
  return w.take();
}

void DeviceIterator::restore(std::span<const uint8_t> state) {
  data::StateReader r(state);
  r.expect_tag("prefetch_to_device");
  const std::string host = r.read_string();
  host_.restore(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(host.data()), host.size()));
  exhausted_ = r.read_bool();
  queue_.clear();
  for (uint64_t n = r.read_u64(); n > 0; --n) queue_.push_back(place(r.read_element()));
}

}  // namespace kiln::trace
