// Protobuf wire format, just what tf.train.Example needs: varints, fixed32/64, and
// length-delimited fields; every read is bounds-checked and reports its absolute offset.
#include "kiln/data/readers/example_parser.h"

#include <cstring>

#include "kiln/core/check.h"
#include "kiln/data/readers/tfrecord_reader.h"

namespace kiln::data {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

class WireReader {
 public:
  WireReader(const uint8_t* data, size_t size, size_t base) : p_(data), n_(size), base_(base) {}

  bool done() const { return pos_ >= n_; }
  size_t offset() const { return base_ + pos_; }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= n_) fail("truncated varint");
      const uint8_t b = p_[pos_++];
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail("varint longer than 10 bytes");
  }
  /// Reads a tag: (field number, wire type).
  std::pair<uint32_t, uint32_t> tag() {
    const uint64_t t = varint();
    return {static_cast<uint32_t>(t >> 3), static_cast<uint32_t>(t & 7)};
  }
  /// A length-delimited payload as a nested reader.
  WireReader nested() {
    const uint64_t len = varint();
    if (len > n_ - pos_) fail(str_cat("field of ", len, " bytes overruns the message (", n_ - pos_, " left)"));
    WireReader r(p_ + pos_, static_cast<size_t>(len), offset());
    pos_ += static_cast<size_t>(len);
    return r;
  }
  std::string bytes() {
    WireReader r = nested();
    return std::string(reinterpret_cast<const char*>(r.p_), r.n_);
  }
  uint32_t fixed32() {
    if (n_ - pos_ < 4) fail("truncated fixed32");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{p_[pos_++]} << (8 * i);
    return v;
  }
  void skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint: varint(); return;
      case kFixed64:
        if (n_ - pos_ < 8) fail("truncated fixed64");
        pos_ += 8;
        return;
      case kLen: nested(); return;
      case kFixed32: fixed32(); return;
      default: fail(str_cat("unsupported wire type ", wire_type));
    }
  }
  [[noreturn]] void fail(const std::string& what) const {
    KILN_THROW(DataError, "[parse_example] malformed tf.train.Example at byte offset ", offset(),
               ": ", what, ". Hint: is the record a serialized tf.train.Example?");
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t base_;
  size_t pos_ = 0;
};

float float_of(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void parse_list(WireReader r, Feature& f) {
  while (!r.done()) {
    auto [field, type] = r.tag();
    if (field != 1) {
      r.skip(type);
      continue;
    }
    switch (f.kind) {
      case Feature::Kind::kBytes:
        if (type != kLen) r.fail("bytes_list value is not length-delimited");
        f.bytes_list.push_back(r.bytes());
        break;
      case Feature::Kind::kFloat:
        if (type == kFixed32) {
          f.float_list.push_back(float_of(r.fixed32()));
        } else if (type == kLen) {
          WireReader packed = r.nested();
          while (!packed.done()) f.float_list.push_back(float_of(packed.fixed32()));
        } else {
          r.fail("float_list value has wire type " + std::to_string(type));
        }
        break;
      case Feature::Kind::kInt64:
        if (type == kVarint) {
          f.int64_list.push_back(static_cast<int64_t>(r.varint()));
        } else if (type == kLen) {
          WireReader packed = r.nested();
          while (!packed.done()) f.int64_list.push_back(static_cast<int64_t>(packed.varint()));
        } else {
          r.fail("int64_list value has wire type " + std::to_string(type));
        }
        break;
    }
  }
}

Feature parse_feature(WireReader r) {
  Feature f;
  while (!r.done()) {
    auto [field, type] = r.tag();
    if (field < 1 || field > 3 || type != kLen) {
      r.skip(type);
      continue;
    }
    f = Feature{};
    f.kind = field == 1 ? Feature::Kind::kBytes : field == 2 ? Feature::Kind::kFloat : Feature::Kind::kInt64;
    parse_list(r.nested(), f);
  }
  return f;
}

void parse_features(WireReader r, Example& out) {
  while (!r.done()) {
    auto [field, type] = r.tag();
    if (field != 1 || type != kLen) {
      r.skip(type);
      continue;
    }
    WireReader entry = r.nested();
    std::string key;
    Feature value;
    while (!entry.done()) {
      auto [efield, etype] = entry.tag();
      if (efield == 1 && etype == kLen) key = entry.bytes();
      else if (efield == 2 && etype == kLen) value = parse_feature(entry.nested());
      else entry.skip(etype);
    }
    out[key] = std::move(value);
  }
}

// Encoding helpers.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void put_len(std::string& out, uint32_t field, const std::string& payload) {
  put_varint(out, (uint64_t{field} << 3) | kLen);
  put_varint(out, payload.size());
  out += payload;
}

