// Damaged and mismatched files: each gives an IOError naming the file and the problem (wrong
// shapes, missing datasets, bad JSON, bad checksums, wrong layer counts, truncation), and a
// randomized corruption pass over every loader (fixed seeds) that must only ever succeed or
// throw IOError. Run under ASan too (KILN_SANITIZE=ON), as corrupt_files_test in tests/io.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include <nlohmann/json.hpp>

#include "kiln/core/crc32c.h"
#include "kiln/io/file_reader.h"
#include "kiln/io/hdf5_file.h"
#include "kiln/keras/saving/checkpoint.h"
#include "kiln/keras/saving/saving.h"
#include "tests/io/isolated.h"
#include "tests/io/python_check.h"
#include "tests/keras/saving/saving_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

// libhdf5 1.10 leaks half-decoded objects when it rejects corrupt metadata (an upstream
// error-path leak; see tests/io/corrupt_files_test.cpp).
extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5_serial.so\n"; }

namespace kiln::keras {
namespace {

using namespace testing;
namespace fs = std::filesystem;

// The weights file of the model saved in `dir` (in its data directory).
std::string weights_file(const std::string& dir) {
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename() == "weights.safetensors") return e.path().string();
  return "";
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = build_model(model_cases()[0]);
    compile_model(*model_, "adam");
    train(*model_, model_cases()[0].input, 2);
  }
  std::unique_ptr<Sequential> model_;
  kiln::testing::TempDir dir_;
};

TEST_F(CorruptionTest, WrongShapeIsNamedWithBothShapes) {
  model_->save_weights(dir_.file("w.h5"));
  Sequential wider({InputLayer({.shape = {4, 5}}), Flatten(), Dense(9, {.activation = "relu"}), Dense(3)});
  KILN_EXPECT_ERROR(wider.load_weights(dir_.file("w.h5")), IOError,
                    "/dense/dense/kernel:0 has shape f32[20,8], but dense/kernel is f32[20,9]");
  KILN_EXPECT_ERROR(wider.load_weights(dir_.file("w.h5")), IOError, dir_.file("w.h5"));
}

TEST_F(CorruptionTest, WrongLayerCountIsNamed) {
  model_->save(dir_.file("m.h5"));
  Sequential deeper({InputLayer({.shape = {4, 5}}), Flatten(), Dense(8), Dense(8), Dense(3)});
  KILN_EXPECT_ERROR(deeper.load_weights(dir_.file("m.h5")), IOError,
                    "holds weights for 2 layers (dense, dense_1), but model 'sequential' has 3 layers with weights");
}

TEST_F(CorruptionTest, MissingDatasetIsNamed) {
  model_->save(dir_.file("m.h5"));
  {
    io::Hdf5File f = io::Hdf5File::open(dir_.file("m.h5"), /*writable=*/true);
    f.root().open_group("model_weights/dense_1").remove("dense_1/bias:0");
  }
  KILN_EXPECT_ERROR(load_model(dir_.file("m.h5")), IOError, "missing dataset /model_weights/dense_1/dense_1/bias:0");
}

TEST_F(CorruptionTest, BadJsonIsNamed) {
  model_->save(dir_.file("m.h5"));
  {
    io::Hdf5File f = io::Hdf5File::open(dir_.file("m.h5"), /*writable=*/true);
    f.root().write_string_attribute("model_config", "{\"class_name\": \"Sequential\", ");
  }
  KILN_EXPECT_ERROR(load_model(dir_.file("m.h5")), IOError, "model_config is malformed");
  model_->save(dir_.file("d"));
  write_bytes(dir_.file("d/model.json"), "{\"format\": ");
  KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError, "model.json] is not valid JSON");
}

