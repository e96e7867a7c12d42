// NPY: the header is parsed just enough for the three keys numpy writes, in any order.
#include "kiln/data/readers/npy_reader.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

[[noreturn]] void fail(const std::string& path, size_t offset, const std::string& what) {
  KILN_THROW(DataError, "[read_npy] ", path, ": at byte offset ", offset, ": ", what);
}

std::string hex(unsigned char c) {
  const char* digits = "0123456789abcdef";
  return {digits[c >> 4], digits[c & 15]};
}

struct DescrType {
  const char* code;
  DType dtype;
};
constexpr DescrType kDescrs[] = {{"f4", DType::kF32}, {"f8", DType::kF64}, {"i4", DType::kI32},
                                 {"i8", DType::kI64}, {"u1", DType::kU8},  {"b1", DType::kBool}};

// Parses the header dict; `base` is the file offset of its first character.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, std::string text, size_t base)
      : path_(path), text_(std::move(text)), base_(base) {}

  Shape parse() {
    std::string descr;
    bool fortran = false;
    bool have_descr = false, have_fortran = false, have_shape = false;
    Dims dims;
    skip_space();
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const size_t key_at = pos_;
      const std::string key = quoted();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        descr = quoted();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        dims = tuple();
        have_shape = true;
      } else {
        fail(path_, base_ + key_at, str_cat("unknown header key '", key, "'"));
      }
      skip_space();
      if (peek() == ',') ++pos_;
    }
    ++pos_;  // '}'
    // numpy pads the dict with spaces and ends it with '\n'; anything else is damage.
    for (size_t at = pos_; at < text_.size(); ++at)
      if (text_[at] != ' ' && text_[at] != '\n' && text_[at] != '\t' && text_[at] != '\r')
        fail(path_, base_ + at, str_cat("unexpected byte 0x", hex(static_cast<unsigned char>(text_[at])),
                                        " in the header's padding after the dict (numpy pads with spaces)"));
    if (!have_descr || !have_fortran || !have_shape)
      fail(path_, base_, "header lacks one of 'descr', 'fortran_order', 'shape'");
    if (fortran)
      fail(path_, base_, "fortran_order is True. Hint: save a C-order array (np.ascontiguousarray).");
    const DType dtype = dtype_of_descr(descr);
    int64_t bytes = static_cast<int64_t>(size_of(dtype));
    for (int64_t d : dims)
      if (__builtin_mul_overflow(bytes, d, &bytes))
        fail(path_, base_, str_cat("the shape ", dims_to_string(dims), " holds more bytes than int64 counts"));
    return Shape(dtype, std::move(dims));
  }

 private:
  DType dtype_of_descr(const std::string& descr) const {
    if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '|' || descr[0] == '=')) {
      for (const DescrType& d : kDescrs)
        if (descr.compare(1, 2, d.code) == 0) {
          if (descr[0] == '|' && size_of(d.dtype) != 1) break;  // '|' is for byte-sized types
          return d.dtype;
        }
    }
    if (!descr.empty() && descr[0] == '>')
      fail(path_, base_, str_cat("big-endian dtype '", descr, "'. Hint: save with arr.astype(arr.dtype.newbyteorder('<'))."));
    fail(path_, base_, str_cat("unsupported dtype '", descr, "' (Kiln reads <f4 <f8 <i4 <i8 |u1 |b1)"));
  }
  char peek() const {
    if (pos_ >= text_.size()) fail(path_, base_ + pos_, "header ends inside the dict");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(path_, base_ + pos_, str_cat("expected '", c, "' in header, found '", text_[pos_], "'"));
    ++pos_;
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') fail(path_, base_ + pos_, "expected a quoted string in header");
    const size_t end = text_.find(q, pos_ + 1);
    if (end == std::string::npos) fail(path_, base_ + pos_, "unterminated string in header");
    std::string s = text_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    for (const char* word : {"True", "False"}) {
      if (text_.compare(pos_, std::strlen(word), word) == 0) {
        pos_ += std::strlen(word);
        return word[0] == 'T';
      }
    }
    fail(path_, base_ + pos_, "expected True or False for fortran_order");
  }
  Dims tuple() {
    expect('(');
    Dims dims;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      const size_t at = pos_;
      int64_t v = 0;
      bool any = false;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text_[pos_] - '0', &v))
          fail(path_, base_ + at, "dimension overflows int64");
        ++pos_;
        any = true;
      }
      if (!any) fail(path_, base_ + at, "expected a dimension in the shape tuple");
      dims.push_back(v);
      skip_space();
      if (peek() == ',') ++pos_;
    }
    ++pos_;
    return dims;
  }

  const std::string& path_;
  std::string text_;
  size_t base_;
  size_t pos_ = 0;
};

