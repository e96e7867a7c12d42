// CategoryEncoding and Discretization: one_hot of the ids (then a max or a sum over the
// example's values), and bucket ids as a count of the boundaries at or below each value.
#include "kiln/keras/layers/category_encoding.h"

#include <algorithm>
#include <cmath>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace internal {

Dims encoded_shape(const std::string& layer, const Dims& input_shape, int64_t depth, const std::string& mode) {
  if (mode == "int") return input_shape;
  if (input_shape.empty()) return {depth};
  if (mode == "one_hot") {
    Dims out = input_shape;
    if (out.back() == 1) out.back() = depth;
    else out.push_back(depth);
    return out;
  }
  if (input_shape.size() > 1)
    KILN_THROW(ShapeError, "[", layer, "] output_mode \"", mode, "\" takes ids of per-example shape (k), received ",
               dims_to_string(input_shape), " (Keras's maximum output rank is 2).");
  return {depth};
}

Tensor encode_categories(const Tensor& ids, int64_t depth, const std::string& mode, DType dtype) {
  // Per-example () is one id per example, as (1).
  const Tensor x = ids.rank() == 1 ? expand_dims(ids, 1) : ids;
  const Tensor hot = one_hot(cast(x, DType::kI32), depth, dtype);  // [..., k, depth]
  if (mode == "one_hot") return x.dim(x.rank() - 1) == 1 ? squeeze(hot, hot.rank() - 2) : hot;
  if (mode == "multi_hot") return reduce_max(hot, {hot.rank() - 2});
  if (mode == "count") return reduce_sum(hot, {hot.rank() - 2});
  KILN_THROW(ValueError, "[", "encode_categories", "] unknown output_mode \"", mode, "\".");
}

bool names_integer_dtype(const std::string& config_json) {
  const nlohmann::json j = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("dtype")) return false;
  const nlohmann::json* d = &j["dtype"];
  // Keras 3's {"class_name": "DTypePolicy", "config": {"name": "int64"}} (a quantized policy's
  // "int8_from_float32" is not a dtype and stays an error of the policy reader).
  if (d->is_object() && d->value("class_name", "") == "DTypePolicy" && d->contains("config") &&
      (*d)["config"].is_object() && (*d)["config"].contains("name"))
    d = &(*d)["config"]["name"];
  if (!d->is_string()) return false;
  for (const char* name : {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
    if (d->get<std::string>() == name) return true;
  return false;
}

}  // namespace internal

namespace {

void check_mode(const std::string& at, const std::string& mode, bool allow_int) {
  if (mode != "one_hot" && mode != "multi_hot" && mode != "count" && !(allow_int && mode == "int"))
    KILN_THROW(ValueError, "[", at, "] output_mode must be ", allow_int ? "\"int\", " : "",
               "\"one_hot\", \"multi_hot\" or \"count\", received \"", mode, "\".");
}

void check_dense(const std::string& at, bool sparse) {
  if (sparse) KILN_THROW(ValueError, "[", at, "] sparse=true is not built: Kiln has no sparse tensors.");
}

}  // namespace

// ---- CategoryEncoding ------------------------------------------------------------------------

CategoryEncoding::CategoryEncoding(int64_t num_tokens, CategoryEncodingOptions options)
    : Layer(options.name, options.input_shape, options.dtype), num_tokens_(num_tokens), options_(std::move(options)) {
  const std::string at = options_.name.empty() ? "CategoryEncoding" : options_.name;
  if (num_tokens < 1) KILN_THROW(ValueError, "[", at, "] num_tokens must be at least 1, received ", num_tokens, ".");
  check_mode(at, options_.output_mode, false);
  check_dense(at, options_.sparse);
}

Dims CategoryEncoding::compute_output_shape(const Dims& input_shape) const {
  return internal::encoded_shape(name(), input_shape, num_tokens_, options_.output_mode);
}

Tensor CategoryEncoding::call(const Tensor& x, bool /*training*/) {
  return internal::encode_categories(x, num_tokens_, options_.output_mode, compute_dtype());
}

std::string CategoryEncoding::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["num_tokens"] = num_tokens_;
  j["output_mode"] = options_.output_mode;
  j["sparse"] = options_.sparse;
  return j.dump();
}

constexpr internal::ConfigKey kCategoryEncodingKeys[] = {{"num_tokens"}, {"output_mode"}, {"sparse", "false"}};
CategoryEncoding CategoryEncoding::from_config(const std::string& config_json) {
  const char* where = "CategoryEncoding.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kCategoryEncodingKeys}, "CategoryEncoding");
  CategoryEncodingOptions o = internal::guarded(where, [&] {
    return CategoryEncodingOptions{.output_mode = j.value("output_mode", "multi_hot"),
                                   .input_shape = internal::input_shape_from(j),
                                   .name = j.value("name", "")};
  });
  CategoryEncoding l(internal::int_field(j, "num_tokens", where), std::move(o));
  l.set_trainable(j.value("trainable", true));
  return l;
}