TEST_F(CorruptionTest, OptimizerStateMismatchWarnsAndStartsFresh) {
  model_->save(dir_.file("m.h5"));
  {
    io::Hdf5File f = io::Hdf5File::open(dir_.file("m.h5"), /*writable=*/true);
    io::Hdf5Group g = f.root().open_group("optimizer_weights");
    std::vector<std::string> names = g.read_keras_string_list("weight_names");
    names.pop_back();
    g.write_keras_string_list("weight_names", names);
  }
  // Keras warns and starts a fresh optimizer when the saved state does not fit; so does Kiln.
  ::testing::internal::CaptureStderr();
  std::unique_ptr<Model> loaded = load_model(dir_.file("m.h5"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("m.h5] (written by Keras 2.15.0) skipped the saved optimizer state (8 optimizer_weights entries)"),
            std::string::npos) << err;
  ASSERT_TRUE(loaded->is_compiled());
  EXPECT_EQ(loaded->optimizer()->iterations().storage().to_vector<int64_t>()[0], 0);
  EXPECT_FALSE(load_model(dir_.file("m.h5"), {.compile = false})->is_compiled());
}

TEST_F(CorruptionTest, DirectoryChecksumAndMissingFilesAreNamed) {
  model_->save(dir_.file("d"));
  const std::string data = fs::path(weights_file(dir_.file("d"))).parent_path().string();
  const std::string good = io::read_file(data + "/weights.safetensors");
  std::string bytes = good;
  bytes[bytes.size() - 3] ^= 0x10;  // a weight value: safetensors itself cannot notice
  write_bytes(data + "/weights.safetensors", bytes);
  KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError, "weights.safetensors] does not match the checksum");
  write_bytes(data + "/weights.safetensors", good);
  fs::remove(data + "/optimizer.safetensors");
  KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError, "optimizer.safetensors] is missing");
  EXPECT_FALSE(load_model(dir_.file("d"), {.compile = false})->is_compiled());
  KILN_EXPECT_ERROR(load_model(dir_.file("nowhere")), IOError, "does not exist");
}

// `text` with the first `from` at or after `after` replaced by `to` (which must be found).
std::string replaced(std::string text, const std::string& from, const std::string& to, size_t after = 0) {
  const size_t at = text.find(from, after);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

// model.json with its own checksum recomputed, as a hand edit (or a Kiln bug) would leave it.
std::string with_recomputed_crc(const std::string& toc_text) {
  nlohmann::json toc = nlohmann::json::parse(toc_text);
  toc.erase("crc32c");
  const std::string compact = toc.dump();
  toc["crc32c"] = crc32c(compact.data(), compact.size());
  return toc.dump(2);
}

// model.json's file entries name files inside the directory: a path leaving it is never opened.
TEST_F(CorruptionTest, AModelJsonFileEntryThatLeavesTheDirectoryIsRejected) {
  model_->save(dir_.file("d"));
  const std::string toc = io::read_file(dir_.file("d/model.json"));
  for (const std::string evil : {"../outside.safetensors", "/etc/passwd", "sub/weights.safetensors", ".."}) {
    std::string edited = toc;
    const std::string from = "\"file\": \"weights.safetensors\"";
    ASSERT_NE(edited.find(from), std::string::npos) << toc;
    edited.replace(edited.find(from), from.size(), "\"file\": \"" + evil + "\"");
    write_bytes(dir_.file("d/model.json"), with_recomputed_crc(edited));  // as a hand edit would
    KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError, "lists '" + evil + "' as its 'weights' file, which is not");
  }
  std::string typed = toc;
  const std::string entry = "\"file\": \"weights.safetensors\"";
  typed.replace(typed.find(entry), entry.size(), "\"file\": 7");
  write_bytes(dir_.file("d/model.json"), with_recomputed_crc(typed));
  KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError, "has no valid 'weights' entry");
}

// Saving into a directory the user may not write names that, not the file's HDF5 layout. As
// root (CI), the save runs in a child that drops to nobody, for whom the mode bits count.
TEST_F(CorruptionTest, AReadOnlyDestinationSaysTheDirectoryIsNotWritable) {
  const std::string ro = dir_.file("read_only");
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                          fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  for (const std::string name : {"m.h5", "m_dir", "w.safetensors", "c.kckpt"}) {
    const std::string path = ro + "/" + name;
    std::string r = io::testing::run_isolated([&] {
      if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) throw std::runtime_error("setuid");
      if (name == "w.safetensors") model_->save_weights(path);
      else if (name == "c.kckpt") Checkpoint(*model_).write(path);
      else model_->save(path);
    });
    EXPECT_TRUE(r.starts_with("IOError") && r.find("[" + ro + "] the directory is not writable") != std::string::npos &&
                r.find(path) != std::string::npos && r.find("HDF5") == std::string::npos)
        << name << ": " << r;
  }
}

