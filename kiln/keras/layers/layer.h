// Layer: the Keras building block. Builds its weights on the first call from the input shape,
// runs its ops under a SourceScope named after itself (so errors say "[dense_1] ..."), and
// describes itself as Keras config JSON. NameScope hands out Keras-style unique names.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/keras/constraints.h"
#include "kiln/keras/handle.h"
#include "kiln/keras/initializers/initializers.h"
#include "kiln/keras/regularizers.h"
#include "kiln/keras/layers/keras_tensor.h"
#include "kiln/keras/mixed_precision/policy.h"
#include "kiln/trace/tensor.h"
#include "kiln/trace/variable.h"

namespace kiln::keras {

/// A per-example dimension Keras saved as None (a text's length, an image's size) in a
/// layer's or model's input dims: weights never depend on it, and each call gives its size.
inline constexpr int64_t kNoneDim = -1;

/// Unique layer names within one model: dense, dense_1, dense_2, ... Owned by the model
/// (never global), so two models each start at "dense".
class NameScope {
 public:
  /// `base` if unused, else base_1, base_2, ...; the result is reserved.
  std::string unique(const std::string& base);
  /// Marks a user-chosen name as taken.
  void reserve(const std::string& name) { taken_[name] = true; }

 private:
  std::map<std::string, int> next_suffix_;
  std::map<std::string, bool> taken_;
};

/// "Dense" -> "dense", "InputLayer" -> "input_layer" (Keras's default-name rule).
std::string to_snake_case(const std::string& class_name);

// Layers are shared objects, as in Keras: `Dense d(4); Sequential m({d});` puts d's layer in the
// model, and d stands for it from then on (built, weights, calls), as does any copy of d made
// after that. The first time a layer object the user holds joins a model (a LayerHandle made
// from it, or a call on KerasTensors) its state moves into a heap copy of the same class that
// the model holds; the object forwards to it. A layer already owned by a shared_ptr is shared
// as it is. enable_shared_from_this: functional graphs share the layers they call.
class Layer : public std::enable_shared_from_this<Layer> {
 public:
  virtual ~Layer() = default;

  /// The Keras class name ("Dense").
  virtual std::string class_name() const = 0;
  /// The layer's name; "" until it is named by a model, its options or its first call.
  const std::string& name() const { return self().name_; }
  void set_name(std::string name) { self().name_ = std::move(name); }

  /// Applies the layer to x (batch first). Builds on the first call from x's shape.
  /// `training` switches Dropout-like layers on.
  Tensor operator()(const Tensor& x, bool training = false);
  /// Applies the layer to x with a Keras mask: a bool (batch, time) tensor, false at padded
  /// steps (undefined: none). Layers that read masks (the recurrent ones) skip those steps;
  /// the rest compute as operator()(x, training) does.
  Tensor call_with_mask(const Tensor& x, const Tensor& mask, bool training = false);
  /// Keras's compute_mask: the mask this layer's output carries for input x carrying `mask`.
  /// The default passes it on when supports_masking() and fails when not (Keras's "does not
  /// support masking" TypeError); undefined in, undefined out.
  virtual Tensor compute_mask(const Tensor& x, const Tensor& mask) const;
  /// Whether the output keeps the input's time steps, so the input's mask applies to it
  /// (Keras's supports_masking).
  virtual bool supports_masking() const { return false; }
  /// Applies a layer that takes several inputs (Add, Concatenate; MultiHeadAttention's query,
  /// value, key) with its call flags. A single-input layer accepts a list of one.
  Tensor operator()(const std::vector<Tensor>& inputs, bool training = false, const CallFlags& flags = {});

  /// Functional API: records this layer applied to symbolic inputs and returns its output.
  /// Every call of one layer shares it (one set of weights); a temporary (`Dense(10)(x)`) moves
  /// into the graph. An unshared layer object joins as a copy made from its config that it forwards to (ValueError
  /// when built: its weights would be lost); a host layer as a copy sharing its tables (HostLayer::shared_copy).
  KerasTensor operator()(const KerasTensor& x) &;
  KerasTensor operator()(const KerasTensor& x) &&;
  KerasTensor operator()(const std::vector<KerasTensor>& inputs, const CallFlags& flags = {}) &;
  KerasTensor operator()(const std::vector<KerasTensor>& inputs, const CallFlags& flags = {}) &&;
  /// The same with Keras's call arguments: `base(x, {.training = false})`.
  KerasTensor operator()(const KerasTensor& x, const CallOptions& options) &;
  KerasTensor operator()(const KerasTensor& x, const CallOptions& options) &&;

