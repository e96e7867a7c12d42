// EventFileWriter: files TensorBoard reads, decoded by an independent reader
// (tfevents_reader.py: its own CRC-32C and its own schema) and checked value by value.
#include "kiln/io/event_file_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <fstream>

#include "kiln/core/error.h"
#include "tests/io/tfevents_decode.h"
#include "tests/testing/temp_dir.h"

namespace kiln::io {
namespace {

class EventFileWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::python_has("google.protobuf"))
      GTEST_SKIP() << "/usr/bin/python3 lacks protobuf (apt-get install python3-protobuf)";
  }
  kiln::testing::TempDir dir_;
};

TEST_F(EventFileWriterTest, NamesTheFileAsTensorFlowDoesAndStartsWithTheFileVersion) {
  EventFileWriter w((dir_.path() / "run" / "train").string());
  w.close();
  const std::string name = std::filesystem::path(w.path()).filename().string();
  EXPECT_TRUE(std::regex_match(name, std::regex(R"(events\.out\.tfevents\.\d{10}\.[^.]+.*\.\d+\.\d+\.v2)"))) << name;
  nlohmann::json files = testing::decode_event_files({w.path()}, dir_.file("out.json"));
  ASSERT_EQ(files.size(), 1u);
  const auto& events = files[0]["events"];
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["file_version"], "brain.Event:2");
  EXPECT_GT(events[0]["wall_time"].get<double>(), 1.7e9);  // seconds since 1970, not a count
}

TEST_F(EventFileWriterTest, TwoWritersInOneDirectoryGetTwoFiles) {
  EventFileWriter a(dir_.path().string()), b(dir_.path().string());
  EXPECT_NE(a.path(), b.path());
}

TEST_F(EventFileWriterTest, ScalarsKeepTagStepAndFloatValue) {
  EventFileWriter w(dir_.path().string());
  w.add_scalar("epoch_loss", 0.25, 0);
  w.add_scalar("epoch_loss", 1.0 / 3.0, 1);
  w.add_scalar("batch_accuracy", -7.5, 40);
  w.close();
  const auto events = testing::decode_event_files({w.path()}, dir_.file("out.json"))[0]["events"];
  using Points = std::vector<std::pair<int64_t, double>>;
  EXPECT_EQ(testing::scalars(events, "epoch_loss"), (Points{{0, 0.25}, {1, static_cast<float>(1.0 / 3.0)}}));
  EXPECT_EQ(testing::scalars(events, "batch_accuracy"), (Points{{40, -7.5}}));
}

// Over [0, 30] the 30 buckets are [0,1), [1,2), ..., [29,30]: by hand 0 and 0.5 -> bucket 0,
// 1.5 -> 1, 2 -> 2, 10 -> 10, 29.5 and 30 (the closed top) -> 29.
TEST_F(EventFileWriterTest, HistogramHasTheStatisticsAndEqualWidthBuckets) {
  EventFileWriter w(dir_.path().string());
  std::vector<double> v{0, 0.5, 1.5, 2, 10, 29.5, 30};
  w.add_histogram("dense/kernel_0/histogram", v, 3);
  const double same[] = {2.5, 2.5};
  w.add_histogram("constant", same, 4);
  w.close();
  const auto events = testing::decode_event_files({w.path()}, dir_.file("out.json"))[0]["events"];
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1]["step"], 3);
  const auto& h = events[1]["summary"][0]["histo"];
  EXPECT_EQ(events[1]["summary"][0]["tag"], "dense/kernel_0/histogram");
  EXPECT_EQ(h["min"], 0.0);
  EXPECT_EQ(h["max"], 30.0);
  EXPECT_EQ(h["num"], 7.0);
  EXPECT_EQ(h["sum"], 73.5);
  EXPECT_EQ(h["sum_squares"], 1876.75);
  ASSERT_EQ(h["bucket"].size(), 30u);
  ASSERT_EQ(h["bucket_limit"].size(), 30u);
  EXPECT_EQ(h["bucket_limit"][0], 1.0);
  EXPECT_EQ(h["bucket_limit"][29], 30.0);
  std::vector<double> expected(30, 0.0);
  expected[0] = 2;
  expected[1] = expected[2] = expected[10] = 1;
  expected[29] = 2;
  EXPECT_EQ(h["bucket"].get<std::vector<double>>(), expected);
  const auto& c = events[2]["summary"][0]["histo"];
  EXPECT_EQ(c["bucket"].get<std::vector<double>>(), std::vector<double>{2.0});
  EXPECT_EQ(c["bucket_limit"].get<std::vector<double>>(), std::vector<double>{2.5});
}

TEST_F(EventFileWriterTest, GraphNodesKeepOpsInputsAndAttributes) {
  EventFileWriter w(dir_.path().string());
  w.add_graph({{.name = "x", .op = "parameter", .inputs = {}, .attrs = {{"shape", "f32[4,2]"}}},
               {.name = "dense/dot.2", .op = "dot_general", .inputs = {"x", "x"}, .attrs = {}}});
  w.close();
  const auto events = testing::decode_event_files({w.path()}, dir_.file("out.json"))[0]["events"];
  ASSERT_EQ(events.size(), 2u);
  const auto& g = events[1]["graph"];
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0]["op"], "parameter");
  EXPECT_EQ(g[0]["attr"]["shape"], "f32[4,2]");
  EXPECT_EQ(g[1]["name"], "dense/dot.2");
  EXPECT_EQ(g[1]["input"], (nlohmann::json{"x", "x"}));
}

TEST_F(EventFileWriterTest, ACorruptedByteFailsTheReadersCrcCheck) {
  std::string path;
  {
    EventFileWriter w(dir_.path().string());
    w.add_scalar("epoch_loss", 0.5, 0);
    path = w.path();
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-6, std::ios::end);  // inside the last record's data
    f.put('\x7f');
  }
  EXPECT_TRUE(testing::decode_event_files({path}, dir_.file("out.json")).empty());
}

TEST_F(EventFileWriterTest, AnUnwritableDirectoryIsAnIOErrorNamingIt) {
  const std::string blocker = dir_.file("a_file");
  std::ofstream(blocker) << "x";
  try {
    EventFileWriter w(blocker + "/train");
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find(blocker), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::io
