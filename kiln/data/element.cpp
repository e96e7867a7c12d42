// Element storage (inline, then spilled to the heap) and string <-> u8 tensor helpers.
#include "kiln/data/element.h"

#include <algorithm>
#include <cstring>

#include "kiln/core/check.h"

namespace kiln::data {

Element::Element(std::initializer_list<HostTensor> components) {
  for (const HostTensor& t : components) push_back(t);
}

Element::Element(std::vector<HostTensor> components) {
  for (HostTensor& t : components) push_back(std::move(t));
}

Element& Element::operator=(Element&& other) noexcept {
  if (this == &other) return *this;
  for (size_t i = 0; i < std::min(size_, kInlineComponents); ++i) inline_[i] = HostTensor();
  heap_ = std::move(other.heap_);
  const size_t in_use = other.spilled() ? 0 : other.size_;
  for (size_t i = 0; i < in_use; ++i) inline_[i] = std::move(other.inline_[i]);
  size_ = other.size_;
  other.heap_.clear();
  other.size_ = 0;
  return *this;
}

const HostTensor& Element::at(size_t i) const {
  if (i >= size_)
    KILN_THROW(ValueError, "[Element] component ", i, " requested from an element with ", size_,
               " components ", shapes_string(), ".");
  return data()[i];
}

void Element::push_back(HostTensor t) {
  if (size_ < kInlineComponents) {
    inline_[size_++] = std::move(t);
    return;
  }
  if (size_ == kInlineComponents) {
    heap_.reserve(2 * kInlineComponents);
    for (HostTensor& c : inline_) heap_.push_back(std::move(c));
    inline_ = {};
  }
  heap_.push_back(std::move(t));
  ++size_;
}

void Element::append(Element other) {
  for (HostTensor& t : other) push_back(std::move(t));
}

std::string Element::shapes_string() const { return kiln::data::shapes_string({begin(), end()}); }

std::string shapes_string(std::span<const HostTensor> components) {
  std::string s = "(";
  for (size_t i = 0; i < components.size(); ++i) {
    if (i > 0) s += ", ";
    s += components[i].defined() ? components[i].shape().to_string() : std::string("undefined");
  }
  return s + ")";
}

HostTensor string_tensor(std::string_view text) {
  HostTensor t(Shape(DType::kU8, {static_cast<int64_t>(text.size())}));
  if (!text.empty()) std::memcpy(t.raw_data(), text.data(), text.size());
  return t;
}

std::string tensor_string(const HostTensor& t) {
  if (t.is_string() && t.rank() == 0) return t.data<std::string>()[0];
  auto bytes = t.data<uint8_t>();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace kiln::data