// Rethrows the DataError in flight with the record's file and index after its "[where] ",
// when a TFRecord reader made the record.
[[noreturn]] void rethrow_naming_source(const HostTensor& record) {
  try {
    throw;
  } catch (const DataError& e) {
    const std::optional<RecordSource> source = record_source(record);
    if (!source) throw;
    std::string message = e.what();
    const size_t end = message.starts_with("[") ? message.find("] ") : std::string::npos;
    message.insert(end == std::string::npos ? 0 : end + 2, source->describe() + ": ");
    throw DataError(message);
  }
}

}  // namespace

Example parse_example(const uint8_t* data, size_t size) {
  Example out;
  WireReader r(data, size, 0);
  while (!r.done()) {
    auto [field, type] = r.tag();
    if (field == 1 && type == kLen)
      parse_features(r.nested(), out);
    else
      r.skip(type);
  }
  return out;
}

Example parse_example(const HostTensor& record) {
  auto bytes = record.data<uint8_t>();
  try {
    return parse_example(bytes.data(), bytes.size());
  } catch (const DataError&) {
    rethrow_naming_source(record);
  }
}

std::string serialize_example(const Example& example) {
  std::string features;
  for (const auto& [key, f] : example) {
    std::string list;
    uint32_t kind_field = 0;
    switch (f.kind) {
      case Feature::Kind::kBytes:
        kind_field = 1;
        for (const std::string& b : f.bytes_list) put_len(list, 1, b);
        break;
      case Feature::Kind::kFloat: {
        kind_field = 2;
        std::string packed(f.float_list.size() * 4, '\0');
        for (size_t i = 0; i < f.float_list.size(); ++i) std::memcpy(&packed[i * 4], &f.float_list[i], 4);
        if (!packed.empty()) put_len(list, 1, packed);
        break;
      }
      case Feature::Kind::kInt64: {
        kind_field = 3;
        std::string packed;
        for (int64_t v : f.int64_list) put_varint(packed, static_cast<uint64_t>(v));
        if (!packed.empty()) put_len(list, 1, packed);
        break;
      }
    }
    std::string feature;
    put_len(feature, kind_field, list);
    std::string entry;
    put_len(entry, 1, key);
    put_len(entry, 2, feature);
    put_len(features, 1, entry);
  }
  std::string out;
  put_len(out, 1, features);
  return out;
}

Element parse_single_example(const HostTensor& record, const std::vector<FixedLenFeature>& spec) {
  auto bytes = record.data<uint8_t>();
  try {
    return parse_single_example(parse_example(bytes.data(), bytes.size()), spec);
  } catch (const DataError&) {
    rethrow_naming_source(record);
  }
}

Element parse_single_example(const Example& example, const std::vector<FixedLenFeature>& spec) {
  Element out;
  for (const FixedLenFeature& s : spec) {
    auto it = example.find(s.key);
    if (it == example.end()) {
      if (!s.default_value)
        KILN_THROW(DataError, "[parse_single_example] feature '", s.key,
                   "' is missing. Hint: give it a default_value, or check the feature name.");
      out.push_back(*s.default_value);
      continue;
    }
    const Feature& f = it->second;
    const Shape shape(s.dtype, s.shape);
    auto check_count = [&](size_t n) {
      if (static_cast<int64_t>(n) != shape.num_elements())
        KILN_THROW(DataError, "[parse_single_example] feature '", s.key, "' has ", n,
                   " values, expected ", shape.num_elements(), " for ", shape, ".");
    };
    auto wrong_kind = [&](const char* want) {
      KILN_THROW(DataError, "[parse_single_example] feature '", s.key, "' is not a ", want,
                 " as dtype ", s.dtype, " needs.");
    };
    if (s.dtype == DType::kF32) {
      if (f.kind != Feature::Kind::kFloat) wrong_kind("float_list");
      check_count(f.float_list.size());
      out.push_back(HostTensor::from_vector<float>(s.shape, f.float_list));
    } else if (s.dtype == DType::kI64) {
      if (f.kind != Feature::Kind::kInt64) wrong_kind("int64_list");
      check_count(f.int64_list.size());
      out.push_back(HostTensor::from_vector<int64_t>(s.shape, f.int64_list));
    } else if (s.dtype == DType::kU8) {
      if (f.kind != Feature::Kind::kBytes) wrong_kind("bytes_list");
      if (f.bytes_list.size() != 1)
        KILN_THROW(DataError, "[parse_single_example] feature '", s.key, "' has ",
                   f.bytes_list.size(), " bytes values, expected 1.");
      out.push_back(string_tensor(f.bytes_list[0]));
    } else {
      KILN_THROW(DTypeError, "[parse_single_example] feature '", s.key, "': dtype ", s.dtype,
                 " is not one of f32, i64, u8.");
    }
  }
  return out;
}

}  // namespace kiln::data
