#include "kiln/io/hdf5_file.h"

#include <gtest/gtest.h>

#include "kiln/core/error.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/file_reader.h"
#include "tests/io/tensor_samples.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::io {
namespace {

class Hdf5FileTest : public ::testing::Test {
 protected:
  kiln::testing::TempDir dir_temp_;
  std::string path_ = dir_temp_.file("model.h5");
};

TEST_F(Hdf5FileTest, DatasetsRoundTripEveryDtypeScalarsAndEmptyTensors) {
  auto tensors = testing::every_dtype_tensors();
  {
    Hdf5File f = Hdf5File::create(path_);
    Hdf5Group g = f.root().create_group("weights");
    for (const NamedTensor& t : tensors) g.write_dataset(t.name, t.tensor);
  }
  Hdf5File f = Hdf5File::open(path_);
  Hdf5Group g = f.root().open_group("weights");
  for (const NamedTensor& t : tensors) {
    EXPECT_EQ(g.dataset_shape(t.name), t.tensor.shape()) << t.name;
    testing::expect_same_tensor(g.read_dataset(t.name), t.tensor, t.name);
  }
}

TEST_F(Hdf5FileTest, NestedNamesCreateIntermediateGroupsAsKerasExpects) {
  {
    Hdf5File f = Hdf5File::create(path_);
    Hdf5Group layer = f.root().create_group("model_weights").create_group("dense");
    layer.write_dataset("dense/kernel:0", HostTensor(Shape(DType::kF32, {784, 2})));
    layer.write_dataset("dense/bias:0", HostTensor(Shape(DType::kF32, {2})));
  }
  Hdf5File f = Hdf5File::open(path_);
  EXPECT_TRUE(f.root().has_dataset("model_weights/dense/dense/kernel:0"));
  EXPECT_TRUE(f.root().has_group("model_weights/dense/dense"));
  EXPECT_FALSE(f.root().has_group("model_weights/dense/dense/kernel:0"));
  EXPECT_FALSE(f.root().contains("model_weights/missing/deeper"));
  Hdf5Group inner = f.root().open_group("model_weights/dense/dense");
  EXPECT_EQ(inner.path(), "/model_weights/dense/dense");
  EXPECT_EQ(inner.children(), (std::vector<std::string>{"bias:0", "kernel:0"}));
  EXPECT_EQ(inner.dataset_shape("kernel:0"), Shape(DType::kF32, {784, 2}));
}

TEST_F(Hdf5FileTest, ChildrenAreSortedByNameAndGroupsCanBeRequiredAndRemoved) {
  Hdf5File f = Hdf5File::create(path_);
  for (const char* name : {"dropout", "dense_1", "dense", "flatten"}) f.root().create_group(name);
  EXPECT_EQ(f.root().children(),
            (std::vector<std::string>{"dense", "dense_1", "dropout", "flatten"}));
  f.root().require_group("dense");  // exists: opened
  f.root().require_group("new");    // absent: created
  f.root().remove("dropout");
  EXPECT_EQ(f.root().children(), (std::vector<std::string>{"dense", "dense_1", "flatten", "new"}));
  KILN_EXPECT_ERROR(f.root().create_group("dense"), IOError, ":/dense] cannot create group");
}

TEST_F(Hdf5FileTest, StringAttributesRoundTripInEveryEncoding) {
  const std::string text = "{\"class_name\": \"Sequential\", \"name\": \"caf\xc3\xa9\"}";
  {
    Hdf5File f = Hdf5File::create(path_);
    f.root().write_string_attribute("utf8", text, StringKind::kVariableUtf8);
    f.root().write_string_attribute("ascii", "tensorflow", StringKind::kVariableAscii);
    f.root().write_string_attribute("fixed", "2.4.0", StringKind::kFixedAscii);
    f.root().write_string_attribute("empty_fixed", "", StringKind::kFixedAscii);
    f.root().write_string_attribute("replaced", "old");
    f.root().write_string_attribute("replaced", "new");
  }
  Hdf5File f = Hdf5File::open(path_);
  EXPECT_EQ(f.root().read_string_attribute("utf8"), text);
  EXPECT_EQ(f.root().read_string_attribute("ascii"), "tensorflow");
  EXPECT_EQ(f.root().read_string_attribute("fixed"), "2.4.0");
  EXPECT_EQ(f.root().read_string_attribute("empty_fixed"), "");
  EXPECT_EQ(f.root().read_string_attribute("replaced"), "new");
  // Variable-length texts carry Kiln's record of their place in the global heap.
  EXPECT_EQ(f.root().attribute_names(), (std::vector<std::string>{"ascii", "ascii.kiln_ref", "empty_fixed", "fixed",
                                                                  "replaced", "utf8", "utf8.kiln_ref"}));
}

TEST_F(Hdf5FileTest, StringListAttributesRoundTripInEveryEncoding) {
  const std::vector<std::string> names = {"dense/kernel:0", "dense/bias:0", ""};
  Hdf5File f = Hdf5File::create(path_);
  for (StringKind kind :
       {StringKind::kFixedAscii, StringKind::kVariableAscii, StringKind::kVariableUtf8}) {
    f.root().write_string_list_attribute("names", names, kind);
    EXPECT_EQ(f.root().read_string_list_attribute("names"), names);
  }
  f.root().write_string_list_attribute("none", {});
  EXPECT_TRUE(f.root().read_string_list_attribute("none").empty());
  // A scalar text attribute reads as a one-element list.
  f.root().write_string_attribute("one", "x");
  EXPECT_EQ(f.root().read_string_list_attribute("one"), std::vector<std::string>{"x"});
}

TEST_F(Hdf5FileTest, NumericAttributesRoundTrip) {
  Hdf5File f = Hdf5File::create(path_);
  for (const NamedTensor& t : testing::every_dtype_tensors()) {
    f.root().write_tensor_attribute(t.name, t.tensor);
    testing::expect_same_tensor(f.root().read_tensor_attribute(t.name), t.tensor, t.name);
  }
}

TEST_F(Hdf5FileTest, KerasStringListsOver64KiBAreSplitLikeNumpyArraySplit) {
  // 3000 names of 30 bytes = 90000 bytes: two chunks of 1500 (np.array_split).
  std::vector<std::string> names;
  for (int i = 0; i < 3000; ++i) names.push_back(str_cat("layer_with_a_long_name_", 1000000 + i));
  {
    Hdf5File f = Hdf5File::create(path_);
    Hdf5Group g = f.root().create_group("model_weights");
    g.write_keras_string_list("layer_names", names);
  }
  Hdf5File f = Hdf5File::open(path_, /*writable=*/true);
  Hdf5Group g = f.root().open_group("model_weights");
  EXPECT_EQ(g.attribute_names(), (std::vector<std::string>{"layer_names0", "layer_names1"}));
  EXPECT_EQ(g.read_string_list_attribute("layer_names0").size(), 1500u);
  EXPECT_TRUE(g.has_keras_string_list("layer_names"));
  EXPECT_EQ(g.read_keras_string_list("layer_names"), names);

  // Rewriting a short list removes the stale chunks.
  g.write_keras_string_list("layer_names", {"dense"});
  EXPECT_EQ(g.attribute_names(), std::vector<std::string>{"layer_names"});
  EXPECT_EQ(g.read_keras_string_list("layer_names"), std::vector<std::string>{"dense"});
}

TEST_F(Hdf5FileTest, KerasEmptyListIsAnEmptyFloatArray) {
  Hdf5File f = Hdf5File::create(path_);
  f.root().write_keras_string_list("weight_names", {});
  EXPECT_EQ(f.root().read_tensor_attribute("weight_names").shape(), Shape(DType::kF64, {0}));
  EXPECT_TRUE(f.root().read_keras_string_list("weight_names").empty());
  EXPECT_TRUE(f.root().read_keras_string_list("absent").empty());
  EXPECT_FALSE(f.root().has_keras_string_list("absent"));
}

TEST_F(Hdf5FileTest, AStringLongerThanTheHeaderLimitIsAnIOError) {
  Hdf5File f = Hdf5File::create(path_);
  KILN_EXPECT_ERROR(f.root().write_keras_string_list("names", {std::string(70000, 'a')}), IOError,
                    "cannot save a string of 70000 bytes");
}

TEST_F(Hdf5FileTest, OnlyTheH5pyStyleFormatLimitsAttributesTo64KiB) {
  const std::vector<std::string> big(3000, std::string(30, 'x'));
  {
    Hdf5File f = Hdf5File::create(path_);  // HDF5 1.8 format: large attributes go dense
    f.root().write_string_list_attribute("names", big);
    EXPECT_EQ(f.root().read_string_list_attribute("names"), big);
  }
  Hdf5File f = Hdf5File::create(path_, {.checksummed_metadata = false});
  KILN_EXPECT_ERROR(f.root().write_string_list_attribute("names", big), IOError,
                    "@names] cannot create attribute");
}

TEST_F(Hdf5FileTest, MissingObjectsAreIOErrorsNamingFileAndPath) {
  {
    Hdf5File f = Hdf5File::create(path_);
    f.root().create_group("g").write_dataset("d", HostTensor::scalar<float>(1));
    f.root().write_string_attribute("text", "abc");
  }
  Hdf5File f = Hdf5File::open(path_);
  KILN_EXPECT_ERROR(f.root().open_group("nope"), IOError, path_ + ":/nope] no such group");
  KILN_EXPECT_ERROR(f.root().open_group("g/d"), IOError, ":/g/d] no such group");
  KILN_EXPECT_ERROR(f.root().read_dataset("g/x:0"), IOError, ":/g/x:0] no such dataset");
  KILN_EXPECT_ERROR(f.root().read_string_attribute("nope"), IOError, ":/@nope] no such attribute");
  KILN_EXPECT_ERROR(f.root().read_tensor_attribute("text"), IOError,
                    ":/@text] holds 3-byte string values, which Kiln cannot load");
  KILN_EXPECT_ERROR(f.root().open_group("g").write_dataset("e", HostTensor::scalar<float>(1)),
                    IOError, ":/g/e] cannot create dataset");
}

// A group whose object header cannot be read is there but unreadable: every existence test
// says so (an IOError naming the file and the group), never "absent", which once let a damaged
// /optimizer_weights load as a fresh optimizer.
TEST_F(Hdf5FileTest, AnObjectWhoseHeaderIsDamagedIsUnreadableNotAbsent) {
  {
    Hdf5File f = Hdf5File::create(path_);
    Hdf5Group g = f.root().create_group("g");
    g.write_string_attribute("marker_in_the_header_of_g", "x");
    g.write_dataset("d", HostTensor::scalar<float>(1));
    f.root().create_group("h");
  }
  std::string bytes = read_file(path_);
  const size_t marker = bytes.find("marker_in_the_header_of_g");
  ASSERT_NE(marker, std::string::npos);
  bytes[marker] ^= 0x01;  // the header's checksum no longer matches
  write_file_atomically(path_, bytes);
  Hdf5File f = Hdf5File::open(path_);
  EXPECT_TRUE(f.root().contains("g"));  // its link, in the root's header, is intact
  EXPECT_TRUE(f.root().has_group("h"));
  EXPECT_FALSE(f.root().has_group("absent"));
  EXPECT_FALSE(f.root().contains("h/absent"));
  KILN_EXPECT_ERROR(f.root().has_group("g"), IOError, path_ + ":/g] is listed but cannot be read");
  KILN_EXPECT_ERROR(f.root().has_dataset("g"), IOError, ":/g] is listed but cannot be read");
  KILN_EXPECT_ERROR(f.root().has_dataset("g/d"), IOError, ":/g] is listed but cannot be read");
  KILN_EXPECT_ERROR(f.root().contains("g/d"), IOError, ":/g] is listed but cannot be read");
  KILN_EXPECT_ERROR(f.root().open_group("g"), IOError, ":/g] is listed but cannot be read");
}

// Dataset values are the part of a file HDF5 does not checksum: Kiln's kiln_crc32c attribute
// makes a changed value an IOError. (Datasets without one, as h5py writes them, read as
// stored: the Keras fixtures of tests/keras/saving.)
TEST_F(Hdf5FileTest, ChangedDatasetValuesAreAnIOError) {
  const HostTensor values = HostTensor::from_vector<float>({4}, {1.25f, -2.5f, 3.75f, 1e9f});
  {
    Hdf5File f = Hdf5File::create(path_);
    f.root().write_dataset("w", values);
  }
  {
    Hdf5File f = Hdf5File::open(path_);
    EXPECT_EQ(f.root().read_dataset("w").to_vector<float>(), values.to_vector<float>());
  }
  std::string bytes = read_file(path_);
  const std::string raw(static_cast<const char*>(values.raw_data()), static_cast<size_t>(values.byte_size()));
  const size_t at = bytes.find(raw);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 5] ^= 0x10;
  write_file_atomically(path_, bytes);
  {
    Hdf5File f = Hdf5File::open(path_);
    EXPECT_EQ(f.root().dataset_shape("w"), values.shape());  // the header is intact
    KILN_EXPECT_ERROR(f.root().read_dataset("w"), IOError,
                      ":/w] holds values whose CRC-32C differs from the one recorded when it was saved");
  }
}

TEST_F(Hdf5FileTest, MissingForeignAndTruncatedFilesAreIOErrors) {
  KILN_EXPECT_ERROR(Hdf5File::open(dir_temp_.file("none.h5")), IOError, "none.h5] file not found");
  std::string text = dir_temp_.write("text.h5", {'h', 'e', 'l', 'l', 'o'});
  KILN_EXPECT_ERROR(Hdf5File::open(text), IOError, text + "] is not an HDF5 file");
  {
    Hdf5File f = Hdf5File::create(path_);
    f.root().create_group("g").write_dataset("d", HostTensor(Shape(DType::kF32, {1000})));
  }
  std::string bytes = read_file(path_);
  std::string cut = dir_temp_.file("cut.h5");
  write_file_atomically(cut, bytes.substr(0, bytes.size() / 2));
  try {
    Hdf5File f = Hdf5File::open(cut);
    f.root().open_group("g").read_dataset("d");
    ADD_FAILURE() << "a truncated file read without error";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::io
