// The seed's pipeline shape (slices -> map u8->f32 -> shuffle -> repeat -> batch -> prefetch) on
// small synthetic images: its exact output is pinned by a hash recorded before the pipeline's
// fast paths (bulk pulls, pooled storage) existed, and every way of running it (inline or
// parallel map, element by element or in bulk, resumed from a saved state) must reproduce it.
#include <gtest/gtest.h>

#include <cstring>

#include "kiln/data/dataset.h"

namespace kiln::data {
namespace {

constexpr int64_t kRows = 1000;

HostTensor images() {
  HostTensor x = HostTensor::uninitialized(Shape(DType::kU8, {kRows, 4, 3}));
  auto* p = static_cast<uint8_t*>(x.raw_data());
  for (int64_t i = 0; i < x.num_elements(); ++i) p[i] = static_cast<uint8_t>((i * 7 + i / 12) % 251);
  return x;
}

HostTensor labels() {
  std::vector<int32_t> y(kRows);
  for (int64_t i = 0; i < kRows; ++i) y[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  return HostTensor::from_vector<int32_t>({kRows}, y);
}

// (u8[4,3], i32[]) -> (f32[4,3,1], i32[]), as the seed's normalize.
Element normalize(Element e) {
  HostTensor out = HostTensor::uninitialized(Shape(DType::kF32, {4, 3, 1}));
  const auto* src = static_cast<const uint8_t*>(e[0].raw_data());
  auto* dst = static_cast<float*>(out.raw_data());
  for (int64_t i = 0; i < 12; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
  e[0] = std::move(out);
  return e;
}

Dataset seed_like(int map_parallelism, int64_t shuffle_buffer, bool drop_remainder) {
  return Dataset::from_tensor_slices({images(), labels()})
      .map(normalize, map_parallelism)
      .shuffle(shuffle_buffer, /*seed=*/5)
      .repeat(3)
      .batch(32, drop_remainder)
      .prefetch(kAutotune);
}

// FNV-1a over the shapes and bytes of every batch.
struct Hash {
  uint64_t h = 1469598103934665603ull;
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  void add(const Element& e) {
    for (const HostTensor& t : e) {
      for (int64_t d : t.dims()) add(&d, sizeof d);
      add(t.raw_data(), static_cast<size_t>(t.byte_size()));
    }
  }
};

uint64_t hash_rest(Iterator& it, int64_t* batches = nullptr) {
  Hash h;
  int64_t n = 0;
  while (std::optional<Element> b = it.next()) {
    h.add(*b);
    ++n;
  }
  if (batches != nullptr) *batches = n;
  return h.h;
}

uint64_t hash_all(const Dataset& d, int64_t* batches = nullptr) {
  Iterator it = d.iterator();
  return hash_rest(it, batches);
}

// Recorded with the element-by-element pipeline of commit ac49b0e.
constexpr uint64_t kDropRemainderHash = 1275153193555855787ull;
constexpr uint64_t kKeepRemainderHash = 4661079324763477606ull;
constexpr uint64_t kSmallInputHash = 11302112491991835382ull;

TEST(SeedPipelineTest, OutputMatchesTheRecordedStream) {
  int64_t batches = 0;
  EXPECT_EQ(hash_all(seed_like(kAutotune, 100, true), &batches), kDropRemainderHash);
  EXPECT_EQ(batches, 3 * kRows / 32);
  EXPECT_EQ(hash_all(seed_like(kAutotune, 100, false), &batches), kKeepRemainderHash);
  EXPECT_EQ(batches, (3 * kRows + 31) / 32);
  // A buffer larger than the input: the shuffle drains without refills.
  EXPECT_EQ(hash_all(seed_like(kAutotune, 5000, false)), kSmallInputHash);
}

TEST(SeedPipelineTest, InlineAndParallelMapsGiveTheSameStream) {
  for (int parallelism : {0, 1, 3})
    EXPECT_EQ(hash_all(seed_like(parallelism, 100, true)), kDropRemainderHash) << parallelism;
}

TEST(SeedPipelineTest, UnbatchedStreamIsTheSameElementByElement) {
  // unbatch pulls one element at a time through batch; the rows must be the batches' rows.
  Iterator batched = seed_like(kAutotune, 100, false).iterator();
  Iterator rows = seed_like(kAutotune, 100, false).unbatch().batch(32).iterator();
  EXPECT_EQ(hash_rest(rows), hash_rest(batched));
}

TEST(SeedPipelineTest, ResumedStreamMatchesTheRecordedStream) {
  for (int parallelism : {0, kAutotune}) {
    Dataset d = seed_like(parallelism, 100, false);
    for (int64_t cut : {1, 17, 40, 93}) {
      Iterator first = d.iterator();
      Hash h;
      for (int64_t i = 0; i < cut; ++i) h.add(*first.next());
      std::vector<uint8_t> state = first.save();
      Iterator resumed = d.iterator();
      resumed.restore(state);
      while (std::optional<Element> b = resumed.next()) h.add(*b);
      EXPECT_EQ(h.h, kKeepRemainderHash) << "parallelism " << parallelism << ", cut " << cut;
    }
  }
}

}  // namespace
}  // namespace kiln::data