// ---- Discretization --------------------------------------------------------------------------

namespace {

// Keras 3's quantile summary: values and weights, sorted by value, kept in f32 as Keras does.
struct Summary {
  std::vector<float> values, weights;
};

// Every ceil(n * epsilon)-th sorted value from index int(n * epsilon), each weighing
// max(n * epsilon, 1) (Keras's summarize).
Summary summarize(std::vector<float> v, double epsilon) {
  std::sort(v.begin(), v.end());
  const double increment = static_cast<double>(v.size()) / (1.0 / epsilon);
  const double step = std::max(increment, 1.0);
  Summary s;
  for (size_t i = static_cast<size_t>(increment); i < v.size(); i += static_cast<size_t>(step)) {
    s.values.push_back(v[i]);
    s.weights.push_back(static_cast<float>(step));
  }
  return s;
}

// np.interp: fp at x by linear interpolation in increasing xp, held at the ends.
double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp) {
  if (x <= xp.front()) return fp.front();
  if (x >= xp.back()) return fp.back();
  const size_t hi = static_cast<size_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin());
  const size_t lo = hi - 1;
  return fp[lo] + (fp[hi] - fp[lo]) * (x - xp[lo]) / (xp[hi] - xp[lo]);
}

// The summary resampled at cumulative weight fractions epsilon, 2 epsilon, ..., (Keras's
// compress_summary), unless it is already that small.
Summary compress(const Summary& s, double epsilon) {
  if (static_cast<double>(s.values.size()) * epsilon < 1) return s;
  std::vector<double> cum(s.weights.size()), fraction(s.weights.size()), values(s.values.begin(), s.values.end());
  float total = 0;  // cumsum in the summary's f32
  for (size_t i = 0; i < cum.size(); ++i) cum[i] = total += s.weights[i];
  for (size_t i = 0; i < cum.size(); ++i) fraction[i] = cum[i] / cum.back();
  Summary out;
  double previous = 0;
  const auto count = static_cast<size_t>(std::ceil(1.0 / epsilon));  // np.arange(0, 1, epsilon)
  for (size_t k = 0; k < count; ++k) {
    const double p = epsilon + static_cast<double>(k) * epsilon;
    out.values.push_back(static_cast<float>(interp(p, fraction, values)));
    const double c = interp(p, fraction, cum);
    out.weights.push_back(static_cast<float>(c - previous));
    previous = c;
  }
  return out;
}

Summary merge(const Summary& a, const Summary& b, double epsilon) {
  std::vector<std::pair<float, float>> all;
  for (size_t i = 0; i < a.values.size(); ++i) all.emplace_back(a.values[i], a.weights[i]);
  for (size_t i = 0; i < b.values.size(); ++i) all.emplace_back(b.values[i], b.weights[i]);
  std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  Summary m;
  for (const auto& [v, w] : all) m.values.push_back(v), m.weights.push_back(w);
  return compress(m, epsilon);
}

}  // namespace

void Discretization::adapt(const HostTensor& data) {
  if (data.num_elements() == 0) KILN_THROW(ValueError, "[", name(), "] adapt received no values.");
  adapt(data::Dataset::from_tensor_slices(std::vector<HostTensor>{data.reshape({1, data.num_elements()})}));
}

void Discretization::adapt(const data::Dataset& dataset, std::optional<int64_t> steps) {
  // A layer shared into a model forwards to the model's copy (layer.h); adapt that one.
  auto& shared = const_cast<Discretization&>(self_as<Discretization>());
  if (&shared != this) return shared.adapt(dataset, steps);
  const std::string at = name().empty() ? "Discretization" : name();
  if (!options_.num_bins)
    KILN_THROW(ValueError, "[", at, "] cannot adapt a layer made with bin_boundaries; pass num_bins instead.");
  Summary summary;
  bool any = false;
  data::Iterator it = dataset.iterator();
  for (int64_t step = 0; !steps || step < *steps; ++step) {
    std::optional<data::Element> e = it.next();
    if (!e) break;
    if (e->empty()) KILN_THROW(ValueError, "[", at, "] adapt received an element without components.");
    const std::vector<float> v = (*e)[0].astype(DType::kF32).to_vector<float>();
    if (v.empty()) continue;
    summary = merge(summarize(v, options_.epsilon), summary, options_.epsilon);
    any = true;
  }
  if (!any) KILN_THROW(ValueError, "[", at, "] adapt received no values.");
  const Summary bins = compress(summary, 1.0 / static_cast<double>(*options_.num_bins));
  options_.bin_boundaries = std::vector<double>(bins.values.begin(), bins.values.end() - (bins.values.empty() ? 0 : 1));
}

