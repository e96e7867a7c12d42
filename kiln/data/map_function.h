// MapFunction: what Dataset::map runs, and how a callable of an element's components becomes
// one. tf.data calls `map(lambda image, label: (...))` with the components as arguments; so does
// Kiln: a callable taking HostTensors runs as it is, one taking kiln::Tensors is traced into a
// compiled program (trace/traced_map.h supplies that adapter).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/data/element.h"

namespace kiln::data {

/// Element -> element (map). May return a HostTensor for a one-component element.
using MapFn = std::function<Element(Element)>;

/// A map function with what Kiln may know about it beyond `fn`.
struct MapFunction {
  /// One element to one element.
  MapFn fn;
  /// Optional: the same function over a whole batch (each component stacked along a new
  /// leading axis), giving the stacked results. map_and_batch then stacks the inputs and makes
  /// one call per batch instead of one per row (tf.data's map vectorization).
  MapFn batched = {};
  /// The output depends on the input alone (MapOptions::stateless), so the map may move past a
  /// shuffle or repeat after it.
  bool stateless = false;
};

/// "[map 'name']" or "[map]": how map errors name the function.
std::string map_stage_name(const std::string& name);
/// Throws DataError when a function of `arity` components is given `element` (another count).
void check_map_arity(const std::string& name, size_t arity, std::span<const HostTensor> element);

namespace map_detail {

/// The parameter types (decayed) of a lambda, functor or function.
template <typename T>
struct Callable : Callable<decltype(&T::operator())> {};
template <typename C, typename R, typename... A>
struct Callable<R (C::*)(A...) const> {
  using Args = std::tuple<std::decay_t<A>...>;
};
template <typename C, typename R, typename... A>
struct Callable<R (C::*)(A...)> {
  using Args = std::tuple<std::decay_t<A>...>;
};
template <typename R, typename... A>
struct Callable<R (*)(A...)> {
  using Args = std::tuple<std::decay_t<A>...>;
};
template <typename R, typename... A>
struct Callable<R(A...)> {
  using Args = std::tuple<std::decay_t<A>...>;
};

template <typename T>
struct IsTuple : std::false_type {};
template <typename... T>
struct IsTuple<std::tuple<T...>> : std::true_type {};
template <typename A, typename B>
struct IsTuple<std::pair<A, B>> : std::true_type {};

/// Calls `fn` with components[0..N) as its arguments.
template <size_t N, typename F, typename Components>
decltype(auto) call_with(F& fn, Components& components) {
  return [&]<size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
    return fn(components[I]...);
  }(std::make_index_sequence<N>{});
}

/// A function's result as a list of `Value`s: one value, a tuple or pair of them, or a vector.
template <typename Value, typename R>
std::vector<Value> to_values(R&& result) {
  using T = std::decay_t<R>;
  if constexpr (IsTuple<T>::value) {
    return std::apply([](auto&&... v) { return std::vector<Value>{Value(std::forward<decltype(v)>(v))...}; },
                      std::forward<R>(result));
  } else if constexpr (std::is_same_v<T, std::vector<Value>>) {
    return std::forward<R>(result);
  } else {
    return {Value(std::forward<R>(result))};
  }
}

}  // namespace map_detail

/// How a callable whose parameters are all `Component`s becomes a MapFunction. Defined here for
/// HostTensor; kiln/trace/traced_map.h defines it for kiln::Tensor.
template <typename Component>
struct ComponentMapAdapter;

template <>
struct ComponentMapAdapter<HostTensor> {
  template <size_t N, typename F>
  static MapFunction make(F fn, const std::string& name) {
    return MapFunction{.fn = [fn = std::move(fn), name](Element e) -> Element {
      check_map_arity(name, N, e);
      using R = decltype(map_detail::call_with<N>(fn, e));
      if constexpr (std::is_convertible_v<R, Element> && !map_detail::IsTuple<std::decay_t<R>>::value) {
        return map_detail::call_with<N>(fn, e);
      } else {
        return Element(map_detail::to_values<HostTensor>(map_detail::call_with<N>(fn, e)));
      }
    }};
  }
};

/// The MapFunction for a callable of the element's components (all of one type).
template <typename F>
MapFunction make_map_function(F&& fn, const std::string& name) {
  using Args = typename map_detail::Callable<std::decay_t<F>>::Args;
  constexpr size_t n = std::tuple_size_v<Args>;
  static_assert(n >= 1, "a map function takes the element's components as its arguments");
  using First = std::tuple_element_t<0, Args>;
  static_assert([]<size_t... I>(std::index_sequence<I...>) {
    return (std::is_same_v<std::tuple_element_t<I, Args>, First> && ...);
  }(std::make_index_sequence<n>{}), "a map function's parameters must all be HostTensor or all kiln::Tensor");
  static_assert(requires { sizeof(ComponentMapAdapter<First>); },
                "map: parameters of this type need their adapter; for kiln::Tensor include "
                "kiln/trace/traced_map.h (or kiln/kiln.h)");
  return ComponentMapAdapter<First>::template make<n>(std::decay_t<F>(std::forward<F>(fn)), name);
}

}  // namespace kiln::data
