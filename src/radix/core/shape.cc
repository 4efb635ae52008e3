#include "radix/core/shape.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <unordered_set>

namespace radix {

namespace {
// Interned tag storage lives for the process: tags are few and small.
const char* intern(std::string_view s) {
  static std::mutex mu;
  static std::unordered_set<std::string>* table = new std::unordered_set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = table->emplace(s).first;
  return it->c_str();
}

void check_rank(size_t rank) {
  if (rank > static_cast<size_t>(kMaxRank))
    throw std::invalid_argument("radix::Shape: rank " + std::to_string(rank) + " exceeds the maximum of " +
                                std::to_string(kMaxRank));
}

std::string tag_list(std::span<const Tag> tags) {
  std::string s = "{";
  for (size_t i = 0; i < tags.size(); ++i) s += (i ? ", " : "") + (tags[i].empty() ? std::string("_") : "'" + std::string(tags[i].name()) + "'");
  return s + "}";
}

// Multiplies into `acc`; false on int64 overflow.
bool mul_ok(int64_t& acc, int64_t v) { return !__builtin_mul_overflow(acc, v, &acc); }

uint64_t mix(uint64_t h, uint64_t v) {
  // FNV-1a style mixing over 64-bit words; stable across runs.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}
}  // namespace

Tag::Tag(const char* name) : name_(name && *name ? intern(name) : nullptr) {}
Tag::Tag(std::string_view name) : name_(name.empty() ? nullptr : intern(name)) {}

std::string Axis::to_string() const {
  if (is_tag()) {
    // Appended, not "'" + std::string(...): GCC 12 warns (-Wrestrict, a false
    // positive) on a C string prepended to a temporary string.
    std::string s = "'";
    s += tag_.name();
    s += "'";
    return s;
  }
  return std::to_string(index_);
}

Shape::Shape(DType dtype, std::initializer_list<int64_t> dims)
    : Shape(dtype, std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(DType dtype, std::span<const int64_t> dims) : dtype_(dtype) {
  check_rank(dims.size());
  rank_ = static_cast<uint8_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0)
      throw std::invalid_argument("radix::Shape: negative dimension " + std::to_string(dims[i]) + " at axis " +
                                  std::to_string(i));
    dims_[i] = dims[i];
  }
  check_size();
}

Shape::Shape(DType dtype, std::initializer_list<int64_t> dims, std::initializer_list<Tag> tags)
    : Shape(dtype, std::span<const int64_t>(dims.begin(), dims.size()),
            std::span<const Tag>(tags.begin(), tags.size())) {}

Shape::Shape(DType dtype, std::span<const int64_t> dims, std::span<const Tag> tags) : Shape(dtype, dims) {
  *this = with_tags(tags);
}

bool Shape::has_tags() const {
  for (int i = 0; i < rank_; ++i)
    if (!tags_[i].empty()) return true;
  return false;
}

int64_t Shape::count() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];  // cannot overflow: see check_size
  return n;
}

// The invariant every Shape keeps: the product of its non-zero dims, times the
// element size, fits in int64. Then count(), byte_size() and the product of
// any subset of dims (a reshape, a contraction's M / N / K, a dropped zero
// axis) are exact everywhere, and a buffer's size is never wrapped to a small
// or zero number.
void Shape::check_size() const {
  int64_t n = 1;
  bool ok = true;
  for (int i = 0; i < rank_ && ok; ++i)
    if (dims_[i] != 0) ok = mul_ok(n, dims_[i]);
  if (ok) ok = mul_ok(n, static_cast<int64_t>(dtype_size(dtype_)));
  if (!ok) {
    std::string dims;
    for (int i = 0; i < rank_; ++i) {
      if (i) dims += ",";
      dims += std::to_string(dims_[i]);
    }
    throw std::invalid_argument("radix::Shape: " + std::string(dtype_name(dtype_)) + "[" + dims +
                                "] is too large: its element count or byte size overflows 64 bits");
  }
}

std::optional<int> Shape::find_axis(const Axis& a) const {
  if (a.is_tag()) {
    for (int i = 0; i < rank_; ++i)
      if (tags_[i] == a.tag()) return i;
    return std::nullopt;
  }
  int i = a.index() < 0 ? a.index() + rank_ : a.index();
  if (i < 0 || i >= rank_) return std::nullopt;
  return i;
}

std::optional<int64_t> Shape::find_dim(const Axis& a) const {
  auto i = find_axis(a);
  if (!i) return std::nullopt;
  return dims_[*i];
}

Shape Shape::with_dtype(DType d) const {
  Shape s = *this;
  s.dtype_ = d;
  s.check_size();  // a wider dtype grows the byte size
  return s;
}

Shape Shape::with_tags(std::initializer_list<Tag> tags) const {
  return with_tags(std::span<const Tag>(tags.begin(), tags.size()));
}

