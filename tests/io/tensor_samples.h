// Sample tensors for the io format tests: one per dtype, a scalar and an empty tensor, plus
// a byte-exact comparison, so every format's round trip covers the same cases.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/io/named_tensor.h"

namespace kiln::io::testing {

/// Every dtype at rank 2, plus rank-0 scalars and a zero-element tensor.
inline std::vector<NamedTensor> every_dtype_tensors() {
  std::vector<NamedTensor> out;
  out.push_back(
      {"f32", HostTensor::from_vector<float>({2, 3}, {1.5f, -2.f, 0.f, 3.25f, 1e-30f, 7.f})});
  out.push_back({"f64", HostTensor::from_vector<double>({3, 1}, {1.0 / 3, -1e300, 42.0})});
  out.push_back(
      {"bf16",
       HostTensor::from_vector<float>({2, 2}, {1.f, -0.5f, 3.f, 1e10f}).astype(DType::kBF16)});
  out.push_back(
      {"f16", HostTensor::from_vector<float>({1, 3}, {0.1f, -65504.f, 6e-8f}).astype(DType::kF16)});
  out.push_back({"i32", HostTensor::from_vector<int32_t>({2, 2}, {1, -2, INT32_MAX, INT32_MIN})});
  out.push_back({"i64", HostTensor::from_vector<int64_t>({2, 1}, {INT64_MAX, -7})});
  out.push_back({"u8", HostTensor::from_vector<uint8_t>({2, 2}, {0, 1, 128, 255})});
  out.push_back({"bool", HostTensor::from_vector<bool>({1, 3}, {true, false, true})});
  out.push_back({"scalar_f32", HostTensor::scalar<float>(2.5f)});
  out.push_back({"scalar_i64", HostTensor::scalar<int64_t>(42000)});
  out.push_back({"empty_f32", HostTensor(Shape(DType::kF32, {0, 4}))});
  return out;
}

/// Same shape and the same bytes.
inline void expect_same_tensor(const HostTensor& actual, const HostTensor& expected,
                               const std::string& name) {
  ASSERT_TRUE(actual.defined()) << name;
  EXPECT_EQ(actual.shape(), expected.shape()) << name;
  if (actual.shape() != expected.shape()) return;
  EXPECT_EQ(std::memcmp(actual.raw_data(), expected.raw_data(),
                        static_cast<size_t>(expected.byte_size())),
            0)
      << name << " differs";
}

}  // namespace kiln::io::testing
