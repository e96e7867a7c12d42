// The flip campaign of issue 33: a few hundred mutants each of a saved .h5 and of a model
// directory (one-byte flips, some multi-byte flips and truncations; fixed seeds), each loaded
// in this process. Every mutant must load exactly the saved model (architecture, weights,
// compile arguments down to the loss's from_logits, the optimizer's config and every
// optimizer variable bit for bit) or throw a kiln::Error: never a model that differs, a
// dropped optimizer or a default in place of a damaged value. Loading a damaged file never
// crashes (tests/keras/saving/corruption_campaign.py loads each mutant in its own process).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "kiln/io/file_reader.h"
#include "kiln/keras/saving/saving.h"
#include "kiln/keras/saving/training_config.h"
#include "tests/keras/saving/saving_testing.h"
#include "tests/testing/temp_dir.h"

// libhdf5 1.10 leaks half-decoded objects when it rejects corrupt metadata (an upstream
// error-path leak; see tests/io/corrupt_files_test.cpp).
extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5_serial.so\n"; }

namespace kiln::keras {
namespace {

namespace fs = std::filesystem;

// Everything a load must restore, in comparable form.
struct Snapshot {
  std::string model_config;
  std::string training_config;  // loss (with its options), metrics, loss weights, optimizer config
  std::vector<std::pair<std::string, HostTensor>> variables;  // weights, then optimizer variables
};

Snapshot snapshot(const Model& model) {
  Snapshot s{model.to_json(), model.is_compiled() ? training_config_json(model.compile_options()) : "", {}};
  for (const Variable& v : model.weights()) s.variables.emplace_back(v.name(), v.storage().clone());
  if (model.is_compiled())
    for (const Variable& v : model.optimizer()->variables()) s.variables.emplace_back(v.name(), v.storage().clone());
  return s;
}

// "" when `b` is `a` bit for bit, else what differs.
std::string difference(const Snapshot& a, const Snapshot& b) {
  if (a.model_config != b.model_config) return "model_config differs";
  if (a.training_config != b.training_config) return "training config differs: " + b.training_config;
  if (a.variables.size() != b.variables.size())
    return str_cat(b.variables.size(), " variables where ", a.variables.size(), " were saved");
  for (size_t i = 0; i < a.variables.size(); ++i) {
    const auto& [name, value] = a.variables[i];
    const HostTensor& other = b.variables[i].second;
    if (name != b.variables[i].first || value.shape() != other.shape() ||
        std::memcmp(value.raw_data(), other.raw_data(), static_cast<size_t>(value.byte_size())) != 0)
      return "variable " + name + " differs";
  }
  return "";
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// One mutant of `valid`: mostly a one-byte flip, else 2-4 flipped bytes or a truncation.
std::string mutant(const std::string& valid, std::mt19937& rng) {
  std::string bytes = valid;
  const unsigned kind = rng() % 10;
  if (kind == 9) {
    bytes.resize(rng() % bytes.size());
    return bytes;
  }
  const unsigned flips = kind == 8 ? 2 + rng() % 3 : 1;
  for (unsigned k = 0; k < flips; ++k) bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
  return bytes;
}

// Mutants per format: a few seconds in all. (3,000 each, seeds 3333 and 3434, also pass:
// 670 and 8 exact loads, the rest kiln::Errors.)
constexpr int kMutants = 300;

struct Outcome {
  int exact = 0;
  int errors = 0;
};

// Writes `count` mutants of each file of `targets` in turn (the others stay valid), loads
// `load_path` after each and checks the outcome against `saved`.
Outcome campaign(const std::vector<std::string>& targets, const std::string& load_path, const Snapshot& saved,
                 int count, uint32_t seed) {
  std::vector<std::string> valid;
  for (const std::string& t : targets) valid.push_back(io::read_file(t));
  std::mt19937 rng(seed);
  Outcome out;
  for (int i = 0; i < count; ++i) {
    const size_t which = static_cast<size_t>(i) % targets.size();
    write_bytes(targets[which], mutant(valid[which], rng));
    try {
      const std::string diff = difference(saved, snapshot(*load_model(load_path)));
      if (diff.empty()) ++out.exact;
      else ADD_FAILURE() << targets[which] << " mutant " << i << " (seed " << seed << ") loaded, but " << diff;
    } catch (const Error&) {
      ++out.errors;
    } catch (const std::exception& e) {
      ADD_FAILURE() << targets[which] << " mutant " << i << " (seed " << seed << ") threw a non-kiln error: " << e.what();
    }
    write_bytes(targets[which], valid[which]);
  }
  return out;
}

class FlipCampaignTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A compiled model with non-trivial optimizer state: Adam after one fit step, and a loss
    // whose option (from_logits) a default would silently change.
    model_ = std::make_unique<Sequential>(std::vector<LayerHandle>{
        InputLayer({.shape = {6}}), Dense(8, {.activation = "relu"}), Dense(3)});
    model_->compile({.optimizer = Adam({.learning_rate = 0.01}),
                     .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                     .metrics = {"accuracy"}});
    testing::train(*model_, {6}, 1);
    saved_ = snapshot(*model_);
  }