Shape Shape::with_tags(std::span<const Tag> tags) const {
  if (tags.size() != static_cast<size_t>(rank_))
    throw std::invalid_argument("radix::Shape: " + std::to_string(tags.size()) + " tags " + tag_list(tags) + " given for " +
                                to_string() + " of rank " + std::to_string(rank_));
  Shape s = *this;
  for (size_t i = 0; i < tags.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (!tags[i].empty() && tags[i] == tags[j])
        throw std::invalid_argument("radix::Shape: tag '" + std::string(tags[i].name()) + "' used twice in tags " +
                                    tag_list(tags) + " for " + to_string());
    s.tags_[i] = tags[i];
  }
  return s;
}

Shape Shape::with_tag(int axis, Tag tag) const {
  Shape s = *this;
  s.tags_[static_cast<size_t>(axis)] = Tag();
  std::array<Tag, kMaxRank> t = s.tags_;
  t[static_cast<size_t>(axis)] = tag;
  return s.with_tags(std::span<const Tag>(t.data(), rank_));
}

Shape Shape::with_dim(int axis, int64_t size) const {
  if (size < 0)
    throw std::invalid_argument("radix::Shape: negative dimension " + std::to_string(size) + " at axis " +
                                std::to_string(axis) + " of " + to_string());
  Shape s = *this;
  s.dims_[static_cast<size_t>(axis)] = size;
  s.check_size();
  return s;
}

bool Shape::partitioned() const {
  for (int i = 0; i < rank_; ++i)
    if (!partitions_[i].empty()) return true;
  return false;
}

Shape Shape::with_partition(const Axis& axis, Tag mesh_axis) const {
  auto i = find_axis(axis);
  if (!i) throw std::invalid_argument("radix::Shape: with_partition: no axis " + axis.to_string() + " in " + to_string());
  Shape s = *this;
  s.partitions_[static_cast<size_t>(*i)] = mesh_axis;
  return s;
}

Shape Shape::replicated() const {
  Shape s = *this;
  s.partitions_.fill(Tag());
  return s;
}

Shape Shape::without_tags() const {
  Shape s = *this;
  s.tags_.fill(Tag());
  return s;
}

Shape Shape::drop_axis(int axis) const {
  Shape s(dtype_);
  s.rank_ = static_cast<uint8_t>(rank_ - 1);
  for (int i = 0, j = 0; i < rank_; ++i) {
    if (i == axis) continue;
    s.dims_[j] = dims_[i];
    s.tags_[j] = tags_[i];
    s.partitions_[j] = partitions_[i];
    ++j;
  }
  return s;  // a subset of this shape's dims: within the size invariant
}

Shape Shape::insert_axis(int axis, int64_t size, Tag tag) const {
  check_rank(static_cast<size_t>(rank_) + 1);
  Shape s(dtype_);
  s.rank_ = static_cast<uint8_t>(rank_ + 1);
  for (int i = 0, j = 0; i < s.rank_; ++i) {
    if (i == axis) {
      s.dims_[i] = size;
      s.tags_[i] = tag;
      continue;
    }
    s.dims_[i] = dims_[j];
    s.tags_[i] = tags_[j];
    s.partitions_[i] = partitions_[j];
    ++j;
  }
  if (!tag.empty())
    for (int i = 0; i < s.rank_; ++i)
      if (i != axis && s.tags_[i] == tag)
        throw std::invalid_argument("radix::Shape: tag '" + std::string(tag.name()) + "' used twice in " +
                                    s.to_string());
  if (size < 0) throw std::invalid_argument("radix::Shape: negative dimension " + std::to_string(size));
  s.check_size();
  return s;
}

bool Shape::same_dims(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != o.dims_[i]) return false;
  return true;
}

bool Shape::operator==(const Shape& o) const {
  if (dtype_ != o.dtype_ || !same_dims(o)) return false;
  for (int i = 0; i < rank_; ++i)
    if (!(tags_[i] == o.tags_[i]) || !(partitions_[i] == o.partitions_[i])) return false;
  return true;
}

size_t Shape::hash() const {
  uint64_t h = 1469598103934665603ULL;
  h = mix(h, static_cast<uint64_t>(dtype_));
  h = mix(h, rank_);
  for (int i = 0; i < rank_; ++i) {
    h = mix(h, static_cast<uint64_t>(dims_[i]));
    for (char c : tags_[i].name()) h = mix(h, static_cast<uint64_t>(c));
    h = mix(h, 0x40);  // '@': the partition's name follows
    for (char c : partitions_[i].name()) h = mix(h, static_cast<uint64_t>(c));
  }
  return static_cast<size_t>(h);
}

std::string Shape::to_string() const {
  std::string s(dtype_name(dtype_));
  s += '[';
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ',';
    if (!tags_[i].empty()) {
      s += tags_[i].name();
      s += '=';
    }
    s += std::to_string(dims_[i]);
    if (!partitions_[i].empty()) {
      s += '@';
      s += partitions_[i].name();
    }
  }
  s += ']';
  return s;
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.to_string(); }

}  // namespace radix
