// Mesh: the devices a program is partitioned over, as a grid with named axes
// (JAX's Mesh, ZML's Partitioning). Mesh({{"data", 2}, {"model", 2}}) is four
// devices; device d sits at the row-major multi-index of d in the grid (with
// MPI, device d is rank d). A tensor is split over the mesh by naming, per
// tensor axis, the mesh axis that splits it (Shape::with_partition); axes
// not named are replicated along every mesh axis.
//
// The default Mesh is one device: nothing is partitioned. A small value type.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "radix/core/shape.h"

namespace radix {

class Mesh {
 public:
  static constexpr int kMaxAxes = 4;

  Mesh() = default;
  // Named axes and their sizes, outermost first. Throws std::invalid_argument
  // on an empty or repeated name, a size < 1, or more than kMaxAxes axes.
  Mesh(std::initializer_list<std::pair<Tag, int64_t>> axes);
  explicit Mesh(const std::vector<std::pair<Tag, int64_t>>& axes);

  int rank() const { return static_cast<int>(axes_.size()); }
  Tag axis(int i) const { return axes_[static_cast<size_t>(i)].first; }
  int64_t size(int i) const { return axes_[static_cast<size_t>(i)].second; }
  // Index of the mesh axis named `name`, or nullopt.
  std::optional<int> find(Tag name) const;
  // Product of the axis sizes (1 for the default mesh).
  int64_t num_devices() const;
  bool single_device() const { return num_devices() == 1; }

  // Device d's coordinate along mesh axis i (row-major, axis 0 outermost).
  int64_t coordinate(int64_t device, int axis) const;

  // Checks that `global`'s partitions name axes of this mesh, no mesh axis
  // splits two tensor axes, and every split dim divides evenly. The error
  // names the shape, the axis and the mesh.
  std::optional<std::string> check(const Shape& global) const;
  // One device's part of a tensor of shape `global`: each split dim divided
  // by its mesh axis size; partitions kept. `global` must pass check().
  Shape local_shape(const Shape& global) const;
  // The whole shape a shard of shape `local` belongs to: each partitioned
  // dim times its mesh axis' size (the inverse of local_shape).
  Shape global_shape(const Shape& local) const;

  // "mesh[data=2,model=2]"; "mesh[]" for one device.
  std::string to_string() const;
  bool operator==(const Mesh& o) const { return axes_ == o.axes_; }
  bool operator!=(const Mesh& o) const { return !(*this == o); }

 private:
  std::vector<std::pair<Tag, int64_t>> axes_;
};

}  // namespace radix