const char* descr_of(DType t) {
  switch (t) {
    case DType::kF32: return "<f4";
    case DType::kF64: return "<f8";
    case DType::kI32: return "<i4";
    case DType::kI64: return "<i8";
    case DType::kU8: return "|u1";
    case DType::kBool: return "|b1";
    case DType::kBF16:
    case DType::kF16:
    case DType::kString: break;
  }
  return nullptr;
}

}  // namespace

HostTensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) KILN_THROW(DataError, "[read_npy] ", path, ": cannot open the file (missing or unreadable).");
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  if (bytes.size() < kMagicSize + 2 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    fail(path, 0, "not an NPY file: expected the magic \\x93NUMPY. Hint: was it written by numpy.save?");
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3) fail(path, 6, str_cat("unsupported NPY version ", major));
  const size_t len_size = major == 1 ? 2 : 4;
  const size_t header_at = 8 + len_size;
  if (bytes.size() < header_at) fail(path, 8, "truncated before the header length");
  size_t header_len = 0;
  for (size_t i = 0; i < len_size; ++i)
    header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  if (bytes.size() - header_at < header_len)
    fail(path, header_at, str_cat("truncated header: ", header_len, " bytes promised, ",
                                  bytes.size() - header_at, " present"));

  std::string header(bytes.data() + header_at, header_len);
  const Shape shape = HeaderParser(path, header, header_at).parse();
  const size_t data_at = header_at + header_len;
  const size_t want = static_cast<size_t>(shape.byte_size());
  if (bytes.size() - data_at != want)
    fail(path, data_at, str_cat("header says ", shape, " (", want, " data bytes), the file holds ",
                                bytes.size() - data_at));
  HostTensor t(shape);
  if (want > 0) std::memcpy(t.raw_data(), bytes.data() + data_at, want);
  if (shape.dtype() == DType::kBool) {  // numpy writes bools as 0 or 1: another byte is damage
    const auto* b = static_cast<const uint8_t*>(t.raw_data());
    for (size_t i = 0; i < want; ++i)
      if (b[i] > 1) fail(path, data_at + i, str_cat("bool element ", i, " is byte ", static_cast<int>(b[i]), ", not 0 or 1"));
  }
  return t;
}

void write_npy(const std::string& path, const HostTensor& t) {
  const char* descr = descr_of(t.dtype());
  if (descr == nullptr)
    KILN_THROW(DTypeError, "[write_npy] ", path, ": NPY here takes f32 f64 i32 i64 u8 bool, received ",
               t.shape(), ". Hint: convert with astype(DType::kF32).");
  // Python tuple syntax: "()", "(3,)", "(3, 4)".
  std::string dims = str_join(t.dims(), ", ");
  if (t.rank() == 1) dims += ",";
  std::string header = str_cat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (", dims, "), }");
  // Pad with spaces so the data starts on a 64-byte boundary, ending in '\n'.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write(kMagic, kMagicSize);
  const char version[2] = {1, 0};
  out.write(version, 2);
  const char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out << header;
  out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.byte_size()));
  if (!out) KILN_THROW(IOError, "[write_npy] ", path, ": cannot write the file.");
}

}  // namespace kiln::data