  std::unique_ptr<Sequential> model_;
  Snapshot saved_;
  kiln::testing::TempDir dir_;
};

// The check itself can fail: a model compiled with another loss option or with an optimizer
// that was not trained differs from the saved one.
TEST_F(FlipCampaignTest, TheComparisonSeesTheLossOptionAndTheOptimizerState) {
  auto other = std::make_unique<Sequential>(std::vector<LayerHandle>{
      InputLayer({.shape = {6}}), Dense(8, {.activation = "relu"}), Dense(3)});
  other->set_weights(model_->get_weights());
  other->compile({.optimizer = Adam({.learning_rate = 0.01}),
                  .loss = SparseCategoricalCrossentropy({.from_logits = false}),
                  .metrics = {"accuracy"}});
  other->optimizer()->create_slots(other->trainable_weights());
  EXPECT_NE(difference(saved_, snapshot(*other)).find("training config differs"), std::string::npos);
  other->compile({.optimizer = Adam({.learning_rate = 0.01}),
                  .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}});
  other->optimizer()->create_slots(other->trainable_weights());
  EXPECT_NE(difference(saved_, snapshot(*other)).find("differs"), std::string::npos);  // fresh Adam state
  EXPECT_EQ(difference(saved_, snapshot(*load_model([&] {
              model_->save(dir_.file("same.h5"));
              return dir_.file("same.h5");
            }()))),
            "");
}

TEST_F(FlipCampaignTest, EveryH5MutantLoadsExactlyOrIsAnError) {
  model_->save(dir_.file("m.h5"));
  const Outcome o = campaign({dir_.file("m.h5")}, dir_.file("m.h5"), saved_, kMutants, 33);
  std::cout << "[ campaign ] m.h5: " << kMutants << " mutants, " << o.exact << " loaded exactly, " << o.errors << " kiln::Errors\n";
  EXPECT_EQ(o.exact + o.errors, kMutants);
  EXPECT_GT(o.errors, kMutants / 2);  // most bytes of a small model file matter
}

TEST_F(FlipCampaignTest, EveryModelDirectoryMutantLoadsExactlyOrIsAnError) {
  model_->save(dir_.file("d"));
  std::vector<std::string> targets = {dir_.file("d/model.json")};
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir_.file("d")))
    if (e.path().extension() == ".safetensors") targets.push_back(e.path().string());
  ASSERT_EQ(targets.size(), 3u);  // model.json, weights, optimizer
  // model.json twice in each round: it is the file a reader trusts most.
  targets.push_back(targets[0]);
  const Outcome o = campaign(targets, dir_.file("d"), saved_, kMutants, 34);
  std::cout << "[ campaign ] model directory: " << kMutants << " mutants, " << o.exact << " loaded exactly, " << o.errors
            << " kiln::Errors\n";
  EXPECT_EQ(o.exact + o.errors, kMutants);
  EXPECT_GT(o.errors, kMutants / 2);
}

}  // namespace
}  // namespace kiln::keras