Discretization::Discretization(DiscretizationOptions options)
    : Layer(options.name, options.input_shape, options.dtype), options_(std::move(options)) {
  const std::string at = options_.name.empty() ? "Discretization" : options_.name;
  if (!options_.bin_boundaries && !options_.num_bins)
    KILN_THROW(ValueError, "[", at, "] pass bin_boundaries, or num_bins and then adapt().");
  if (options_.num_bins && *options_.num_bins < 1)
    KILN_THROW(ValueError, "[", at, "] num_bins must be at least 1, received ", *options_.num_bins, ".");
  if (!(options_.epsilon > 0 && options_.epsilon <= 1))
    KILN_THROW(ValueError, "[", at, "] epsilon must be in (0, 1], received ", options_.epsilon, ".");
  if (options_.bin_boundaries && !std::is_sorted(options_.bin_boundaries->begin(), options_.bin_boundaries->end()))
    KILN_THROW(ValueError, "[", at, "] bin_boundaries must be sorted.");
  check_mode(at, options_.output_mode, true);
  check_dense(at, options_.sparse);
}

Dims Discretization::compute_output_shape(const Dims& input_shape) const {
  if (!options_.bin_boundaries) return internal::encoded_shape(name(), input_shape, *options_.num_bins, options_.output_mode);
  const auto depth = static_cast<int64_t>(options_.bin_boundaries->size()) + 1;
  return internal::encoded_shape(name(), input_shape, depth, options_.output_mode);
}

Tensor Discretization::call(const Tensor& x, bool /*training*/) {
  if (!options_.bin_boundaries)
    KILN_THROW(ValueError, "[", name(), "] has no bin_boundaries: call adapt() first (num_bins=", *options_.num_bins,
               ").");
  const std::vector<double>& b = *options_.bin_boundaries;
  const auto n = static_cast<int64_t>(b.size());
  const DType real = is_floating(x.dtype()) ? x.dtype() : DType::kF32;
  const Tensor v = cast(x, real);
  Tensor ids = zeros(Shape(DType::kI64, x.dims()));
  if (n > 0) {
    // Bucketize: the number of boundaries <= x, by a compare against all of them.
    const std::vector<float> bf(b.begin(), b.end());
    const Tensor bounds = cast(constant(HostTensor::from_vector<float>({n}, bf)), real);
    Dims bd(static_cast<size_t>(x.rank()), 1);
    bd.push_back(n);
    const Tensor hits = cast(greater_equal(expand_dims(v, x.rank()), reshape(bounds, bd)), DType::kI64);
    ids = reduce_sum(hits, {x.rank()});
  }
  if (options_.output_mode == "int") return ids;
  return internal::encode_categories(ids, n + 1, options_.output_mode, compute_dtype());
}

std::string Discretization::get_config() const {
  const DiscretizationOptions& o = self_as<Discretization>().options_;  // adapt may have set boundaries
  nlohmann::json j = internal::base_config(*this);
  if (o.output_mode == "int") j["dtype"] = "int64";  // Keras's output dtype for bucket ids
  j["bin_boundaries"] = o.bin_boundaries ? nlohmann::json(*o.bin_boundaries) : nlohmann::json(nullptr);
  j["num_bins"] = o.num_bins ? nlohmann::json(*o.num_bins) : nlohmann::json(nullptr);
  j["epsilon"] = o.epsilon;
  j["output_mode"] = o.output_mode;
  j["sparse"] = o.sparse;
  return j.dump();
}

constexpr internal::ConfigKey kDiscretizationKeys[] = {
    {"bin_boundaries"}, {"num_bins"}, {"epsilon"}, {"output_mode"}, {"sparse", "false"}};
Discretization Discretization::from_config(const std::string& config_json) {
  const char* where = "Discretization.from_config";
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kDiscretizationKeys}, "Discretization");
  DiscretizationOptions o = internal::guarded(where, [&] {
    DiscretizationOptions r{.epsilon = j.value("epsilon", 0.01),
                            .output_mode = j.value("output_mode", "int"),
                            .input_shape = internal::input_shape_from(j),
                            .name = j.value("name", "")};
    if (j.contains("bin_boundaries") && !j["bin_boundaries"].is_null())
      r.bin_boundaries = j["bin_boundaries"].get<std::vector<double>>();
    if (j.contains("num_bins") && !j["num_bins"].is_null()) r.num_bins = j["num_bins"].get<int64_t>();
    return r;
  });
  Discretization l(std::move(o));
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
