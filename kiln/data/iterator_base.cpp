// IteratorBase registration with the stats registry, and error wrapping for pipeline stages.
#include "kiln/data/iterator_base.h"

#include <exception>

#include "kiln/core/check.h"

namespace kiln::data {

IteratorBase::IteratorBase(const DatasetNode& node, const IteratorContext& ctx)
    : stage_(node.stage()), ctx_(ctx) {
  if (ctx.stats != nullptr) counters_ = ctx.stats->counters_for(node);
}

std::optional<std::vector<Shape>> DatasetNode::element_spec() const {
  if (keeps_elements() && !inputs_.empty()) return inputs_[0]->element_spec();
  std::optional<Element> sample = sample_element();
  if (!sample) return std::nullopt;
  std::vector<Shape> shapes;
  for (const HostTensor& c : *sample) shapes.push_back(c.shape());
  return shapes;
}

std::optional<Element> DatasetNode::sample_element() const {
  if (keeps_elements() && !inputs_.empty()) return inputs_[0]->sample_element();
  return std::nullopt;
}

void IteratorBase::get_next_many(std::vector<Element>& out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    std::optional<Element> e = get_next();
    if (!e) return;
    out.push_back(std::move(*e));
  }
}

std::optional<Element> IteratorBase::next_one_of_many() {
  one_.clear();
  get_next_many(one_, 1);
  if (one_.empty()) return std::nullopt;
  return std::move(one_[0]);
}

UnaryIterator::UnaryIterator(const DatasetNode& node, const IteratorContext& ctx)
    : IteratorBase(node, ctx) {
  KILN_CHECK(node.inputs().size() == 1, "stage ", node.stage(), " needs one input");
  input_ = node.inputs()[0]->make_iterator(ctx);
}

std::exception_ptr capture_as_data_error(const std::string& stage, const std::string& what,
                                         ErrorSource source) {
  try {
    throw;
  } catch (const DataError& e) {
    if (source == ErrorSource::kUpstream) return std::current_exception();
    return std::make_exception_ptr(DataError(str_cat("[", stage, "] ", what, ": ", e.what())));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(DataError(str_cat("[", stage, "] ", what, ": ", e.what())));
  } catch (...) {
    return std::make_exception_ptr(
        DataError(str_cat("[", stage, "] ", what, ": an exception that is not a std::exception")));
  }
}

void rethrow_as_data_error(const std::string& stage, const std::string& what,
                           ErrorSource source) {
  std::rethrow_exception(capture_as_data_error(stage, what, source));
}

}  // namespace kiln::data
