// Normalization: the statistics broadcast over the input; adapt() runs Welford's update in
// f64 over every example (so batches may come in any sizes and the result does not depend on
// how the data was split).
#include "kiln/keras/layers/normalization.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "kiln/core/check.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon()

// Running per-index statistics.
struct Welford {
  std::vector<double> count, mean, m2;
  explicit Welford(size_t n) : count(n), mean(n), m2(n) {}
  void add(size_t i, double x) {
    count[i] += 1;
    const double d = x - mean[i];
    mean[i] += d / count[i];
    m2[i] += d * (x - mean[i]);
  }
};

std::vector<double> flat_numbers(const nlohmann::json& v, const char* where) {
  std::vector<double> out;
  if (v.is_number()) return {v.get<double>()};
  if (!v.is_array()) KILN_THROW(ConfigError, "[", where, "] expected a number or a list of numbers, received ", v.dump(), ".");
  for (const auto& e : v) {
    const std::vector<double> inner = flat_numbers(e, where);
    out.insert(out.end(), inner.begin(), inner.end());
  }
  return out;
}

}  // namespace

Normalization::Normalization(NormalizationOptions options)
    : Layer(options.name, options.input_shape, options.dtype), options_(std::move(options)) {
  const std::string at = options_.name.empty() ? "Normalization" : options_.name;
  if (options_.mean.has_value() != options_.variance.has_value())
    KILN_THROW(ValueError, "[", at, "] pass both mean and variance, or neither (adapt() learns them).");
  if (options_.variance)
    for (double v : *options_.variance)
      if (!(v >= 0)) KILN_THROW(ValueError, "[", at, "] variance must be non-negative, received ", v, ".");
}

