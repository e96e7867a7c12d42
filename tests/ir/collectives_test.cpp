// The collectives' attributes and semantics in the IR: replica-group checks, shape inference
// with its errors, printed text, and evaluate_replicas against hand-computed values (x_r on
// replica r), with and without replica groups.
#include "kiln/ir/collectives.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/reference_eval.h"
#include "tests/testing/expect_error.h"

namespace kiln::ir {
namespace {

const Shape kF32x2x4(DType::kF32, {2, 4});

// Replica r's x: a 2x4 f32 counting from 10*r (row-major), so every element names its replica.
HostTensor replica_x(int r) {
  std::vector<float> v;
  for (int i = 0; i < 8; ++i) v.push_back(static_cast<float>(10 * r + i));
  return HostTensor::from_vector<float>({2, 4}, v);
}

// Evaluates `make(x)` on `n` replicas of replica_x; returns each replica's values.
template <typename Make>
std::vector<std::vector<float>> on_replicas(int n, Make make, Shape* shape = nullptr) {
  Module m("m");
  Builder b(m.entry());
  Instruction* out = make(b, b.parameter(kF32x2x4, "x"));
  m.entry()->set_outputs({out});
  if (shape != nullptr) *shape = out->shape();
  std::vector<std::vector<HostTensor>> args;
  for (int r = 0; r < n; ++r) args.push_back({replica_x(r)});
  std::vector<std::vector<float>> values;
  for (const auto& outs : evaluate_replicas(*m.entry(), args)) values.push_back(outs[0].to_vector<float>());
  return values;
}

TEST(ReplicaGroupsTest, APartitionIntoEqualGroupsIsValidAndAnythingElseSaysWhy) {
  EXPECT_EQ(replica_groups_error({{0, 2}, {1, 3}}, 2), "");
  EXPECT_EQ(replica_groups_error({}, 4, 4), "");
  EXPECT_NE(replica_groups_error({{0, 1}, {2}}, 2).find("{2} holds 1"), std::string::npos);
  EXPECT_NE(replica_groups_error({{0, 1}, {1, 2}}, 2).find("name replica 1 twice"), std::string::npos);
  EXPECT_NE(replica_groups_error({{0, 1}, {2, 5}}, 2).find("cover the replicas 0..3 exactly"), std::string::npos);
  EXPECT_NE(replica_groups_error({{0, 1}}, 2, 4).find("cover 2 replicas, but the step runs on 4"), std::string::npos);
  EXPECT_NE(replica_groups_error({}, 2, 4).find("made for 2 replicas in one group, but the step runs on 4"),
            std::string::npos);
  const GroupPlace p = group_place({{0, 2}, {1, 3}}, 4, 3);
  EXPECT_EQ(p.members, (Dims{1, 3}));
  EXPECT_EQ(p.position, 1);
}

TEST(CollectiveShapeTest, ShapesFollowTheGroupSize) {
  Module m("m");
  Builder b(m.entry());
  Instruction* x = b.parameter(kF32x2x4, "x");
  EXPECT_EQ(b.all_gather(x, 1, 4)->shape(), Shape(DType::kF32, {2, 16}));
  EXPECT_EQ(b.reduce_scatter(x, ReduceKind::kSum, 1, 4)->shape(), Shape(DType::kF32, {2, 1}));
  EXPECT_EQ(b.all_to_all(x, 1, 0, 2)->shape(), Shape(DType::kF32, {4, 2}));
  EXPECT_EQ(b.all_to_all(x, 1, 1, 4)->shape(), kF32x2x4);
  EXPECT_EQ(b.collective_permute(x, {{0, 1}, {1, 0}}, 2)->shape(), kF32x2x4);
  EXPECT_EQ(b.all_gather(x, 0, 2, {{0, 2}, {1, 3}})->shape(), Shape(DType::kF32, {4, 4}));
}

TEST(CollectiveShapeTest, BadAttributesAreClearErrors) {
  Module m("m");
  Builder b(m.entry());
  Instruction* x = b.parameter(kF32x2x4, "x");
  KILN_EXPECT_ERROR(b.reduce_scatter(x, ReduceKind::kSum, 1, 3), ShapeError,
                    "[reduce_scatter] splits dim=1 of f32[2,4] into 3 equal parts (one per replica of a group), but 4 "
                    "is not divisible by 3.");
  KILN_EXPECT_ERROR(b.all_to_all(x, 0, 1, 4), ShapeError, "splits split_dim=0 of f32[2,4] into 4 equal parts");
  KILN_EXPECT_ERROR(b.all_gather(x, 2, 2), ShapeError, "dim=2 is outside the dims of f32[2,4]: expected 0..1.");
  KILN_EXPECT_ERROR(b.all_gather(x, 0, 0), ShapeError, "needs group_size >= 1");
  KILN_EXPECT_ERROR(b.all_gather(x, 0, 2, {{0, 1}, {1, 2}}), ShapeError, "name replica 1 twice");
  KILN_EXPECT_ERROR(b.reduce_scatter(x, ReduceKind::kMax, 0, 2), ShapeError, "reduces with sum or mean, received max");
  KILN_EXPECT_ERROR(b.collective_permute(x, {{0, 2}}, 2), ShapeError,
                    "pair {0,2} of {{0,2}} names a replica outside 0..1 (group_size=2).");
  KILN_EXPECT_ERROR(b.collective_permute(x, {{0, 1}, {1, 1}}, 2), ShapeError, "name target 1 twice");
  Instruction* i = b.parameter(Shape(DType::kI32, {4}), "i");
  KILN_EXPECT_ERROR(b.reduce_scatter(i, ReduceKind::kMean, 0, 2), DTypeError,
                    "mean reduce_scatter needs a floating-point operand");
}

TEST(CollectiveShapeTest, PrintedTextNamesEveryAttribute) {
  Module m("m");
  Builder b(m.entry());
  Instruction* x = b.parameter(kF32x2x4, "x");
  m.entry()->set_outputs({b.all_gather(x, 1, 2, {{0, 1}, {2, 3}}), b.reduce_scatter(x, ReduceKind::kMean, 1, 4),
                          b.all_to_all(x, 1, 0, 2), b.collective_permute(x, {{0, 1}}, 2)});
  const std::string text = to_string(m);
  EXPECT_NE(text.find("f32[2,8] all_gather(%0), dim=1, group_size=2, replica_groups={{0,1},{2,3}}"), std::string::npos)
      << text;
  EXPECT_NE(text.find("f32[2,1] reduce_scatter(%0), kind=mean, dim=1, group_size=4"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[4,2] all_to_all(%0), split_dim=1, concat_dim=0, group_size=2"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[2,4] collective_permute(%0), pairs={{0,1}}, group_size=2"), std::string::npos) << text;
}

TEST(EvaluateReplicasTest, AllGatherConcatenatesInReplicaOrder) {
  const auto v = on_replicas(2, [](Builder& b, Instruction* x) { return b.all_gather(x, 1, 2); });
  // Row 0 of replica 0 then of replica 1, then row 1 of each.
  const std::vector<float> want = {0, 1, 2, 3, 10, 11, 12, 13, 4, 5, 6, 7, 14, 15, 16, 17};
  EXPECT_EQ(v[0], want);
  EXPECT_EQ(v[1], want);
}

TEST(EvaluateReplicasTest, ReduceScatterKeepsEachReplicasPartOfTheSum) {
  // Sum over 4 replicas: element i is 4i + 10(0+1+2+3) = 4i + 60; replica r keeps column r.
  const auto v = on_replicas(4, [](Builder& b, Instruction* x) { return b.reduce_scatter(x, ReduceKind::kSum, 1, 4); });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(v[static_cast<size_t>(r)], (std::vector<float>{60.f + 4 * r, 60.f + 4 * (4 + r)}));
  const auto mean = on_replicas(2, [](Builder& b, Instruction* x) { return b.reduce_scatter(x, ReduceKind::kMean, 0, 2); });
  EXPECT_EQ(mean[1], (std::vector<float>{9, 10, 11, 12}));  // row 1: (4+14)/2, ...
}

TEST(EvaluateReplicasTest, AllToAllSendsPartIToReplicaI) {
  // Split the columns in two: replica r gets columns 2r..2r+1 of both replicas, stacked on rows.
  Shape shape;
  const auto v = on_replicas(2, [](Builder& b, Instruction* x) { return b.all_to_all(x, 1, 0, 2); }, &shape);
  EXPECT_EQ(shape, Shape(DType::kF32, {4, 2}));
  EXPECT_EQ(v[0], (std::vector<float>{0, 1, 4, 5, 10, 11, 14, 15}));
  EXPECT_EQ(v[1], (std::vector<float>{2, 3, 6, 7, 12, 13, 16, 17}));
}

TEST(EvaluateReplicasTest, CollectivePermuteSendsAlongPairsAndZerosTheRest) {
  const auto v = on_replicas(3, [](Builder& b, Instruction* x) { return b.collective_permute(x, {{0, 1}, {1, 2}}, 3); });
  EXPECT_EQ(v[0], std::vector<float>(8, 0.f));  // nobody sends to replica 0
  EXPECT_EQ(v[1], replica_x(0).to_vector<float>());
  EXPECT_EQ(v[2], replica_x(1).to_vector<float>());
}

TEST(EvaluateReplicasTest, ReplicaGroupsMeetSeparately) {
  // Groups {0,2} and {1,3}: a collective along one axis of a 2x2 mesh.
  const std::vector<Dims> groups = {{0, 2}, {1, 3}};
  const auto sums = on_replicas(4, [&](Builder& b, Instruction* x) { return b.all_reduce(x, ReduceKind::kSum, groups); });
  EXPECT_EQ(sums[0][0], 20.f);  // 0 + 20
  EXPECT_EQ(sums[3][0], 40.f);  // 10 + 30
  const auto gathered = on_replicas(4, [&](Builder& b, Instruction* x) { return b.all_gather(x, 0, 2, groups); });
  EXPECT_EQ(gathered[1][8], 30.f);  // replica 1's group is {1,3}: its second block is replica 3's
  const auto permuted =
      on_replicas(4, [&](Builder& b, Instruction* x) { return b.collective_permute(x, {{1, 0}}, 2, groups); });
  EXPECT_EQ(permuted[0][0], 20.f);  // position 0 of {0,2} receives from position 1: replica 2
  EXPECT_EQ(permuted[1][0], 30.f);
  EXPECT_EQ(permuted[2][0], 0.f);
}

TEST(EvaluateReplicasTest, ACollectiveForAnotherReplicaCountIsAnError) {
  Module m("m");
  Builder b(m.entry());
  m.entry()->set_outputs({b.all_gather(b.parameter(kF32x2x4, "x"), 0, 4)});
  KILN_EXPECT_ERROR(evaluate(m, std::vector<HostTensor>{replica_x(0)}), CompileError,
                    "[reference/all_gather] it was made for 4 replicas in one group, but the step runs on 1");
}

}  // namespace
}  // namespace kiln::ir
