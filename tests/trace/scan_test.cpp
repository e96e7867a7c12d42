// scan: hand-computed carries and ys both ways; values equal the eager loop and the unrolled
// trace; gradients through the traced scan equal the unrolled trace's exactly (same ops on the
// same values, summed in the same order) and match f64 finite differences; the cpu backend
// agrees with the reference.
#include "kiln/trace/ops/scan.h"

#include <gtest/gtest.h>

#include "kiln/ir/printer.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/reference/reference_backend.h"
#include "kiln/trace/eager.h"
#include "kiln/trace/function.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"
#include "kiln/trace/variable.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/finite_difference.h"

namespace kiln {
namespace {

using Xs = std::vector<Tensor>;
using testing::random_f64;

// An Elman RNN over xs: (T, B, D); h: (B, H); W: (D, H); U: (H, H). y_t = h_{t+1} * 2.
ScanBody rnn(const Tensor& w, const Tensor& u) {
  return [w, u](const Xs& carry, const Xs& x) -> std::pair<Xs, Xs> {
    Tensor h = tanh(matmul(x[0], w) + matmul(carry[0], u));
    return {{h}, {h * 2.0}};
  };
}

// The same recurrence written out step by step (what scan replaces).
ScanResult unrolled(const ScanBody& body, const Xs& init, const Xs& xs, bool reverse) {
  const int64_t steps = xs[0].dim(0);
  Xs carry = init;
  std::vector<Tensor> ys(static_cast<size_t>(steps));
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t t = reverse ? steps - 1 - k : k;
    Xs x_t;
    for (const Tensor& x : xs) {
      Dims start(static_cast<size_t>(x.rank()), 0), limit = x.dims();
      start[0] = t;
      limit[0] = t + 1;
      x_t.push_back(squeeze(slice(x, start, limit), 0));
    }
    auto [next, y] = body(carry, x_t);
    carry = next;
    ys[static_cast<size_t>(t)] = expand_dims(y[0], 0);
  }
  return {carry, {concat(ys, 0)}};
}

// inputs: xs, h0, W, U. Outputs: final h, ys, and with `grads` d(sum(h) + sum(ys * ys))/d inputs.
std::function<Xs(const Xs&)> program(bool use_scan, bool reverse, bool grads) {
  return [=](const Xs& in) -> Xs {
    GradientTape tape;
    ScanBody body = rnn(in[2], in[3]);
    ScanResult r = use_scan ? scan(body, {in[1]}, {in[0]}, reverse) : unrolled(body, {in[1]}, {in[0]}, reverse);
    Xs out{r.carry[0], r.ys[0]};
    if (!grads) return out;
    Tensor loss = reduce_sum(r.carry[0]) + reduce_sum(r.ys[0] * r.ys[0]);
    for (const Tensor& g : tape.gradient(loss, std::vector<Tensor>(in.begin(), in.end()))) out.push_back(g);
    return out;
  };
}

std::vector<HostTensor> inputs(DType dtype) {
  return {random_f64({4, 2, 3}, 1).astype(dtype), random_f64({2, 5}, 2).astype(dtype),
          random_f64({3, 5}, 3, -0.5, 0.5).astype(dtype), random_f64({5, 5}, 4, -0.5, 0.5).astype(dtype)};
}

void expect_equal(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_vector<double>(), b[i].to_vector<double>()) << what << " output " << i;
}

TEST(ScanTest, TracedScanIsOneLoopWithTheUnrolledValues) {
  for (bool reverse : {false, true}) {
    Function s("scan", program(true, reverse, false), {.backend = runtime::make_reference_backend()});
    Function u("unrolled", program(false, reverse, false), {.backend = runtime::make_reference_backend()});
    expect_equal(s(inputs(DType::kF32)), u(inputs(DType::kF32)), reverse ? "reverse" : "forward");
    const std::string ir = ir::to_string(*s.last_executable()->lowered_module());
    EXPECT_NE(ir.find("trip_count=4"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("tanh", ir.find("entry {")), std::string::npos) << "the step is unrolled into the entry";
  }
}

TEST(ScanTest, EagerScanMatchesTheTrace) {
  Function s("scan", program(true, false, false), {.backend = runtime::make_reference_backend()});
  std::vector<HostTensor> traced = s(inputs(DType::kF32));
  trace::EagerScope scope(runtime::make_reference_backend());
  Xs in;
  for (const HostTensor& t : inputs(DType::kF32)) in.push_back(Tensor(t));
  Xs eager = program(true, false, false)(in);
  for (size_t i = 0; i < eager.size(); ++i)
    EXPECT_EQ(eager[i].to_vector<float>(), traced[i].to_vector<float>()) << "output " << i;
}

TEST(ScanTest, CarriesAndStacksHandComputedValuesBothWays) {
  // A running sum with a product output: c += x_t, y_t = c * x_t.
  trace::EagerScope scope(runtime::make_reference_backend());
  auto running = [](const Xs& c, const Xs& x) -> std::pair<Xs, Xs> {
    Tensor next = c[0] + x[0];
    return {{next}, {next * x[0]}};
  };
  const Tensor xs = Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor init = Tensor::from_vector<float>({2}, {10, 20});
  ScanResult fw = scan(running, {init}, {xs});
  // c: (11, 22), (14, 26), (19, 32); y = c * x.
  EXPECT_EQ(fw.carry[0].to_vector<float>(), (std::vector<float>{19, 32}));
  EXPECT_EQ(fw.ys[0].dims(), (Dims{3, 2}));
  EXPECT_EQ(fw.ys[0].to_vector<float>(), (std::vector<float>{11, 44, 42, 104, 95, 192}));
  // Walks t = 2, 1, 0: c: (15, 26), (18, 30), (19, 32); ys stay in t order.
  ScanResult bw = scan(running, {init}, {xs}, /*reverse=*/true);
  EXPECT_EQ(bw.carry[0].to_vector<float>(), (std::vector<float>{19, 32}));
  EXPECT_EQ(bw.ys[0].to_vector<float>(), (std::vector<float>{19, 64, 54, 120, 75, 156}));
}

TEST(ScanTest, ReverseScanStacksYsInTimeOrder) {
  // A running sum from the end: ys[t] = x[t] + ... + x[T-1].
  trace::EagerScope scope(runtime::make_reference_backend());
  auto body = [](const Xs& c, const Xs& x) -> std::pair<Xs, Xs> { return {{c[0] + x[0]}, {c[0] + x[0]}}; };
  auto run = [&](const Xs& in) -> Xs {
    ScanResult r = scan(body, {zeros(Shape(DType::kF32, {}))}, {in[0]}, /*reverse=*/true);
    return {r.carry[0], r.ys[0]};
  };
  HostTensor x = HostTensor::from_vector<float>({4}, {1, 2, 3, 4});
  Function f("suffix_sum", run, {.backend = runtime::make_reference_backend()});
  for (const Xs& out : {run({Tensor(x)}), Xs{Tensor(f({x})[0]), Tensor(f({x})[1])}}) {
    EXPECT_EQ(out[0].to_vector<float>(), std::vector<float>{10});
    EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{10, 9, 7, 4}));
  }
}

