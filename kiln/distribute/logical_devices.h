// Logical CPU devices: the host split into n devices (cpu:0 .. cpu:n-1), each with its share
// of the OpenMP threads, so n replicas can run on one machine as TensorFlow's logical device
// configuration allows. Set with config::set_logical_cpu_devices(n) or KILN_CPU_DEVICES=n.
#pragma once

#include <string>
#include <vector>

namespace kiln::config {

/// Splits the host into `n` logical CPU devices (1 .. 1024; ValueError otherwise). Strategies
/// made afterwards see them; it is process-wide configuration, like tf.config's.
void set_logical_cpu_devices(int n);
/// The last set_logical_cpu_devices(n), else KILN_CPU_DEVICES, else 1.
int logical_cpu_devices();

}  // namespace kiln::config

namespace kiln::distribute {

/// Threads this host runs kernels with: OpenMP's maximum on the calling thread (OMP_NUM_THREADS
/// or the CPUs this process may use).
int host_threads();
/// Threads each of `devices` logical devices gets: host_threads() / devices, at least 1.
int threads_per_device(int devices);
/// "cpu:0", "cpu:1", ... one per logical CPU device.
std::vector<std::string> logical_cpu_device_names();
/// The index of a device name ("cpu:3" -> 3, also "/cpu:3" and "/device:CPU:3"); ConfigError
/// naming the available devices when it is not one of them.
int parse_cpu_device(const std::string& name);
/// Makes the calling thread run its kernels (Kiln's loops and oneDNN, one OpenMP runtime) on
/// `threads` threads.
void set_thread_share(int threads);

}  // namespace kiln::distribute
