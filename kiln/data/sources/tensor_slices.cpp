// from_tensor_slices: element i is row i of every component, as views that share the
// components' storage (no copy; one Shape copy and one reference count per component).
// Position = the next row index. A RowIndexSource, so a shuffle after it buffers indices.
#include "kiln/data/sources/tensor_slices.h"

#include <algorithm>

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

class TensorSlicesNode : public DatasetNode {
 public:
  explicit TensorSlicesNode(std::vector<HostTensor> components)
      : DatasetNode("tensor_slices", {}), components_(std::move(components)) {
    for (const HostTensor& c : components_) {
      row_shapes_.emplace_back(c.dtype(), Dims(c.dims().begin() + 1, c.dims().end()));
      row_bytes_.push_back(row_shapes_.back().byte_size());
    }
  }

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;

  int64_t rows() const { return components_[0].dims()[0]; }
  int64_t cardinality() const override { return rows(); }
  std::optional<Element> sample_element() const override {
    if (rows() == 0) return std::nullopt;
    return row(0);
  }
  Element row(int64_t i) const { return row_of(components_, i); }
  /// Row i of `components` (the node's own, or handles to them as get_next_many makes).
  Element row_of(const std::vector<HostTensor>& components, int64_t i) const {
    Element e;
    for (size_t c = 0; c < components.size(); ++c)
      e.push_back(components[c].view_at(row_shapes_[c], i * row_bytes_[c]));
    return e;
  }
  const std::vector<HostTensor>& components() const { return components_; }

 private:
  std::vector<HostTensor> components_;
  std::vector<Shape> row_shapes_;
  std::vector<int64_t> row_bytes_;
};

class TensorSlicesIterator : public IteratorBase, public RowIndexSource {
 public:
  TensorSlicesIterator(const TensorSlicesNode& node, const IteratorContext& ctx)
      : IteratorBase(node, ctx), node_(node) {}

  size_t next_row_indices(std::vector<int64_t>& out, size_t n) override {
    const int64_t t0 = stage_clock_ticks();
    const int64_t end = std::min(node_.rows(), next_ + static_cast<int64_t>(n));
    const size_t pulled = static_cast<size_t>(std::max<int64_t>(0, end - next_));
    for (; next_ < end; ++next_) out.push_back(next_);
    count_many(t0, pulled);
    return pulled;
  }
  void rows_at(const std::vector<int64_t>& indices, std::vector<Element>& out) override {
    if (indices.empty()) return;
    const int64_t t0 = stage_clock_ticks();
    refresh_handles();
    for (int64_t i : indices) out.push_back(node_.row_of(handles_, i));
    count_many(t0, 0);  // counted as produced when their indices were pulled
  }

 protected:
  std::optional<Element> get_next() override {
    if (next_ >= node_.rows()) return std::nullopt;
    return node_.row(next_++);
  }
  void get_next_many(std::vector<Element>& out, size_t n) override {
    const int64_t end = std::min(node_.rows(), next_ + static_cast<int64_t>(n));
    if (next_ >= end) return;
    refresh_handles();
    for (; next_ < end; ++next_) out.push_back(node_.row_of(handles_, next_));
  }
  void save_state(StateWriter& w) override { w.write_i64(next_); }
  void restore_state(StateReader& r) override { next_ = r.read_i64(); }

 private:
  // The rows of one call share fresh handles on the components (a reference count of their
  // own that keeps the components alive) instead of the components' count: every row takes a
  // reference here and drops it on another thread (a map worker, batch), and one count for
  // all rows would bounce its cache line between the cores on every element.
  void refresh_handles() {
    handles_.clear();
    for (const HostTensor& c : node_.components()) {
      if (c.is_string()) {  // no raw bytes to hand out; the rows share its count
        handles_.push_back(c);
        continue;
      }
      auto* data = static_cast<std::byte*>(const_cast<void*>(c.raw_data()));
      handles_.push_back(HostTensor::from_storage(c.shape(), std::shared_ptr<std::byte>(data, [keep = c](std::byte*) {})));
    }
  }

  const TensorSlicesNode& node_;
  int64_t next_ = 0;
  std::vector<HostTensor> handles_;  // scratch of the bulk calls
};

IteratorPtr TensorSlicesNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<TensorSlicesIterator>(*this, ctx);
}

}  // namespace

NodePtr make_tensor_slices_node(std::vector<HostTensor> components) {
  if (components.empty())
    KILN_THROW(ValueError, "[from_tensor_slices] needs at least one tensor.");
  for (size_t i = 0; i < components.size(); ++i) {
    const HostTensor& c = components[i];
    if (!c.defined() || c.rank() == 0)
      KILN_THROW(ShapeError, "[from_tensor_slices] component ", i, " is ",
                 c.defined() ? c.shape().to_string() : std::string("undefined"),
                 ": expected a tensor with a leading axis to slice. Hint: reshape a scalar to [1].");
    if (c.dims()[0] != components[0].dims()[0])
      KILN_THROW(ShapeError, "[from_tensor_slices] component ", i, " has ", c.dims()[0],
                 " rows (", c.shape(), "), but component 0 has ", components[0].dims()[0], " (",
                 components[0].shape(), "). Hint: every component needs the same leading dimension.");
  }
  return std::make_shared<TensorSlicesNode>(std::move(components));
}

}  // namespace kiln::data