TEST_F(CorruptionTest, TruncatedFilesAreIOErrors) {
  model_->save(dir_.file("m.h5"));
  Checkpoint(*model_).write(dir_.file("c.kckpt"));
  for (const std::string& f : {dir_.file("m.h5"), dir_.file("c.kckpt")}) {
    std::string bytes = io::read_file(f);
    write_bytes(f, bytes.substr(0, bytes.size() / 2));
  }
  KILN_EXPECT_ERROR(load_model(dir_.file("m.h5")), IOError, dir_.file("m.h5"));
  KILN_EXPECT_ERROR(Checkpoint(*model_).read(dir_.file("c.kckpt")), IOError, dir_.file("c.kckpt"));
}

// ---- Issue 33: the damaged files that once loaded silently as another training setup ------

// "training_config" flipped to "trainilg_config": the model once loaded uncompiled, its Adam
// state dropped though model.json listed it.
TEST_F(CorruptionTest, AFlippedModelJsonKeyIsNamed) {
  model_->save(dir_.file("d"));
  const std::string toc = io::read_file(dir_.file("d/model.json"));
  write_bytes(dir_.file("d/model.json"), replaced(toc, "\"training_config\"", "\"trainilg_config\""));
  KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError, "model.json] has an unknown key 'trainilg_config'");
  KILN_EXPECT_ERROR(load_model(dir_.file("d"), {.compile = false}), IOError, "unknown key 'trainilg_config'");
  // A key model.json needs, gone (with the checksum fixed up, as a hand edit would leave it).
  nlohmann::json no_weights = nlohmann::json::parse(toc);
  no_weights.erase("weights");
  write_bytes(dir_.file("d/model.json"), with_recomputed_crc(no_weights.dump()));
  KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError, "model.json] lacks the key 'weights'");
}

// One bit of the loss's "config" key ("Config"): the loss once loaded with from_logits false.
// The checksum of model.json catches it; with the checksum fixed up (a hand edit), or in a
// directory of an earlier Kiln (version 2, no checksum), the strict loss reader names the key.
TEST_F(CorruptionTest, AFlippedLossConfigKeyIsNamedNotDefaulted) {
  model_->save(dir_.file("d"));
  const std::string toc = io::read_file(dir_.file("d/model.json"));
  const std::string flipped = replaced(toc, "\"config\"", "\"Config\"", toc.find("\"loss\""));
  write_bytes(dir_.file("d/model.json"), flipped);
  KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError,
                    "model.json] does not match the CRC-32C of its content that it records (crc32c)");
  write_bytes(dir_.file("d/model.json"), with_recomputed_crc(flipped));
  KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError, "serialized loss config has an unexpected key 'Config'");
  nlohmann::json v2 = nlohmann::json::parse(flipped);
  v2.erase("crc32c");
  v2["version"] = 2;
  write_bytes(dir_.file("d/model.json"), v2.dump(2));
  KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError, "unexpected key 'Config'");
  // Undamaged, that version-2 directory loads as before (its loss from_logits as saved).
  v2 = nlohmann::json::parse(toc);
  v2.erase("crc32c");
  v2["version"] = 2;
  write_bytes(dir_.file("d/model.json"), v2.dump(2));
  std::unique_ptr<Model> loaded = load_model(dir_.file("d"));
  EXPECT_EQ(nlohmann::json::parse(loaded->compile_options().loss->get_config())["from_logits"], true);
  v2["version"] = 4;
  write_bytes(dir_.file("d/model.json"), v2.dump(2));
  KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError, "has version 4; this Kiln reads versions 1 to 3");
  // A crc32c in a directory whose version has none is an unknown key (a flipped version).
  write_bytes(dir_.file("d/model.json"), replaced(toc, "\"version\": 3", "\"version\": 2"));
  KILN_EXPECT_ERROR(load_model(dir_.file("d")), IOError, "unknown key 'crc32c'");
}

