// Device-resident data paths. prefetch_to_device read by DeviceIterator: on cpu:0 the buffers are the host batches (no
// copy), on the guarded device they are copies in its arena that host code cannot read; the
// copies of the next batches are queued on the transfer stream before the step on this one
// (checked in stream order with gates, not by timing); positions save and restore; and a custom
// training loop over them gives the host path's weights bit for bit. Host reads of variables
// copy on demand only.
#include "kiln/trace/device_iterator.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

#include "kiln/data/dataset.h"
#include "kiln/runtime/cpu/cpu_backend.h"
#include "kiln/runtime/host_device.h"
#include "kiln/trace/function.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/variable.h"
#include "tests/testing/expect_error.h"

namespace kiln::trace {
namespace {

// The CPU backend's programs on the guarded device, as KILN_DEVICE=guarded_cpu gives a whole
// process, so one test can run the host path beside it.
class GuardedCpuBackend final : public runtime::Backend {
 public:
  std::string name() const override { return "cpu"; }
  const compiler::TargetInfo& target_info() const override { return cpu_->target_info(); }
  runtime::Device& device() override { return runtime::guarded_device(); }
  std::unique_ptr<runtime::Executable> compile(std::unique_ptr<ir::Module> module,
                                               const runtime::CompileOptions& options) override {
    return cpu_->compile(std::move(module), options);
  }

