// The host device copies nothing; the guarded device keeps its memory out of host code's reach
// while giving the same results through copies and execute().
#include "kiln/runtime/host_device.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

#include "kiln/ir/builder.h"
#include "kiln/runtime/cpu/cpu_backend.h"
#include "kiln/runtime/executable.h"
#include "tests/testing/expect_error.h"

namespace kiln::runtime {
namespace {


// out0 = w - 0.5 * x (aliased to w: a variable update), out1 = sum(x * w) (a fresh output).
std::unique_ptr<Executable> compile_update() {
  auto m = std::make_unique<ir::Module>("update");
  ir::Builder b(m->entry());
  Shape s(DType::kF32, {3, 4});
  auto* w = b.parameter(s, "w");
  auto* x = b.parameter(s, "x");
  auto* w2 = b.binary(ir::Opcode::kSub, w, b.binary(ir::Opcode::kMul, x, b.full(s, 0.5)));
  auto* dot = b.reduce(ir::Opcode::kReduceSum, b.binary(ir::Opcode::kMul, x, w), {0, 1});
  m->entry()->set_outputs({w2, dot});
  m->add_alias({.output_index = 0, .parameter_index = 0});
  return cpu::make_cpu_backend()->compile(std::move(m), {});
}

HostTensor iota_tensor(float start) {
  std::vector<float> v(12);
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return HostTensor::from_vector<float>({3, 4}, v);
}

// Runs the update twice on `device`, reading results only through to_host.
void expect_two_updates(Device& device) {
  auto exe = compile_update();
  Buffer w = device.to_device(iota_tensor(1));
  Buffer x = device.to_device(iota_tensor(-2));
  std::vector<Buffer> out;
  for (int step = 0; step < 2; ++step) {
    Buffer args[] = {w, x};
    out = device.execute(*exe, args);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(out[0].shares_memory_with(w)) << "the aliased output must update w in place";
  }
  std::vector<float> wv = device.to_host(w).to_vector<float>();
  double expected_dot = 0;
  for (int i = 0; i < 12; ++i) {
    const float w0 = 1.0f + static_cast<float>(i), xi = -2.0f + static_cast<float>(i);
    const float w1 = w0 - 0.5f * xi;
    EXPECT_EQ(wv[static_cast<size_t>(i)], w1 - 0.5f * xi);
    expected_dot += static_cast<double>(xi * w1);  // the second step reads w after one update
  }
  EXPECT_NEAR(device.to_host(out[1]).to_vector<double>()[0], expected_dot, 1e-4);
}

TEST(HostDeviceTest, ToDeviceAndExecuteCopyNothing) {
  HostDevice cpu;
  EXPECT_EQ(cpu.name(), "cpu:0");
  HostTensor h = iota_tensor(0);
  Buffer b = cpu.to_device(h);
  EXPECT_EQ(b.device_address(), h.raw_data());
  EXPECT_TRUE(b.ready().ready());
  HostTensor view = cpu.host_view(b);
  EXPECT_EQ(view.raw_data(), h.raw_data());
  HostTensor copy = cpu.to_host(b);
  EXPECT_NE(copy.raw_data(), h.raw_data());  // to_host never aliases, on any device
  EXPECT_EQ(copy.to_vector<float>(), h.to_vector<float>());
  expect_two_updates(cpu);
}

TEST(HostDeviceTest, AllocateCountsInTheDevicesStatistics) {
  HostDevice cpu;
  {
    Buffer a = cpu.allocate(Shape(DType::kF32, {1000}));
    EXPECT_EQ(cpu.allocator_stats().bytes_in_use, 4096);
  }
  Buffer again = cpu.allocate(Shape(DType::kF32, {1000}));
  EXPECT_EQ(cpu.allocator_stats().cache_hits, 1);
}

TEST(GuardedDeviceTest, GivesTheHostDevicesResultsThroughCopies) {
  GuardedDevice guarded(int64_t{64} << 20);
  EXPECT_FALSE(guarded.host_addressable());
  expect_two_updates(guarded);
  EXPECT_FALSE(guarded.arena_open());
  EXPECT_GT(guarded.allocator_stats().peak_bytes_in_use, 0);
}

TEST(GuardedDeviceTest, HostViewIsAnErrorNamingTheDevice) {
  GuardedDevice guarded(int64_t{64} << 20);
  Buffer b = guarded.to_device(iota_tensor(0));
  KILN_EXPECT_ERROR(guarded.host_view(b), ValueError, "[guarded_cpu:0 host_view] this device's memory is not host-addressable");
}

TEST(GuardedDeviceTest, BuffersOfAnotherDeviceAreRejected) {
  GuardedDevice guarded(int64_t{64} << 20);
  HostDevice cpu;
  Buffer b = cpu.to_device(iota_tensor(0));
  KILN_EXPECT_ERROR(guarded.to_host(b), ValueError, "the buffer lives on cpu:0, not on this device");
  auto exe = compile_update();
  Buffer args[] = {b, b};
  KILN_EXPECT_ERROR(guarded.execute(*exe, args), ValueError, "[guarded_cpu:0 execute]");
}

TEST(GuardedDeviceTest, ToDeviceIsAsynchronousAndToHostWaitsForIt) {
  GuardedDevice guarded(int64_t{64} << 20);
  Event gate = Event::pending();
  guarded.transfer_stream().wait_for(gate);
  Buffer b = guarded.to_device(iota_tensor(5));
  EXPECT_FALSE(b.ready().ready());
  gate.complete();
  EXPECT_EQ(guarded.to_host(b).to_vector<float>(), iota_tensor(5).to_vector<float>());
}

TEST(GuardedDeviceTest, AllocationsBeyondTheArenaAreOutOfMemory) {
  GuardedDevice guarded(int64_t{4} << 20);
  Buffer a = guarded.allocate(Shape(DType::kF32, {int64_t{3} << 18}));  // 3 MiB: a 4 MiB class
  KILN_EXPECT_ERROR(guarded.allocate(Shape(DType::kF32, {10})), OutOfMemoryError, "[guarded_cpu:0] cannot allocate 40 bytes");
}

// The point of the device: host code reading its memory in place crashes.
TEST(GuardedDeviceDeathTest, HostReadOfDeviceMemoryFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        GuardedDevice guarded(int64_t{64} << 20);
        Buffer b = guarded.to_device(iota_tensor(1));
        b.ready().wait();
        volatile float first = *reinterpret_cast<const float*>(b.device_address());
        (void)first;
        std::exit(0);  // reading it succeeded: the guard failed
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}

}  // namespace
}  // namespace kiln::runtime
