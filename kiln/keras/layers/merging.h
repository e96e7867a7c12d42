// The merge layers of Keras's layers/merging beyond Add and Concatenate: the elementwise
// Multiply, Subtract, Average, Maximum and Minimum (sharing ElementwiseMerge with Add), and
// Dot (batched dot products along chosen axes).
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct MergeOptions {
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Input: a list of >= 2 tensors of one shape. Output: one tensor of that shape, from
/// combine(). Called with one tensor, a ValueError.
class ElementwiseMerge : public Layer {
 public:
  Dims compute_output_shape_multi(const std::vector<Dims>& input_shapes) const override;

 protected:
  explicit ElementwiseMerge(const MergeOptions& options) : Layer(options.name, {}, options.dtype) {}
  /// The merge of inputs already checked to share one shape.
  virtual Tensor combine(const std::vector<Tensor>& inputs) const = 0;
  /// Exactly two inputs (Subtract) rather than two or more.
  virtual bool takes_two() const { return false; }
  /// A merge's config holds only the common fields.
  template <typename L>
  static L from_merge_config(const std::string& config_json, const char* cls) {
    bool trainable = true;
    L l(merge_options_from(config_json, cls, &trainable));
    l.set_trainable(trainable);
    return l;
  }

  void build_weights_multi(const std::vector<Dims>& input_shapes) override;
  Tensor call(const Tensor& x, bool training) override;
  Tensor call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool training) override;

 private:
  static MergeOptions merge_options_from(const std::string& config_json, const char* cls, bool* trainable);
};

/// The elementwise product of the inputs.
class Multiply : public ElementwiseMerge {
 public:
  explicit Multiply(MergeOptions options = {}) : ElementwiseMerge(options) {}
  static Multiply from_config(const std::string& config_json) {
    return from_merge_config<Multiply>(config_json, "Multiply");
  }
  std::string class_name() const override { return "Multiply"; }

 protected:
  Tensor combine(const std::vector<Tensor>& inputs) const override;
};

/// inputs[0] - inputs[1] (exactly two inputs).
class Subtract : public ElementwiseMerge {
 public:
  explicit Subtract(MergeOptions options = {}) : ElementwiseMerge(options) {}
  static Subtract from_config(const std::string& config_json) {
    return from_merge_config<Subtract>(config_json, "Subtract");
  }
  std::string class_name() const override { return "Subtract"; }

 protected:
  Tensor combine(const std::vector<Tensor>& inputs) const override;
  bool takes_two() const override { return true; }
};

/// The elementwise mean of the inputs.
class Average : public ElementwiseMerge {
 public:
  explicit Average(MergeOptions options = {}) : ElementwiseMerge(options) {}
  static Average from_config(const std::string& config_json) {
    return from_merge_config<Average>(config_json, "Average");
  }
  std::string class_name() const override { return "Average"; }

 protected:
  Tensor combine(const std::vector<Tensor>& inputs) const override;
};

/// The elementwise maximum of the inputs.
class Maximum : public ElementwiseMerge {
 public:
  explicit Maximum(MergeOptions options = {}) : ElementwiseMerge(options) {}
  static Maximum from_config(const std::string& config_json) {
    return from_merge_config<Maximum>(config_json, "Maximum");
  }
  std::string class_name() const override { return "Maximum"; }

 protected:
  Tensor combine(const std::vector<Tensor>& inputs) const override;
};

/// The elementwise minimum of the inputs.
class Minimum : public ElementwiseMerge {
 public:
  explicit Minimum(MergeOptions options = {}) : ElementwiseMerge(options) {}
  static Minimum from_config(const std::string& config_json) {
    return from_merge_config<Minimum>(config_json, "Minimum");
  }
  std::string class_name() const override { return "Minimum"; }

 protected:
  Tensor combine(const std::vector<Tensor>& inputs) const override;
};

struct DotOptions {
  /// L2-normalize each input along its axis first, so the result is the cosine similarity.
  bool normalize = false;
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: axes, the axis of each input to contract (counted with the batch axis; negative
/// from the end), one int for both. Input: two tensors (batch, ...). Output: (batch, the
/// first's other dims, the second's other dims), or (batch, 1) when no dims remain.
class Dot : public Layer {
 public:
  explicit Dot(int axes, DotOptions options = {}) : Dot(Dims{axes, axes}, std::move(options)) {}
  Dot(Dims axes, DotOptions options = {});
  static Dot from_config(const std::string& config_json);
  std::string class_name() const override { return "Dot"; }
  Dims compute_output_shape_multi(const std::vector<Dims>& input_shapes) const override;
  std::string get_config() const override;

 protected:
  void build_weights_multi(const std::vector<Dims>& input_shapes) override;
  Tensor call(const Tensor& x, bool training) override;
  Tensor call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool training) override;

 private:
  /// The contracted axis of each input (per-example dims, so batch-free) for these shapes.
  std::pair<size_t, size_t> axes_for(const std::vector<Dims>& input_shapes) const;

  Dims axes_;
  bool normalize_;
};

}  // namespace kiln::keras