  /// Creates the weights for per-example input dims (the batch dim excluded).
  void build(const Dims& input_shape);
  /// The same for a layer with several inputs (one dims list per input).
  void build_multi(const std::vector<Dims>& input_shapes);
  bool built() const { return self().built_; }
  /// Per-example output dims for per-example input dims.
  virtual Dims compute_output_shape(const Dims& input_shape) const { return input_shape; }
  /// The same for several inputs; the default accepts exactly one.
  virtual Dims compute_output_shape_multi(const std::vector<Dims>& input_shapes) const;
  /// The input shape declared in the options (Keras input_shape=), empty when none.
  const Dims& declared_input_shape() const { return declared_input_shape_; }
  /// The per-example dims the layer was built for.
  const Dims& built_input_shape() const { return self().built_input_shape_; }
  const std::vector<Dims>& built_input_shapes() const { return self().built_input_shapes_; }
  /// Keras names of the call's tensor arguments after the first, in input order
  /// (MultiHeadAttention: value, key); empty when all inputs form the first argument (a list
  /// for Add and Concatenate). Functional configs serialize the rest as call kwargs.
  virtual std::vector<std::string> call_arg_names() const { return {}; }

  /// All weights in creation order; the trainable ones (empty when !trainable()); the rest.
  /// Virtual for layers made of layers that may be frozen one by one (a nested model).
  const std::vector<Variable>& weights() const { return self().weights_; }
  virtual std::vector<Variable> trainable_weights() const;
  virtual std::vector<Variable> non_trainable_weights() const;
  int64_t count_params() const;
  /// The penalties of the weights' regularizers (kernel_regularizer, ...), which training adds
  /// to the loss (Keras's layer.losses); empty when none is set.
  std::vector<Tensor> regularization_losses() const;
  /// The activity regularizer's penalties of the outputs of this layer's calls since
  /// clear_activity_losses (Keras's layer.losses from activity_regularizer); Model's train and
  /// test steps clear them, call the model and add them to the loss.
  const std::vector<Tensor>& activity_losses() const { return self().activity_losses_; }
  void clear_activity_losses() { self().activity_losses_.clear(); }
  const std::optional<Regularizer>& activity_regularizer() const { return self().activity_regularizer_; }
  /// Assigns each constrained weight its constraint's projection (after an optimizer step).
  void apply_constraints() const;
  /// State that is not a weight but that a resumed run needs to draw the same random numbers
  /// (Dropout's step counter); checkpoints save it, .h5 files (like Keras's) do not.
  virtual std::vector<Variable> random_state() const { return {}; }
  bool trainable() const { return self().trainable_; }
  /// Freezes or unfreezes the layer; a layer made of layers (a nested model) sets every inner
  /// layer too, as Keras's `layer.trainable = ...` does, so unfreezing a base and then freezing
  /// its first layers again is the Keras fine-tuning recipe.
  virtual void set_trainable(bool trainable) { self().trainable_ = trainable; }

  /// The layer's dtype policy: its options' `dtype`, else the global policy when it was made.
  const mixed_precision::Policy& dtype_policy() const { return self().policy_; }
  /// Sets the policy before the layer is built (ValueError after: its variables exist).
  void set_dtype_policy(const mixed_precision::Policy& policy);
  /// The dtype call() computes in: floating inputs and variables are cast to it (Keras's
  /// autocast), so a mixed_bfloat16 layer outputs bf16.
  DType compute_dtype() const { return dtype_policy().compute_dtype(); }
  /// The dtype the layer's weights are kept in (f32 under the mixed policies).
  DType variable_dtype() const { return dtype_policy().variable_dtype(); }
  /// Whether calls cast floating inputs to the compute dtype and open an AutocastScope for the
  /// variables (Keras's `_autocast`); InputLayer, which only declares the input, does not.
  virtual bool autocast() const { return true; }

  /// Keras config JSON: {"name": ..., "trainable": ..., "dtype": "float32", ...}.
  virtual std::string get_config() const;

  /// What a LayerHandle made from this object holds (handle.h): the layer it stands for, this
  /// object when a shared_ptr owns it, else a heap copy of class D that this object forwards
  /// to from then on. A temporary moves into the handle instead.
  template <typename D>
  std::shared_ptr<Layer> handle_target() const& {
    if (body_) return body_;
    if (std::shared_ptr<const Layer> owned = weak_from_this().lock()) return std::const_pointer_cast<Layer>(owned);
    body_ = std::make_shared<D>(static_cast<const D&>(*this));
    return body_;
  }
  template <typename D>
  std::shared_ptr<Layer> handle_target() && {
    if (body_ || !weak_from_this().expired()) return static_cast<const Layer&>(*this).handle_target<D>();
    return std::make_shared<D>(static_cast<D&&>(*this));
  }

