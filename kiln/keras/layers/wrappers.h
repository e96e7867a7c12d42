// The layer wrappers Bidirectional and TimeDistributed (keras.layers): a recurrent layer run
// both ways with its outputs merged, and a layer applied to every time step.
#pragma once

#include "kiln/keras/layers/recurrent.h"

namespace kiln::keras {

struct BidirectionalOptions {
  /// How the two directions' outputs combine: "concat" (default), "sum", "mul" or "ave".
  std::string merge_mode = "concat";
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Runs a copy of `layer` forwards ("forward_<name>") and one with go_backwards flipped
/// ("backward_<name>"), and merges their outputs; with return_sequences the backward outputs
/// are put back in input order first. Masked steps output zeros in both when returning
/// sequences (Keras forces zero_output_for_mask = return_sequences). Weights as tf.keras 2.x
/// names them: bidirectional/forward_lstm/lstm_cell/kernel, ..., then the backward ones.
class Bidirectional : public Layer {
 public:
  explicit Bidirectional(const Recurrent& layer, BidirectionalOptions options = {});
  static Bidirectional from_config(const std::string& config_json);
  std::string class_name() const override { return "Bidirectional"; }
  bool supports_masking() const override { return true; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  Tensor compute_mask(const Tensor& x, const Tensor& mask) const override;
  std::string get_config() const override;
  const Recurrent& forward_layer() const { return *self_as<Bidirectional>().forward_; }
  const Recurrent& backward_layer() const { return *self_as<Bidirectional>().backward_; }
  /// Both inner layers' dropout counters (checkpoints carry them).
  std::vector<Variable> random_state() const override {
    std::vector<Variable> out = forward_layer().random_state(), back = backward_layer().random_state();
    out.insert(out.end(), back.begin(), back.end());
    return out;
  }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Tensor call_masked(const Tensor& x, const Tensor& mask, bool training) override;

 private:
  std::string layer_class_, layer_config_;  // the wrapped layer as given (its config names it)
  std::string inner_name_;
  BidirectionalOptions options_;
  std::shared_ptr<Recurrent> forward_, backward_;
};

struct TimeDistributedOptions {
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Applies `layer` to every step: (batch, time, ...) is folded to (batch * time, ...), the
/// layer runs once, and the result unfolded. The layer's weights take the wrapper's name
/// (time_distributed/kernel), as in tf.keras 2.x. The input's mask passes through.
class TimeDistributed : public Layer {
 public:
  explicit TimeDistributed(const LayerHandle& layer, TimeDistributedOptions options = {});
  static TimeDistributed from_config(const std::string& config_json);
  std::string class_name() const override { return "TimeDistributed"; }
  bool supports_masking() const override { return true; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;
  const Layer& layer() const { return *self_as<TimeDistributed>().inner_; }
  std::vector<Variable> random_state() const override { return layer().random_state(); }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::string layer_class_, layer_config_;
  std::shared_ptr<Layer> inner_;
};

}  // namespace kiln::keras
