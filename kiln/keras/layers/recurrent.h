// The recurrent layers SimpleRNN, LSTM and GRU (keras.layers, Keras 2 weight layouts): a
// cell step scanned over the time axis (kiln::scan), with Keras's masking, go_backwards,
// return_sequences and return_state.
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct RecurrentOptions {
  std::string activation = "tanh";
  /// The gates' activation (LSTM, GRU): Keras 2's default sigmoid, or hard_sigmoid (Keras 1).
  std::string recurrent_activation = "sigmoid";
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  /// Penalties training adds to the loss (Keras's *_regularizer), and constraints applied after
  /// each optimizer step, per weight; the activity regularizer penalizes every output (the
  /// sequence or last output, and with return_state the final states), over the batch.
  std::optional<Regularizer> kernel_regularizer = std::nullopt;
  std::optional<Regularizer> recurrent_regularizer = std::nullopt;
  std::optional<Regularizer> bias_regularizer = std::nullopt;
  std::optional<Regularizer> activity_regularizer = std::nullopt;
  std::optional<Constraint> kernel_constraint = std::nullopt;
  std::optional<Constraint> recurrent_constraint = std::nullopt;
  std::optional<Constraint> bias_constraint = std::nullopt;
  /// LSTM: the forget gate's bias starts at 1 (Jozefowicz et al.), the rest from bias_initializer.
  bool unit_forget_bias = true;
  /// GRU: the reset gate applies after the recurrent matmul (Keras 2's default, CuDNN's form),
  /// with separate input and recurrent biases (bias of shape (2, 3 units)).
  bool reset_after = true;
  bool return_sequences = false;
  /// Keras returns [output, *final_states]; a layer returns one tensor here, so a layer with
  /// return_state=true is called through Recurrent::call_with_state.
  bool return_state = false;
  /// Walks the sequence from the end; the output sequence is in that (reversed) order.
  bool go_backwards = false;
  /// Kept for Keras configs; unrolled or not, the layer computes the same.
  bool unroll = false;
  /// Fractions in [0, 1) of the input features (dropout) and of the previous output h
  /// (recurrent_dropout) zeroed in training, the rest scaled by 1 / (1 - rate), as tf.keras
  /// 2.15: the masks are drawn once per call (per batch) and kept for every step. LSTM and GRU
  /// use one input mask for all gates, or, with recurrent_dropout (Keras's implementation 1),
  /// one input and one recurrent mask per gate. Inference is unchanged.
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  /// Seeds the dropout masks (Keras 3's seed); unseeded: derived from the layer name.
  std::optional<uint64_t> seed = std::nullopt;
  Dims input_shape = {};  // (time, features)
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Keras's RNN over one of the built-in cells. Input (batch, time, features); output (batch,
/// units), or (batch, time, units) with return_sequences. Weights "<cell>/kernel" (features,
/// gates * units), "<cell>/recurrent_kernel" (units, gates * units) and "<cell>/bias", named as
/// tf.keras 2.x names them (lstm/lstm_cell/kernel). Masked steps (a false in the (batch, time)
/// mask) keep the previous states and repeat the previous output (zeros before the first
/// unmasked step), as tf.keras 2.x's backend.rnn does; with zero_output_for_mask (set by
/// Bidirectional when it returns sequences) their outputs are zeros.
class Recurrent : public Layer {
 public:
  int64_t units() const { return units_; }
  const RecurrentOptions& options() const { return options_; }
  const Variable& kernel() const { return self_as<Recurrent>().kernel_; }
  const Variable& recurrent_kernel() const { return self_as<Recurrent>().recurrent_kernel_; }
  const Variable& bias() const { return self_as<Recurrent>().bias_; }
  /// How many states the cell carries (LSTM: h and c; the others: h).
  virtual int num_states() const { return 1; }
  bool supports_masking() const override { return true; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  /// The output sequence keeps the input's mask; a last output consumes it.
  Tensor compute_mask(const Tensor& x, const Tensor& mask) const override;
  std::string get_config() const override;

  /// Keras's layer(x, mask=..., initial_state=...) with return_state: {output, *final states}
  /// (LSTM: output, h, c). `mask` and `initial_state` may be empty.
  std::vector<Tensor> call_with_state(const Tensor& x, const Tensor& mask = Tensor(),
                                      const std::vector<Tensor>& initial_state = {}, bool training = false);
  /// Outputs zeros at masked steps instead of repeating the last output (Keras's
  /// zero_output_for_mask; Bidirectional sets it to return_sequences).
  void set_zero_output_for_mask(bool on) { zero_output_for_mask_ = on; }
  /// The dropout masks of the latest training call (Keras's cell dropout-mask cache): `input`
  /// (batch, features) and `recurrent` (batch, units), each holding 0 or 1 / (1 - rate); one
  /// mask, or one per gate (see RecurrentOptions::dropout); empty when that call drew none.
  struct DropoutMasks {
    std::vector<Tensor> input, recurrent;
  };
  const DropoutMasks& last_dropout_masks() const { return self_as<Recurrent>().last_dropout_masks_; }
  /// The step counter mixed into the dropout key (i64 scalar), advanced by each training call
  /// that draws masks; none without dropout.
  std::vector<Variable> random_state() const override {
    const Variable& counter = self_as<Recurrent>().counter_;
    return counter.defined() ? std::vector<Variable>{counter} : std::vector<Variable>{};
  }

 protected:
  /// `gates`: how many units-wide blocks the kernels hold (SimpleRNN 1, LSTM 4, GRU 3).
  Recurrent(int64_t units, RecurrentOptions options, int gates, const char* cell);
  void build_weights(const Dims& input_shape) override;
  void build_weights_multi(const std::vector<Dims>& input_shapes) override;
  Dims compute_output_shape_multi(const std::vector<Dims>& input_shapes) const override;
  Tensor call(const Tensor& x, bool training) override;
  Tensor call_masked(const Tensor& x, const Tensor& mask, bool training) override;
  /// inputs: x, then the mask when flags has "mask", then the initial states.
  Tensor call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool training) override;
  /// One step: the new states (states[0] is also the step's output) from x_proj = x_t @ kernel
  /// (+ the input bias), the previous states, the recurrent kernel (read once per call) and the
  /// recurrent dropout masks of h (none, or one per gate).
  virtual std::vector<Tensor> step(const Tensor& x_proj, const std::vector<Tensor>& states,
                                   const Tensor& recurrent_kernel, const std::vector<Tensor>& h_masks) const = 0;
  /// The bias's dims (GRU with reset_after: two rows).
  virtual Dims bias_dims() const { return {gates_ * units_}; }
  /// The part of the bias added to x @ kernel (GRU with reset_after: its first row).
  virtual Tensor input_bias() const { return bias_; }
  /// The unit-wide block `k` of the last axis (gate k of a fused projection).
  Tensor gate(const Tensor& t, int k) const;
  /// h @ recurrent_kernel, or with masks (one per gate) each gate's (h * mask_k) @ its block.
  Tensor recurrent_projection(const Tensor& h, const Tensor& recurrent_kernel, const std::vector<Tensor>& h_masks) const;

  int64_t units_;
  RecurrentOptions options_;
  int64_t gates_;
  std::string cell_;
  Variable kernel_, recurrent_kernel_, bias_;

 private:
  /// "LSTM" for "lstm_cell", ... (for errors raised before the object is complete).
  static std::string class_name_of(const std::string& cell);
  /// The whole forward pass: output, then the final states.
  std::vector<Tensor> run(const Tensor& x, const Tensor& mask, std::vector<Tensor> states, bool training) const;
  /// x @ kernel for every step, time-major (time, batch, gates * units), through the input
  /// dropout masks when there are any (one for all gates, or one per gate).
  Tensor input_projection(const Tensor& x, const std::vector<Tensor>& x_masks) const;
  /// A training call's masks, drawn from this call's key; none when the rates are 0.
  DropoutMasks draw_dropout_masks(int64_t batch, int64_t features, DType dtype) const;

  bool zero_output_for_mask_ = false;
  mutable std::vector<Tensor> last_states_;  // the final states of the latest call (call_with_state)
  mutable DropoutMasks last_dropout_masks_;
  Variable counter_;  // dropout's step counter; not a weight (summary and saving leave it out)
};

/// h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias).
class SimpleRNN : public Recurrent {
 public:
  explicit SimpleRNN(int64_t units, RecurrentOptions options = {});
  static SimpleRNN from_config(const std::string& config_json);
  std::string class_name() const override { return "SimpleRNN"; }

 protected:
  std::vector<Tensor> step(const Tensor& x_proj, const std::vector<Tensor>& states, const Tensor& recurrent_kernel,
                           const std::vector<Tensor>& h_masks) const override;
};

/// Keras 2's LSTM, gates in the order i, f, c, o: z = x @ kernel + h @ recurrent_kernel + bias,
/// i = r(z_i), f = r(z_f), c = f * c + i * a(z_c), o = r(z_o), h = o * a(c) (a: activation,
/// r: recurrent_activation). States h, c.
class LSTM : public Recurrent {
 public:
  explicit LSTM(int64_t units, RecurrentOptions options = {});
  static LSTM from_config(const std::string& config_json);
  std::string class_name() const override { return "LSTM"; }
  int num_states() const override { return 2; }

 protected:
  std::vector<Tensor> step(const Tensor& x_proj, const std::vector<Tensor>& states, const Tensor& recurrent_kernel,
                           const std::vector<Tensor>& h_masks) const override;
};

/// Keras 2's GRU, gates in the order z, r, h. reset_after (default): bias (2, 3 units) of input
/// and recurrent rows, hh = a(x_h + r * (h @ U_h + b_rh)); else bias (3 units) and
/// hh = a(x_h + (r * h) @ U_h). Then h = z * h_prev + (1 - z) * hh.
class GRU : public Recurrent {
 public:
  explicit GRU(int64_t units, RecurrentOptions options = {});
  static GRU from_config(const std::string& config_json);
  std::string class_name() const override { return "GRU"; }

 protected:
  std::vector<Tensor> step(const Tensor& x_proj, const std::vector<Tensor>& states, const Tensor& recurrent_kernel,
                           const std::vector<Tensor>& h_masks) const override;
  Dims bias_dims() const override;
  Tensor input_bias() const override;
};

}  // namespace kiln::keras