 protected:
  /// `dtype`: the policy from the options; none takes the global policy (Keras reads it when a
  /// layer is made).
  Layer(std::string name, Dims declared_input_shape, const std::optional<mixed_precision::Policy>& dtype = std::nullopt)
      : name_(std::move(name)),
        declared_input_shape_(std::move(declared_input_shape)),
        policy_(dtype ? *dtype : mixed_precision::global_policy()) {}
  /// Subclasses create weights here (add_weight) for the per-example input dims.
  virtual void build_weights(const Dims& /*input_shape*/) {}
  /// The forward computation on a batch (x: (batch, *input_shape)).
  virtual Tensor call(const Tensor& x, bool training) = 0;
  /// The computation on a masked batch; the default ignores the mask (layers that only pass
  /// it on compute each step alike).
  virtual Tensor call_masked(const Tensor& x, const Tensor& /*mask*/, bool training) { return call(x, training); }
  /// Multi-input layers override these two; the defaults accept exactly one input (and no
  /// flags) and forward to build_weights / call.
  virtual void build_weights_multi(const std::vector<Dims>& input_shapes);
  virtual Tensor call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool training);
  /// A weight named "<layer>/<name>" initialized by `initializer`.
  Variable add_weight(const std::string& name, const Dims& shape, const Initializer& initializer,
                      bool trainable = true);
  /// The same in `dtype` instead of the policy's variable dtype (Keras's add_weight(dtype=...):
  /// Normalization's int64 count).
  Variable add_weight(const std::string& name, const Dims& shape, DType dtype, const Initializer& initializer,
                      bool trainable);
  /// The same with a regularizer and a constraint (either may be absent).
  Variable add_weight(const std::string& name, const Dims& shape, const Initializer& initializer, bool trainable,
                      const std::optional<Regularizer>& regularizer, const std::optional<Constraint>& constraint);
  /// Penalizes every output of this layer's calls by regularizer(output) / batch size: tf.keras
  /// 2's _handle_activity_regularization (Keras 3 does not divide; Kiln reads regularizers from
  /// Keras 2 configs only).
  void set_activity_regularizer(std::optional<Regularizer> regularizer) {
    activity_regularizer_ = std::move(regularizer);
  }
  /// Lists `inner`'s weights (built) as this layer's too: wrappers (Bidirectional,
  /// TimeDistributed) compute with their inner layers, and models save and train these lists.
  void track_weights(const Layer& inner);
  /// The object holding the layer's state, as class D: subclass accessors read their members
  /// through it, so a forwarding object answers with the shared layer's weights.
  template <typename D>
  const D& self_as() const {
    return static_cast<const D&>(self());
  }
  template <typename D>
  D& self_as() {
    return static_cast<D&>(self());
  }
  /// Records the activity penalty of an output a call returns beside its main one (an RNN's
  /// final states), as Keras penalizes every output; returns `output`.
  Tensor add_activity_loss(const Tensor& output) { return self().with_activity_loss(output); }

 private:
  Layer& self() { return body_ ? *body_ : *this; }
  const Layer& self() const { return body_ ? *body_ : *this; }
  /// The shared layer this object forwards to (see the class comment), made on first need.
  std::shared_ptr<Layer> shared_self();
  /// `output`, after recording its activity penalty when the layer has an activity regularizer.
  Tensor with_activity_loss(const Tensor& output);

  std::string name_;
  Dims declared_input_shape_;
  Dims built_input_shape_;
  std::vector<Dims> built_input_shapes_;
  bool built_ = false;
  bool trainable_ = true;
  mixed_precision::Policy policy_;
  std::vector<Variable> weights_;
  std::vector<std::pair<Variable, Regularizer>> regularizers_;
  std::vector<std::pair<Variable, Constraint>> constraints_;
  std::optional<Regularizer> activity_regularizer_;
  std::vector<Tensor> activity_losses_;
  // The shared layer this object stands for; null when this object is the layer. Mutable:
  // sharing a const layer object does not change what it is.
  mutable std::shared_ptr<Layer> body_;
};

using LayerHandle = Handle<Layer>;

/// A layer from its Keras class name and config JSON (Dense, Flatten, ...). ConfigError
/// for unknown classes.
LayerHandle layer_from_config(const std::string& class_name, const std::string& config_json);

/// The Keras class names layer_from_config builds, in its table's order.
std::vector<std::string> registered_layer_classes();

/// What model configs build their layers with: layer_from_config, or a loader's version of it
/// that knows custom classes (load_model's custom_objects).
using LayerFromConfig = std::function<LayerHandle(const std::string& class_name, const std::string& config_json)>;

}  // namespace kiln::keras