TEST(ScanTest, GradientsEqualTheUnrolledTraceExactly) {
  for (bool reverse : {false, true}) {
    Function s("scan_grad", program(true, reverse, true), {.backend = runtime::make_reference_backend()});
    Function u("unrolled_grad", program(false, reverse, true), {.backend = runtime::make_reference_backend()});
    expect_equal(s(inputs(DType::kF32)), u(inputs(DType::kF32)), reverse ? "reverse" : "forward");
  }
}

TEST(ScanTest, GradientsMatchFiniteDifferences) {
  for (bool reverse : {false, true}) {
    auto f = [reverse](const Xs& in) {
      ScanResult r = scan(rnn(in[2], in[3]), {in[1]}, {in[0]}, reverse);
      return reduce_sum(r.carry[0]) + reduce_sum(r.ys[0] * r.ys[0]);
    };
    EXPECT_TRUE(testing::check_gradients(f, inputs(DType::kF64))) << (reverse ? "reverse" : "forward");
  }
}

TEST(ScanTest, AVariableReadInsideTheBodyGetsItsGradient) {
  // An RNN layer reads its kernel inside the step: the tape outside the loop must see the read.
  const std::vector<HostTensor> in = inputs(DType::kF32);
  Variable w("w", in[2]);
  auto loss_of = [](const ScanResult& r) { return reduce_sum(r.carry[0]) + reduce_sum(r.ys[0] * r.ys[0]); };
  Function by_variable("by_variable", [&](const Xs& x) -> Xs {
    GradientTape tape;
    ScanBody body = [&](const Xs& carry, const Xs& x_t) -> std::pair<Xs, Xs> { return rnn(w.read(), x[2])(carry, x_t); };
    return {tape.gradient(loss_of(scan(body, {x[1]}, {x[0]})), w)};
  }, {.backend = runtime::make_reference_backend()});
  Function by_tensor("by_tensor", [&](const Xs& x) -> Xs {
    GradientTape tape;
    Tensor wt = x[3];
    return {tape.gradient(loss_of(scan(rnn(wt, x[2]), {x[1]}, {x[0]})), wt)};
  }, {.backend = runtime::make_reference_backend()});
  const std::vector<float> expected = by_tensor({in[0], in[1], in[3], in[2]})[0].to_vector<float>();
  EXPECT_NE(expected, std::vector<float>(expected.size(), 0.0f));
  EXPECT_EQ(by_variable({in[0], in[1], in[3]})[0].to_vector<float>(), expected);
}

TEST(ScanTest, TheCpuBackendAgreesWithTheReference) {
  Function ref("scan_grad", program(true, false, true), {.backend = runtime::make_reference_backend()});
  Function cpu("scan_grad", program(true, false, true), {.backend = runtime::default_backend()});
  std::vector<HostTensor> a = ref(inputs(DType::kF32)), b = cpu(inputs(DType::kF32));
  EXPECT_TRUE(cpu.last_executable()->reference_fallbacks().empty());
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<float> x = a[i].to_vector<float>(), y = b[i].to_vector<float>();
    ASSERT_EQ(x.size(), y.size());
    for (size_t j = 0; j < x.size(); ++j) EXPECT_NEAR(x[j], y[j], 1e-5 * (1 + std::abs(x[j]))) << i << "," << j;
  }
}

TEST(ScanTest, RejectsMismatchedLengthsAndACarryThatChangesShape) {
  trace::EagerScope scope(runtime::make_reference_backend());
  auto id = [](const Xs& c, const Xs& x) -> std::pair<Xs, Xs> { return {c, x}; };
  Tensor a(HostTensor(Shape(DType::kF32, {3, 2}))), b(HostTensor(Shape(DType::kF32, {4})));
  KILN_EXPECT_ERROR(scan(id, {}, {a, b}), ShapeError, "every xs tensor needs the same leading dim T >= 1");
  KILN_EXPECT_ERROR(scan(id, {}, {}), ValueError, "needs at least one xs tensor");
  auto grow = [](const Xs& c, const Xs& x) -> std::pair<Xs, Xs> { return {{concat({c[0], c[0]}, 0)}, x}; };
  KILN_EXPECT_ERROR(scan(grow, {b}, {a}), ShapeError, "body returned a carry of (f32[8]), expected init's (f32[4])");
}

}  // namespace
}  // namespace kiln
