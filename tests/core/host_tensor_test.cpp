#include "kiln/core/host_tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "tests/testing/expect_error.h"

namespace kiln {
namespace {

TEST(HostTensorTest, AllocatesZeroedAlignedStorage) {
  HostTensor t(Shape(DType::kF32, {3, 5}));
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kHostAlignment, 0u);
  for (float v : t.data<float>()) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(t.byte_size(), 60);
}

TEST(HostTensorTest, UninitializedHasTheShapeAlignmentAndWritableStorage) {
  HostTensor t = HostTensor::uninitialized(Shape(DType::kF32, {7, 3}));
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.shape(), Shape(DType::kF32, {7, 3}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kHostAlignment, 0u);
  // Contents are unspecified; writing every element makes them exactly what was written.
  auto d = t.data<float>();
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<float>(i);
  for (size_t i = 0; i < d.size(); ++i) EXPECT_EQ(t.data<float>()[i], static_cast<float>(i));
  EXPECT_TRUE(HostTensor::uninitialized(Shape(DType::kU8, {0})).defined());
}

TEST(HostTensorTest, StorageFreedOnAnotherThreadIsReusedIntactAndAligned) {
  // A pipeline's pattern: tensors made on one thread, dropped on another, made again (the
  // storage cache hands the blocks back). Every tensor keeps its own bytes and alignment, and
  // zero-filled ones are zero even on reused blocks.
  const std::vector<int64_t> sizes = {1, 63, 64, 65, 255, 3136, 4096, 65000, 70000, 1 << 20};
  auto make = [&](uint8_t seed) {
    std::vector<HostTensor> ts;
    for (int round = 0; round < 50; ++round)
      for (int64_t n : sizes) {
        HostTensor t = HostTensor::uninitialized(Shape(DType::kU8, {n}));
        std::memset(t.raw_data(), static_cast<uint8_t>(seed + n), static_cast<size_t>(n));
        ts.push_back(std::move(t));
      }
    return ts;
  };
  auto intact = [&](const std::vector<HostTensor>& ts, uint8_t seed) {
    for (const HostTensor& t : ts) {
      if (reinterpret_cast<uintptr_t>(t.raw_data()) % kHostAlignment != 0) return false;
      for (uint8_t b : t.data<uint8_t>())
        if (b != static_cast<uint8_t>(seed + t.num_elements())) return false;
    }
    return true;
  };
  std::vector<HostTensor> first = make(1);
  std::thread([moved = std::move(first)]() mutable { moved.clear(); }).join();
  std::vector<HostTensor> second = make(2);
  std::vector<HostTensor> third;
  std::thread([&] { third = make(3); }).join();  // made on a thread that then exits
  EXPECT_TRUE(intact(second, 2));
  EXPECT_TRUE(intact(third, 3));
  second.clear();
  for (int64_t n : sizes) {
    HostTensor z(Shape(DType::kU8, {n}));
    for (uint8_t b : z.data<uint8_t>()) ASSERT_EQ(b, 0) << n;
  }
}

TEST(HostTensorTest, CloneAndAstypeOverwriteUninitializedStorage) {
  auto a = HostTensor::from_vector<int32_t>({3}, {1, -2, 3});
  EXPECT_EQ(a.clone().to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(a.astype(DType::kF32).to_vector<float>(), (std::vector<float>{1, -2, 3}));
}

TEST(HostTensorTest, FromStorageRunsTheDeleterAfterTheLastTensor) {
  int released = 0;
  alignas(kHostAlignment) std::byte bytes[16];
  {
    std::shared_ptr<std::byte> storage(bytes, [&](std::byte*) { ++released; });
    HostTensor t = HostTensor::from_storage(Shape(DType::kI32, {4}), std::move(storage));
    EXPECT_EQ(t.raw_data(), static_cast<void*>(bytes));
    HostTensor row = t.slice_rows(1, 2);
    t = HostTensor();
    EXPECT_EQ(released, 0);  // the slice still holds the storage
  }
  EXPECT_EQ(released, 1);
}

TEST(HostTensorTest, ViewAtSharesBytesAndChecksTheRange) {
  auto t = HostTensor::from_vector<int32_t>({2, 3}, {0, 1, 2, 3, 4, 5});
  HostTensor row = t.view_at(Shape(DType::kI32, {3}), 3 * sizeof(int32_t));
  EXPECT_TRUE(row.shares_storage_with(t));
  EXPECT_EQ(row.to_vector<int32_t>(), (std::vector<int32_t>{3, 4, 5}));
  KILN_EXPECT_ERROR(t.view_at(Shape(DType::kI32, {3}), 4 * sizeof(int32_t)), ShapeError,
                    "does not fit in i32[2,3]");
  KILN_EXPECT_ERROR(t.view_at(Shape(DType::kI32, {1}), -4), ShapeError, "does not fit");
}

TEST(HostTensorTest, CopiesShareStorageAndCloneDoesNot) {
  auto a = HostTensor::from_vector<float>({2}, {1.0f, 2.0f});
  HostTensor b = a;
  b.data<float>()[0] = 7.0f;
  EXPECT_EQ(a.data<float>()[0], 7.0f);
  HostTensor c = a.clone();
  c.data<float>()[1] = 9.0f;
  EXPECT_EQ(a.data<float>()[1], 2.0f);
  EXPECT_FALSE(c.shares_storage_with(a));
}

TEST(HostTensorTest, TypedViewRejectsTheWrongType) {
  HostTensor t(Shape(DType::kU8, {4}));
  KILN_EXPECT_ERROR(t.data<float>(), DTypeError, "requested f32 elements of a u8[4] tensor");
}

TEST(HostTensorTest, FromVectorChecksTheCount) {
  KILN_EXPECT_ERROR(HostTensor::from_vector<int32_t>({2, 2}, {1, 2, 3}), ShapeError,
                    "expected 4 values for i32[2,2], received 3");
}

TEST(HostTensorTest, ReshapeKeepsBytesAndChecksCount) {
  auto t = HostTensor::from_vector<int32_t>({2, 3}, {0, 1, 2, 3, 4, 5});
  auto r = t.reshape({3, 2});
  EXPECT_TRUE(r.shares_storage_with(t));
  EXPECT_EQ(r.shape(), Shape(DType::kI32, {3, 2}));
  EXPECT_EQ(r.data<int32_t>()[5], 5);
  KILN_EXPECT_ERROR(t.reshape({4, 2}), ShapeError, "element counts differ");
}

TEST(HostTensorTest, AstypeConvertsWithRounding) {
  auto t = HostTensor::from_vector<float>({3}, {1.5f, -2.0f, 1.00390625f});
  EXPECT_EQ(t.astype(DType::kI32).to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 1}));
  auto b = t.astype(DType::kBF16);
  EXPECT_EQ(b.data<BF16>()[2].bits, 0x3f80);  // the tie rounds to even (1.0)
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 1.0f}));
  auto u = HostTensor::from_vector<uint8_t>({2}, {0, 255});
  EXPECT_EQ(u.to_vector<float>(), (std::vector<float>{0.0f, 255.0f}));
  auto big = HostTensor::from_vector<int64_t>({1}, {(int64_t{1} << 62) + 1});
  EXPECT_EQ(big.astype(DType::kI64).to_vector<int64_t>()[0], (int64_t{1} << 62) + 1);
}