// The recipe docs/saving.md gives for model.json's checksum: Python's json module writes the
// compact text whose CRC-32C the file records.
TEST_F(CorruptionTest, ModelJsonChecksumIsReproducibleFromItsContent) {
  model_->save(dir_.file("d"));
  const char* script = R"PY(
import json, sys
toc = json.load(open(sys.argv[1] + '/d/model.json'))
toc.pop('crc32c')
text = json.dumps(toc, sort_keys=True, separators=(',', ':'), ensure_ascii=False)
open(sys.argv[1] + '/compact.json', 'w', encoding='utf-8').write(text)
)PY";
  ASSERT_EQ(io::testing::run_python(dir_.file("compact.py"), script, dir_.path().string()), 0);
  const std::string compact = io::read_file(dir_.file("compact.json"));
  EXPECT_EQ(nlohmann::json::parse(io::read_file(dir_.file("d/model.json")))["crc32c"].get<uint32_t>(),
            crc32c(compact.data(), compact.size()));
}

// Flips in the object header of /optimizer_weights: libhdf5 cannot open the group, which the
// HDF5 wrapper once answered as "no such group", loading a fresh optimizer without a word.
TEST_F(CorruptionTest, ADamagedOptimizerWeightsHeaderIsAnErrorNotAFreshOptimizer) {
  model_->save(dir_.file("m.h5"));
  const std::string good = io::read_file(dir_.file("m.h5"));
  // The group's links (compact storage, in its own header) hold the optimizer's dataset
  // names; its header begins at the last "OHDR" signature before them.
  const size_t link = good.find("Adam/iter:0");
  ASSERT_NE(link, std::string::npos);
  const size_t header = good.rfind("OHDR", link);
  ASSERT_NE(header, std::string::npos);
  for (const size_t at : {link, header + 5}) {
    std::string bytes = good;
    bytes[at] ^= 0x04;
    write_bytes(dir_.file("m.h5"), bytes);
    KILN_EXPECT_ERROR(load_model(dir_.file("m.h5")), IOError, "m.h5:/optimizer_weights] is listed but cannot be read");
    // Without the optimizer, the group is not read at all and the model loads.
    EXPECT_FALSE(load_model(dir_.file("m.h5"), {.compile = false})->is_compiled());
  }
}

// Flips 1-8 bytes and/or truncates, `iterations` times, and loads each result.
void fuzz(const std::string& valid, const std::string& path, int iterations, uint32_t seed,
          const std::function<void()>& load) {
  std::mt19937 rng(seed);
  int io_errors = 0;
  for (int i = 0; i < iterations; ++i) {
    std::string bytes = valid;
    const unsigned mode = rng() % 3;
    if (mode != 1)
      for (unsigned k = 0, flips = 1 + rng() % 8; k < flips; ++k)
        bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
    if (mode != 0) bytes.resize(rng() % bytes.size());
    write_bytes(path, bytes);
    try {
      load();
    } catch (const IOError&) {
      ++io_errors;
    } catch (const std::exception& e) {
      ADD_FAILURE() << path << " iteration " << i << " (seed " << seed << ") threw a non-IOError: " << e.what();
    }
  }
  EXPECT_GT(io_errors, iterations / 3) << path;  // most mutations are caught
}

TEST_F(CorruptionTest, RandomCorruptionOfEveryLoaderIsAnIOErrorOrALoad) {
  model_->save(dir_.file("m.h5"));
  model_->save_weights(dir_.file("w.h5"));
  model_->save(dir_.file("d"));
  Checkpoint(*model_).write(dir_.file("c.kckpt"));
  const std::string m = io::read_file(dir_.file("m.h5")), w = io::read_file(dir_.file("w.h5")),
                    toc = io::read_file(dir_.file("d/model.json")),
                    weights = io::read_file(weights_file(dir_.file("d"))),
                    ckpt = io::read_file(dir_.file("c.kckpt"));
  auto target = build_model(model_cases()[0]);
  compile_model(*target, "adam");
  fuzz(m, dir_.file("m.h5"), 150, 1, [&] { load_model(dir_.file("m.h5")); });
  fuzz(w, dir_.file("w.h5"), 100, 2, [&] { target->load_weights(dir_.file("w.h5")); });
  fuzz(toc, dir_.file("d/model.json"), 100, 3, [&] { load_model(dir_.file("d")); });
  write_bytes(dir_.file("d/model.json"), toc);
  fuzz(weights, weights_file(dir_.file("d")), 100, 4, [&] { load_model(dir_.file("d")); });
  fuzz(ckpt, dir_.file("c.kckpt"), 150, 5, [&] { Checkpoint(*target).read(dir_.file("c.kckpt")); });
}

}  // namespace
}  // namespace kiln::keras