 private:
  std::unique_ptr<runtime::Backend> cpu_ = cpu::make_cpu_backend();
};

HostTensor rows(int64_t n, int64_t cols, float scale) {
  HostTensor t(Shape(DType::kF32, {n, cols}));
  float* p = t.data<float>().data();
  for (int64_t i = 0; i < n * cols; ++i) p[i] = scale * static_cast<float>((i * 7) % 11 - 5);
  return t;
}

// Four (x f32[4,3], y f32[4,1]) batches.
data::Dataset batches() {
  return data::Dataset::from_tensor_slices({rows(16, 3, 0.25f), rows(16, 1, -0.5f)}).batch(4, /*drop_remainder=*/true);
}

bool copied(const DeviceBatch& b) {
  for (const runtime::Buffer& c : b.replicas.at(0))
    if (!c.ready().ready()) return false;
  return true;
}

TEST(PrefetchToDeviceTest, OnTheHostDeviceTheBuffersAreTheHostBatches) {
  runtime::Device& cpu = runtime::host_device();
  DeviceIterator it(batches().prefetch_to_device(cpu));
  data::Iterator host = batches().iterator();
  const int64_t allocations = cpu.allocator_stats().allocations;
  int n = 0;
  while (std::optional<DeviceBatch> b = it.next()) {
    std::optional<data::Element> h = host.next();
    ASSERT_TRUE(h);
    ASSERT_EQ(b->replicas.size(), 1u);
    ASSERT_EQ(b->replicas[0].size(), 2u);
    EXPECT_EQ(b->shapes_string(), "(f32[4,3], f32[4,1])");
    for (size_t c = 0; c < 2; ++c) {
      EXPECT_EQ(&b->replicas[0][c].device(), &cpu);
      EXPECT_TRUE(b->replicas[0][c].ready().ready());
      EXPECT_EQ(cpu.host_view(b->replicas[0][c]).to_vector<float>(), (*h)[c].to_vector<float>());
    }
    ++n;
  }
  EXPECT_EQ(n, 4);
  EXPECT_EQ(cpu.allocator_stats().allocations, allocations) << "cpu:0 must not copy the batches";
}

TEST(PrefetchToDeviceTest, OnTheGuardedDeviceTheBatchesAreCopiesHostCodeCannotRead) {
  runtime::Device& guarded = runtime::guarded_device();
  DeviceIterator it(batches().prefetch_to_device(guarded));
  data::Iterator host = batches().iterator();
  while (std::optional<DeviceBatch> b = it.next()) {
    std::optional<data::Element> h = host.next();
    ASSERT_TRUE(h);
    for (size_t c = 0; c < 2; ++c) {
      const runtime::Buffer& buffer = b->replicas[0][c];
      EXPECT_EQ(&buffer.device(), &guarded);
      EXPECT_NE(buffer.device_address(), (*h)[c].raw_data());
      KILN_EXPECT_ERROR(guarded.host_view(buffer), ValueError, "not host-addressable");
      EXPECT_EQ(guarded.to_host(buffer).to_vector<float>(), (*h)[c].to_vector<float>());
    }
  }
}

TEST(PrefetchToDeviceDeathTest, AHostReadOfAPrefetchedBatchFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        DeviceIterator it(batches().prefetch_to_device(runtime::guarded_device()));
        std::optional<DeviceBatch> b = it.next();
        b->replicas[0][0].ready().wait();
        // The copies queued ahead open the whole guarded arena while they run: wait for them too.
        runtime::guarded_device().transfer_stream().synchronize();
        volatile float first = *reinterpret_cast<const float*>(b->replicas[0][0].device_address());
        (void)first;
        std::exit(0);  // reading it succeeded: the batch is not in device memory
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}

TEST(PrefetchToDeviceTest, TheNextBatchesCopiesAreQueuedBeforeTheStepOnThisOne) {
  runtime::GuardedDevice device(int64_t{64} << 20);
  runtime::Stream& transfer = device.transfer_stream();
  DeviceIterator it(batches().prefetch_to_device(device, /*buffer_size=*/2));
  runtime::Event gate = runtime::Event::pending();
  transfer.wait_for(gate);  // copies queued from here on wait for the gate
  std::optional<DeviceBatch> b0 = it.next();
  ASSERT_TRUE(b0);
  EXPECT_FALSE(copied(*b0)) << "next() hands the batch out with its copy queued, not done";
  EXPECT_EQ(it.queued(), 2u);
  // Whatever is queued now, before the step on batch 0, runs before `marker`; whatever is
  // queued later waits for gate2.
  runtime::Event marker = transfer.enqueue([] {});
  runtime::Event gate2 = runtime::Event::pending();
  transfer.wait_for(gate2);
  gate.complete();
  marker.wait();
  EXPECT_TRUE(copied(*b0));
  std::optional<DeviceBatch> b1 = it.next();  // queues batch 3's copy, behind gate2
  std::optional<DeviceBatch> b2 = it.next();
  ASSERT_TRUE(b1 && b2);
  EXPECT_TRUE(copied(*b1)) << "batch 1's copy must be queued before the step on batch 0";
  EXPECT_TRUE(copied(*b2)) << "buffer_size 2: batch 2's copy too";
  std::optional<DeviceBatch> b3 = it.next();
  ASSERT_TRUE(b3);
  EXPECT_FALSE(copied(*b3)) << "batch 3's copy was queued when batch 1 was handed out";
  gate2.complete();
  transfer.synchronize();
  EXPECT_TRUE(copied(*b3));
  EXPECT_EQ(device.to_host(b3->replicas[0][0]).to_vector<float>(),
            rows(16, 3, 0.25f).slice_rows(12, 16).to_vector<float>());
  EXPECT_FALSE(it.next());
}

TEST(DeviceIteratorTest, RestoresTheBatchesCopiedAheadButNotHandedOut) {
  runtime::Device& guarded = runtime::guarded_device();
  const data::Dataset ds = batches().prefetch_to_device(guarded, /*buffer_size=*/3);
  DeviceIterator it(ds);
  it.next();
  const std::vector<uint8_t> state = it.save();
  DeviceIterator resumed(ds);
  resumed.restore(state);
  int n = 0;
  while (std::optional<DeviceBatch> expected = it.next()) {
    std::optional<DeviceBatch> got = resumed.next();
    ASSERT_TRUE(got);
    for (size_t c = 0; c < 2; ++c)
      EXPECT_EQ(guarded.to_host(got->replicas[0][c]).to_vector<float>(),
                guarded.to_host(expected->replicas[0][c]).to_vector<float>());
    ++n;
  }
  EXPECT_EQ(n, 3);
  EXPECT_FALSE(resumed.next());
}

TEST(DeviceIteratorTest, SplitGivesEachReplicaItsPartOnTheDevice) {
  runtime::Device& guarded = runtime::guarded_device();
  DeviceIterator it(batches().prefetch_to_device(guarded), 0, [](const data::Element& e) {
    return std::vector<data::Element>{data::Element{e[0].slice_rows(0, 2), e[1].slice_rows(0, 2)},
                                      data::Element{e[0].slice_rows(2, 4), e[1].slice_rows(2, 4)}};
  });
  std::optional<DeviceBatch> b = it.next();
  ASSERT_TRUE(b);
  ASSERT_EQ(b->replicas.size(), 2u);
  EXPECT_EQ(b->shapes_string(), "(f32[4,3], f32[4,1])");  // the global batch
  EXPECT_EQ(b->replicas[1][0].shape().dims(), (Dims{2, 3}));
  EXPECT_EQ(guarded.to_host(b->replicas[1][0]).to_vector<float>(),
            rows(16, 3, 0.25f).slice_rows(2, 4).to_vector<float>());
}

TEST(PrefetchToDeviceTest, BadBufferSizesHostIterationAndPlainDatasetsAreErrors) {
  KILN_EXPECT_ERROR(batches().prefetch_to_device(runtime::host_device(), 0), ValueError,
                    "[prefetch_to_device] buffer_size must be positive");
  KILN_EXPECT_ERROR(batches().prefetch_to_device(runtime::host_device(), -1), ValueError, "received -1");
  const data::Dataset on_device = batches().prefetch_to_device(runtime::host_device());
  KILN_EXPECT_ERROR(on_device.iterator().next(), DataError, "a host iterator cannot hand out");
  KILN_EXPECT_ERROR(on_device.map([](data::Element e) { return e; }).iterator().next(), DataError,
                    "must be the last step");
  KILN_EXPECT_ERROR(DeviceIterator{batches()}, ValueError, "does not end with prefetch_to_device");
  EXPECT_EQ(on_device.cardinality(), 4);
  EXPECT_EQ(on_device.element_spec()->at(0).dims(), (Dims{4, 3}));
}

TEST(PrefetchToDeviceTest, AFunctionRejectsBuffersOfAnotherDevice) {
  Function f = function("sum", [](const std::vector<Tensor>& x) { return reduce_sum(x[0]); },
                        {.backend = cpu::make_cpu_backend()});
  DeviceIterator it(batches().prefetch_to_device(runtime::guarded_device()));
  std::optional<DeviceBatch> b = it.next();
  KILN_EXPECT_ERROR(f.call_on_device({b->replicas[0][0]}), ValueError,
                    "input 0 lives on guarded_cpu:0, but this function runs on cpu:0");
}

// Two epochs of linear-regression steps; `prefetch` feeds them from DeviceIterator.
std::vector<float> trained_weights(const std::shared_ptr<runtime::Backend>& backend, bool prefetch) {
  Variable w("w", rows(3, 1, 0.1f));
  Function step = function("train_step", [&](const std::vector<Tensor>& in) {
    GradientTape tape;
    Tensor error = matmul(in[0], w) - in[1];
    Tensor loss = mean(error * error);
    w.assign_sub(tape.gradient(loss, {w})[0] * 0.05);
    return loss;
  }, {.backend = backend});
  for (int epoch = 0; epoch < 2; ++epoch) {
    if (prefetch) {
      DeviceIterator it(batches().prefetch_to_device(backend->device()));
      while (std::optional<DeviceBatch> b = it.next()) step.call_on_device(b->replicas[0]);
    } else {
      data::Iterator it = batches().iterator();
      while (std::optional<data::Element> e = it.next()) step({(*e)[0], (*e)[1]});
    }
  }
  return w.storage().to_vector<float>();
}

TEST(PrefetchToDeviceTest, ACustomLoopOnTheGuardedDeviceMatchesTheHostBitForBit) {
  const std::vector<float> host = trained_weights(cpu::make_cpu_backend(), /*prefetch=*/false);
  auto guarded = std::make_shared<GuardedCpuBackend>();
  EXPECT_EQ(trained_weights(guarded, /*prefetch=*/true), host);
  EXPECT_EQ(trained_weights(guarded, /*prefetch=*/false), host);
  EXPECT_EQ(trained_weights(cpu::make_cpu_backend(), /*prefetch=*/true), host);
  EXPECT_NE(host, rows(3, 1, 0.1f).to_vector<float>()) << "the steps must have trained";
}

// Reading a variable on the host (saving, get_weights, callbacks during fit) copies its value
// back but keeps the device copy, so the next step copies nothing in; storage(), which lets the
// caller write, and an eager assign drop it. Counted as the device allocations of one step.
TEST(DeviceValuesTest, HostReadsKeepTheDeviceCopyAndWritesDropIt) {
  auto backend = std::make_shared<GuardedCpuBackend>();
  runtime::Device& device = backend->device();
  Variable w("w", rows(3, 1, 0.1f));
  Function step = function("step", [&](const std::vector<Tensor>& in) {
    w.assign_add(in[0]);
    return reduce_sum(w.read());
  }, {.backend = backend});
  const HostTensor ones = HostTensor::from_vector<float>({3, 1}, {1, 1, 1});
  auto allocations_of_a_step = [&] {
    const int64_t before = device.allocator_stats().allocations;
    step({ones});
    return device.allocator_stats().allocations - before;
  };
  step({ones});  // copies w to the device
  const int64_t plain = allocations_of_a_step();
  std::vector<float> expected = rows(3, 1, 0.1f).to_vector<float>();
  for (float& v : expected) v += 2;
  EXPECT_EQ(w.host_value().to_vector<float>(), expected);
  EXPECT_EQ(allocations_of_a_step(), plain) << "host_value() must keep the device copy";
  for (float& v : expected) v += 1;
  EXPECT_EQ(w.storage().to_vector<float>(), expected);
  EXPECT_EQ(allocations_of_a_step(), plain + 1) << "after storage() the step copies w in again";
  w.assign(Tensor(HostTensor::from_vector<float>({3, 1}, {5, 6, 7})));
  EXPECT_EQ(allocations_of_a_step(), plain + 1) << "after an assign the step copies the new value in";
  EXPECT_EQ(w.host_value().to_vector<float>(), (std::vector<float>{6, 7, 8}));
}

}  // namespace
}  // namespace kiln::trace
