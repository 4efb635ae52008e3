// Shape: dtype + dims (rank <= 8, inline storage) + optional axis tags +
// per-axis partitions (the mesh axis that splits each axis, see
// core/mesh.h). A small value type: copy it freely.
//
// Invalid shapes (rank > 8, a negative dim, a tag used twice, an element count
// or byte size past int64) throw std::invalid_argument naming the shape;
// while tracing, that surfaces as a TraceError.
//
// Axis tags name axes ("b", "d") so model code can say dot(x, w, "d") instead
// of counting axes. Tags are interned: comparing two tags compares pointers.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "radix/core/dtype.h"

namespace radix {

inline constexpr int kMaxRank = 8;

// An interned axis name. A default Tag means "untagged".
class Tag {
 public:
  Tag() = default;
  Tag(const char* name);              // NOLINT: implicit, tags read like strings
  Tag(std::string_view name);         // NOLINT
  Tag(const std::string& name) : Tag(std::string_view(name)) {}  // NOLINT
  bool empty() const { return name_ == nullptr; }
  std::string_view name() const { return name_ ? std::string_view(name_) : std::string_view(); }
  const char* c_str() const { return name_ ? name_ : ""; }
  bool operator==(const Tag& o) const { return name_ == o.name_; }

 private:
  const char* name_ = nullptr;
};

// An axis named either by index (negative counts from the end) or by tag.
class Axis {
 public:
  Axis(int index) : index_(index) {}           // NOLINT
  Axis(int64_t index) : index_(static_cast<int>(index)) {}  // NOLINT
  Axis(Tag tag) : tag_(tag) {}                 // NOLINT
  Axis(const char* tag) : tag_(tag) {}         // NOLINT
  Axis(std::string_view tag) : tag_(tag) {}    // NOLINT
  bool is_tag() const { return !tag_.empty(); }
  int index() const { return index_; }
  Tag tag() const { return tag_; }
  std::string to_string() const;

 private:
  void check_size() const;  // throws unless count and bytes fit in int64
  int index_ = 0;
  Tag tag_;
};

class Shape {
 public:
  Shape() = default;
  // A rank-0 (scalar) shape.
  explicit Shape(DType dtype) : dtype_(dtype) {}
  Shape(DType dtype, std::initializer_list<int64_t> dims);
  Shape(DType dtype, std::span<const int64_t> dims);
  // Tagged: Shape(DType::kF32, {2, 512}, {"b", "d"}). tags.size() must equal dims.size().
  Shape(DType dtype, std::initializer_list<int64_t> dims, std::initializer_list<Tag> tags);
  Shape(DType dtype, std::span<const int64_t> dims, std::span<const Tag> tags);

  DType dtype() const { return dtype_; }
  int rank() const { return rank_; }
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  std::span<const int64_t> dims() const { return {dims_.data(), static_cast<size_t>(rank_)}; }
  Tag tag(int i) const { return tags_[static_cast<size_t>(i)]; }
  std::span<const Tag> tags() const { return {tags_.data(), static_cast<size_t>(rank_)}; }
  bool has_tags() const;   // at least one axis is tagged
  // The mesh axis that splits axis i over devices (Mesh), or an empty Tag
  // when the axis is replicated.
  Tag partition(int i) const { return partitions_[static_cast<size_t>(i)]; }
  bool partitioned() const;  // at least one axis is split

  // Number of elements (1 for rank 0) and bytes. Never overflow: a Shape
  // whose element count or byte size would not fit in int64 cannot be made
  // (every constructor and modifier throws std::invalid_argument).
  int64_t count() const;
  size_t byte_size() const { return static_cast<size_t>(count()) * dtype_size(dtype_); }

  // Resolves an axis (index, negative index or tag) to [0, rank); nullopt if
  // out of range or no axis carries the tag.
  std::optional<int> find_axis(const Axis& a) const;
  // Like find_axis but for a dimension size.
  std::optional<int64_t> find_dim(const Axis& a) const;

  // Value-returning modifiers.
  Shape with_dtype(DType d) const;
  Shape with_tags(std::initializer_list<Tag> tags) const;
  Shape with_tags(std::span<const Tag> tags) const;
  Shape with_tag(int axis, Tag tag) const;
  Shape with_dim(int axis, int64_t size) const;
  // Axis `axis` split over mesh axis `mesh_axis` (an empty Tag: replicated).
  // Throws std::invalid_argument for an axis out of range.
  Shape with_partition(const Axis& axis, Tag mesh_axis) const;
  Shape replicated() const;  // every partition dropped
  Shape without_tags() const;
  // Removes / inserts an axis.
  Shape drop_axis(int axis) const;
  Shape insert_axis(int axis, int64_t size, Tag tag = Tag()) const;

  bool same_dims(const Shape& o) const;  // dims equal, ignoring dtype/tags
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  size_t hash() const;

  // "f32[b=2,d=512]", "f32[2,512]", "f32[]"; an axis split over mesh axis
  // "model" prints as "d=512@model".
  std::string to_string() const;

 private:
  void check_size() const;  // throws unless count and bytes fit in int64
  DType dtype_ = DType::kF32;
  uint8_t rank_ = 0;
  std::array<int64_t, kMaxRank> dims_{};
  std::array<Tag, kMaxRank> tags_{};
  std::array<Tag, kMaxRank> partitions_{};
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace radix

template <>
struct std::hash<radix::Shape> {
  size_t operator()(const radix::Shape& s) const { return s.hash(); }
};