TEST(HostTensorTest, SliceRowsIsAView) {
  auto t = HostTensor::from_vector<int32_t>({3, 2}, {0, 1, 2, 3, 4, 5});
  auto s = t.slice_rows(1, 3);
  EXPECT_EQ(s.shape(), Shape(DType::kI32, {2, 2}));
  EXPECT_EQ(s.to_vector<int32_t>(), (std::vector<int32_t>{2, 3, 4, 5}));
  KILN_EXPECT_ERROR(t.slice_rows(2, 4), ShapeError, "out of range for i32[3,2]");
}

TEST(HostTensorTest, ScalarHasRankZero) {
  auto s = HostTensor::scalar<double>(2.5);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.data<double>()[0], 2.5);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(HostTensorStringTest, HoldsStringsThatCloneReshapeAndSliceAsObjects) {
  HostTensor t = HostTensor::from_vector<std::string>({2, 2}, {"a", "bb", std::string(100, 'c'), ""});
  EXPECT_EQ(t.shape().to_string(), "string[2,2]");
  HostTensor c = t.clone();
  c.data<std::string>()[0] = "changed";
  EXPECT_EQ(t.data<std::string>()[0], "a");  // a deep copy of the objects
  EXPECT_EQ(t.slice_rows(1, 2).to_vector<std::string>(), (std::vector<std::string>{std::string(100, 'c'), ""}));
  EXPECT_EQ(t.reshape({4}).to_vector<std::string>()[1], "bb");
  HostTensor row = t.view_at(Shape(DType::kString, {2}), 2 * static_cast<int64_t>(size_of(DType::kString)));
  EXPECT_EQ(row.data<std::string>()[0], std::string(100, 'c'));
  HostTensor empty(Shape(DType::kString, {3}));
  EXPECT_EQ(empty.to_vector<std::string>(), (std::vector<std::string>{"", "", ""}));
  HostTensor dst(Shape(DType::kString, {6}));
  dst.copy_elements_from(t, 1);
  EXPECT_EQ(dst.to_vector<std::string>(), (std::vector<std::string>{"", "a", "bb", std::string(100, 'c'), "", ""}));
}

TEST(HostTensorStringTest, AStringTensorWhereNumbersAreExpectedIsADTypeError) {
  HostTensor t = HostTensor::from_vector<std::string>({2}, {"a", "b"});
  KILN_EXPECT_ERROR(t.raw_data(), DTypeError, "a string tensor (string[2]) where a numeric one is expected");
  KILN_EXPECT_ERROR(t.data<float>(), DTypeError, "requested f32 elements of a string[2]");
  KILN_EXPECT_ERROR(t.astype(DType::kF32), DTypeError, "strings and numbers do not convert");
  KILN_EXPECT_ERROR(HostTensor::from_vector<float>({2}, {1, 2}).astype(DType::kString), DTypeError,
                    "cannot convert f32[2] to string");
  KILN_EXPECT_ERROR(t.view_at(Shape(DType::kF32, {2}), 0), DTypeError, "strings and numbers do not share bytes");
  float storage[2] = {};
  KILN_EXPECT_ERROR(HostTensor::view(Shape(DType::kString, {1}), storage), DTypeError, "over raw memory");
  KILN_EXPECT_ERROR(promote(DType::kString, DType::kF32), DTypeError, "strings do not mix with numbers");
  EXPECT_EQ(parse_dtype("string"), DType::kString);
  EXPECT_FALSE(is_numeric(DType::kString));
}

}  // namespace
}  // namespace kiln
