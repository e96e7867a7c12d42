// Handle<T>: a shared pointer to a polymorphic Keras object (layer, loss, optimizer, metric,
// callback) that converts from any subclass value, so options read like Keras:
// `.optimizer = Adam()`, `Sequential({Flatten(), Dense(10)})`.
#pragma once

#include <concepts>
#include <memory>

namespace kiln::keras {

template <typename Base>
class Handle {
 public:
  Handle() = default;
  /// Takes a subclass value (moved into shared storage).
  template <typename T>
    requires std::derived_from<T, Base>
  Handle(T value) : ptr_(std::make_shared<T>(std::move(value))) {}  // NOLINT: implicit on purpose
  /// Shares an existing object (keep your own shared_ptr to inspect it after fit).
  template <typename T>
    requires std::derived_from<T, Base>
  Handle(std::shared_ptr<T> ptr) : ptr_(std::move(ptr)) {}  // NOLINT

  Base* operator->() const { return ptr_.get(); }
  Base& operator*() const { return *ptr_; }
  Base* get() const { return ptr_.get(); }
  const std::shared_ptr<Base>& shared() const { return ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  std::shared_ptr<Base> ptr_;
};

}  // namespace kiln::keras