std::vector<int64_t> Normalization::kept_axes(const Dims& input_shape) const {
  std::vector<int64_t> kept;
  if (!options_.axis) return kept;
  const auto rank = static_cast<int64_t>(input_shape.size()) + 1;  // with the batch axis
  for (int a : *options_.axis) {
    const int64_t full = a < 0 ? a + rank : a;
    if (full < 1 || full >= rank)
      KILN_THROW(ValueError, "[", name(), "] axis ", a, " is not a per-example axis of an input of rank ", rank,
                 " (the batch axis 0 cannot be kept).");
    kept.push_back(full - 1);
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  return kept;
}

void Normalization::build_weights(const Dims& input_shape) {
  const std::vector<int64_t> kept = kept_axes(input_shape);
  Dims stats;
  broadcast_ = Dims(input_shape.size() + 1, 1);
  for (int64_t a : kept) {
    if (input_shape[static_cast<size_t>(a)] == kNoneDim)
      KILN_THROW(ShapeError, "[", name(), "] kept axis ", a + 1, " has no fixed size in the input ",
                 dims_to_string(input_shape), ".");
    stats.push_back(input_shape[static_cast<size_t>(a)]);
    broadcast_[static_cast<size_t>(a) + 1] = input_shape[static_cast<size_t>(a)];
  }
  int64_t n = 1;
  for (int64_t d : stats) n *= d;
  if (options_.mean) {
    for (const auto* v : {&*options_.mean, &*options_.variance})
      if (v->size() != 1 && static_cast<int64_t>(v->size()) != n)
        KILN_THROW(ValueError, "[", name(), "] mean and variance need 1 or ", n, " values (kept dims ",
                   dims_to_string(stats), "), received ", v->size(), ".");
    return;
  }
  mean_ = add_weight("mean", stats, "zeros", /*trainable=*/false);
  variance_ = add_weight("variance", stats, "ones", /*trainable=*/false);
  // Keras's weight for files of tf.keras 2, which merged adapt states by it; int64 as Keras 2
  // and Keras 3 on TensorFlow write it (Keras 3 on JAX or torch writes int32, read alike).
  count_ = add_weight("count", {}, DType::kI64, "zeros", /*trainable=*/false);
}

Tensor Normalization::call(const Tensor& x, bool /*training*/) {
  const Tensor y = x.dtype() == compute_dtype() ? x : cast(x, compute_dtype());
  auto stat = [&](const Variable& w, const std::optional<std::vector<double>>& fixed) {
    if (!fixed) return reshape(cast(w.read(), compute_dtype()), broadcast_);
    std::vector<float> v(fixed->begin(), fixed->end());
    const Tensor t = constant(HostTensor::from_vector<float>({static_cast<int64_t>(v.size())}, v));
    return cast(v.size() == 1 ? reshape(t, Dims(broadcast_.size(), 1)) : reshape(t, broadcast_), compute_dtype());
  };
  const Tensor mean = stat(mean_, options_.mean);
  const Tensor scale = maximum(sqrt(stat(variance_, options_.variance)), kEpsilon);
  return options_.invert ? mean + y * scale : (y - mean) / scale;
}

void Normalization::set_statistics(const std::vector<double>& mean, const std::vector<double>& variance,
                                   int64_t count) {
  auto host = [&](const std::vector<double>& v, const Variable& w) {
    std::vector<float> f(v.begin(), v.end());
    return Tensor(HostTensor::from_vector<float>(w.read().dims(), f).astype(w.read().dtype()));
  };
  mean_.assign(host(mean, mean_));
  variance_.assign(host(variance, variance_));
  count_.assign(Tensor(HostTensor::scalar<int64_t>(count)));
}

void Normalization::adapt(const HostTensor& data) {
  if (data.rank() < 1 || data.dims()[0] < 1)
    KILN_THROW(ShapeError, "[", name().empty() ? "Normalization" : name(), "] adapt expects examples along axis 0, ",
               "received ", data.shape(), ".");
  // The whole array as one batch: the Dataset path.
  adapt(data::Dataset::from_tensor_slices(std::vector<HostTensor>{data}).batch(data.dims()[0]));
}

void Normalization::adapt(const data::Dataset& dataset, std::optional<int64_t> steps) {
  // A layer shared into a model forwards to the model's copy (layer.h); adapt that one.
  auto& shared = const_cast<Normalization&>(self_as<Normalization>());
  if (&shared != this) return shared.adapt(dataset, steps);
  if (options_.mean)
    KILN_THROW(ValueError, "[", name().empty() ? "Normalization" : name(), "] cannot adapt: mean and variance were ",
               "given (Keras refuses this too).");
  data::Iterator it = dataset.iterator();
  std::optional<Welford> stats;
  Dims example;
  std::vector<int64_t> kept;
  for (int64_t step = 0; !steps || step < *steps; ++step) {
    std::optional<data::Element> e = it.next();
    if (!e) break;
    if (e->empty()) KILN_THROW(ValueError, "[", name(), "] adapt received an element without components.");
    const HostTensor batch = (*e)[0].astype(DType::kF64);
    if (batch.rank() < 1)
      KILN_THROW(ShapeError, "[", name(), "] adapt expects batches of examples, received ", batch.shape(), ".");
    const Dims ex(batch.dims().begin() + 1, batch.dims().end());
    if (!stats) {
      example = ex;
      if (!built()) build(example);
      kept = kept_axes(example);
      int64_t n = 1;
      for (int64_t a : kept) n *= example[static_cast<size_t>(a)];
      stats.emplace(static_cast<size_t>(n));
    } else if (ex != example) {
      KILN_THROW(ShapeError, "[", name(), "] adapt's batches must share their example shape: ",
                 dims_to_string(example), " then ", dims_to_string(ex), ".");
    }
    // The kept index of each element: mixed radix over the kept dims of its position.
    const std::span<const double> v = batch.data<double>();
    std::vector<int64_t> stride(example.size(), 1);
    for (size_t d = example.size(); d-- > 1;) stride[d - 1] = stride[d] * example[d];
    int64_t per_example = 1;
    for (int64_t d : example) per_example *= d;
    for (size_t i = 0; i < v.size(); ++i) {
      const auto within = static_cast<int64_t>(i) % std::max<int64_t>(per_example, 1);
      int64_t k = 0;
      for (int64_t a : kept) k = k * example[static_cast<size_t>(a)] + (within / stride[static_cast<size_t>(a)]) % example[static_cast<size_t>(a)];
      stats->add(static_cast<size_t>(k), v[i]);
    }
  }
  if (!stats || stats->count.empty() || stats->count[0] == 0)
    KILN_THROW(ValueError, "[", name(), "] adapt received no examples.");
  std::vector<double> variance(stats->m2.size());
  for (size_t i = 0; i < variance.size(); ++i) variance[i] = stats->m2[i] / stats->count[i];
  // Every kept index saw the same number of values (tf.keras 2's count: the product of the
  // reduced axes' sizes, summed over the batches).
  set_statistics(stats->mean, variance, static_cast<int64_t>(stats->count[0]));
}

std::string Normalization::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["axis"] = options_.axis ? nlohmann::json(*options_.axis) : nlohmann::json(nullptr);
  j["mean"] = options_.mean ? nlohmann::json(*options_.mean) : nlohmann::json(nullptr);
  j["variance"] = options_.variance ? nlohmann::json(*options_.variance) : nlohmann::json(nullptr);
  j["invert"] = options_.invert;
  return j.dump();
}

constexpr internal::ConfigKey kNormalizationKeys[] = {{"axis"}, {"mean"}, {"variance"}, {"invert"}};
Normalization Normalization::from_config(const std::string& config_json) {
  const char* where = "Normalization.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kNormalizationKeys}, "Normalization");
  NormalizationOptions o = internal::guarded(where, [&] {
    NormalizationOptions r{.input_shape = internal::input_shape_from(j), .name = j.value("name", "")};
    if (j.contains("axis")) {
      const nlohmann::json& a = j["axis"];
      if (a.is_null()) r.axis = std::nullopt;
      else if (a.is_number_integer()) r.axis = std::vector<int>{a.get<int>()};
      else r.axis = a.get<std::vector<int>>();
    }
    if (j.contains("mean") && !j["mean"].is_null()) r.mean = flat_numbers(j["mean"], where);
    if (j.contains("variance") && !j["variance"].is_null()) r.variance = flat_numbers(j["variance"], where);
    r.invert = j.value("invert", false);
    return r;
  });
  Normalization l(std::move(o));
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
