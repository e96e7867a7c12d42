// Handle<T>: a shared pointer to a polymorphic Keras object (layer, loss, optimizer, metric,
// callback) that converts from any subclass value, so options read like Keras:
// `.optimizer = Adam()`, `Sequential({Flatten(), Dense(10)})`. A type with handle_target()
// (Layer) decides itself what a handle of it holds: a layer the user holds joins the model as
// that same layer, as in Keras.
#pragma once

#include <concepts>
#include <memory>
#include <type_traits>
#include <utility>

namespace kiln::keras {

template <typename Base>
class Handle {
 public:
  Handle() = default;
  /// Takes a subclass value: a temporary moves into shared storage; an lvalue is copied, or
  /// shared when its type says so (Layer::handle_target).
  template <typename T>
    requires std::derived_from<std::remove_cvref_t<T>, Base>
  Handle(T&& value) : ptr_(adopt(std::forward<T>(value))) {}  // NOLINT: implicit on purpose
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
  template <typename T>
  static std::shared_ptr<Base> adopt(T&& value) {
    using D = std::remove_cvref_t<T>;
    if constexpr (requires { std::forward<T>(value).template handle_target<D>(); })
      return std::forward<T>(value).template handle_target<D>();
    else
      return std::make_shared<D>(std::forward<T>(value));
  }

  std::shared_ptr<Base> ptr_;
};

}  // namespace kiln::keras
