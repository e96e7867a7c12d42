// Little-endian encoding of iterator state: u64 fields, length-prefixed strings, tensors.
#include "kiln/data/iterator_state.h"

#include <cstring>

#include "kiln/core/check.h"

namespace kiln::data {

void StateWriter::write_u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void StateWriter::write_string(std::string_view s) {
  write_u64(s.size());
  bytes_.insert(bytes_.end(), s.begin(), s.end());
}

void StateWriter::write_error(const std::exception_ptr& error) {
  write_bool(error != nullptr);
  if (error == nullptr) return;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    write_string(e.what());
  } catch (...) {
    write_string("unknown exception");
  }
}

void StateWriter::write_tensor(const HostTensor& t) {
  write_bool(t.defined());
  if (!t.defined()) return;
  write_u64(static_cast<uint64_t>(t.dtype()));
  write_u64(static_cast<uint64_t>(t.rank()));
  for (int64_t d : t.dims()) write_i64(d);
  if (t.is_string()) {  // each element as its length and bytes
    for (const std::string& s : t.data<std::string>()) write_string(s);
    return;
  }
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  bytes_.insert(bytes_.end(), p, p + t.byte_size());
}

void StateWriter::write_element(const Element& e) {
  write_u64(e.size());
  for (const HostTensor& t : e) write_tensor(t);
}

const uint8_t* StateReader::take(size_t n, const char* what) {
  if (n > bytes_.size() - pos_)
    KILN_THROW(DataError, "[Iterator::restore] iterator state is truncated at offset ", pos_,
               " while reading ", what, " (", n, " bytes wanted, ", bytes_.size() - pos_,
               " left). Hint: pass the exact bytes Iterator::save() returned.");
  const uint8_t* p = bytes_.data() + pos_;
  pos_ += n;
  return p;
}

uint64_t StateReader::read_u64() {
  const uint8_t* p = take(8, "an integer");
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

std::string StateReader::read_string() {
  const uint64_t n = read_u64();
  const uint8_t* p = take(n, "a string");
  return std::string(reinterpret_cast<const char*>(p), n);
}

std::exception_ptr StateReader::read_error() {
  if (!read_bool()) return nullptr;
  return std::make_exception_ptr(DataError(read_string()));
}

HostTensor StateReader::read_tensor() {
  if (!read_bool()) return {};
  const uint64_t dtype = read_u64();
  if (dtype >= static_cast<uint64_t>(kNumDTypes))
    KILN_THROW(DataError, "[Iterator::restore] bad dtype code ", dtype, " at offset ", pos_ - 8,
               ". Hint: the state blob is corrupt.");
  const uint64_t rank = read_u64();
  if (rank > 64)
    KILN_THROW(DataError, "[Iterator::restore] bad tensor rank ", rank, " at offset ", pos_ - 8,
               ". Hint: the state blob is corrupt.");
  Dims dims(rank);
  for (auto& d : dims) d = read_i64();
  if (static_cast<DType>(dtype) == DType::kString) {
    Shape shape(DType::kString, std::move(dims));
    // Each string takes at least its 8-byte length: no allocation beyond what the blob holds.
    if (shape.num_elements() < 0 || static_cast<uint64_t>(shape.num_elements()) > (bytes_.size() - pos_) / 8)
      KILN_THROW(DataError, "[Iterator::restore] ", shape, " at offset ", pos_,
                 " needs more bytes than the state holds. Hint: the state blob is corrupt.");
    HostTensor t(std::move(shape));
    for (std::string& s : t.data<std::string>()) s = read_string();
    return t;
  }
  HostTensor t(Shape(static_cast<DType>(dtype), std::move(dims)));
  const uint8_t* p = take(static_cast<size_t>(t.byte_size()), "tensor bytes");
  if (t.byte_size() > 0) std::memcpy(t.raw_data(), p, static_cast<size_t>(t.byte_size()));
  return t;
}

Element StateReader::read_element() {
  const uint64_t n = read_u64();
  Element e;
  for (uint64_t i = 0; i < n; ++i) e.push_back(read_tensor());
  return e;
}

void StateReader::expect_tag(std::string_view stage) {
  const size_t at = pos_;
  std::string tag = read_string();
  if (tag != stage)
    KILN_THROW(DataError, "[Iterator::restore] state at offset ", at, " belongs to stage '", tag,
               "', but this pipeline has '", stage,
               "' there. Hint: restore into an iterator of the same Dataset recipe.");
}

}  // namespace kiln::data
