// tf.train.Example: the protobuf message TFRecord files usually hold. Decoded by a small
// protobuf wire-format reader (no protobuf dependency); the schema is
//   Example { Features features = 1; }   Features { map<string, Feature> feature = 1; }
//   Feature { oneof { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/data/element.h"

namespace kiln::data {

/// One feature: a list of bytes strings, floats or int64s.
struct Feature {
  enum class Kind { kBytes, kFloat, kInt64 };
  Kind kind = Kind::kFloat;
  std::vector<std::string> bytes_list;
  std::vector<float> float_list;
  std::vector<int64_t> int64_list;
};

/// A decoded tf.train.Example: feature name -> feature.
using Example = std::map<std::string, Feature>;

/// Decodes a serialized tf.train.Example (packed and unpacked repeated fields both accepted;
/// unknown fields skipped). Throws DataError naming the byte offset for malformed bytes.
Example parse_example(const uint8_t* data, size_t size);
/// The same for a u8[n] record tensor (what tfrecord_dataset yields); errors also name the
/// record's file and index when a TFRecord reader made it.
Example parse_example(const HostTensor& record);

/// Encodes an Example as TensorFlow would (packed floats and int64s).
std::string serialize_example(const Example& example);

/// One fixed-size feature to extract (tf.io.FixedLenFeature).
struct FixedLenFeature {
  std::string key;
  DType dtype = DType::kF32;  // f32 (float_list), i64 (int64_list) or u8 (one bytes value)
  Dims shape;                 // the value count must equal its element count (u8: any length)
  std::optional<HostTensor> default_value;  // used when the feature is missing
};

/// tf.io.parse_single_example: one tensor per spec entry, in spec order, as an Element.
/// Throws DataError naming the feature (and the record's file and index, as parse_example)
/// for a missing feature without default, a kind that does not match the dtype, or a wrong
/// value count.
Element parse_single_example(const HostTensor& record, const std::vector<FixedLenFeature>& spec);
/// The same for an already decoded Example.
Element parse_single_example(const Example& example, const std::vector<FixedLenFeature>& spec);

}  // namespace kiln::data
