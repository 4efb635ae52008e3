#include "radix/core/mesh.h"

#include <stdexcept>

namespace radix {

Mesh::Mesh(std::initializer_list<std::pair<Tag, int64_t>> axes)
    : Mesh(std::vector<std::pair<Tag, int64_t>>(axes)) {}

Mesh::Mesh(const std::vector<std::pair<Tag, int64_t>>& axes) : axes_(axes) {
  if (axes_.size() > static_cast<size_t>(kMaxAxes))
    throw std::invalid_argument("radix::Mesh: " + std::to_string(axes_.size()) + " axes, at most " +
                                std::to_string(kMaxAxes));
  int64_t total = 1;
  for (size_t i = 0; i < axes_.size(); ++i) {
    const auto& [name, size] = axes_[i];
    if (name.empty()) throw std::invalid_argument("radix::Mesh: axis " + std::to_string(i) + " has no name");
    if (size < 1)
      throw std::invalid_argument("radix::Mesh: axis '" + std::string(name.name()) + "' has size " +
                                  std::to_string(size) + "; sizes must be >= 1");
    for (size_t j = 0; j < i; ++j)
      if (axes_[j].first == name)
        throw std::invalid_argument("radix::Mesh: axis name '" + std::string(name.name()) + "' used twice");
    if (__builtin_mul_overflow(total, size, &total) || total > (int64_t{1} << 20))
      throw std::invalid_argument("radix::Mesh: too many devices");
  }
}

std::optional<int> Mesh::find(Tag name) const {
  for (size_t i = 0; i < axes_.size(); ++i)
    if (axes_[i].first == name) return static_cast<int>(i);
  return std::nullopt;
}

int64_t Mesh::num_devices() const {
  int64_t n = 1;
  for (const auto& a : axes_) n *= a.second;
  return n;
}

int64_t Mesh::coordinate(int64_t device, int axis) const {
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < axes_.size(); ++i) inner *= axes_[i].second;
  return (device / inner) % size(axis);
}

std::optional<std::string> Mesh::check(const Shape& global) const {
  for (int i = 0; i < global.rank(); ++i) {
    const Tag m = global.partition(i);
    if (m.empty()) continue;
    const std::string where = "axis " + std::to_string(i) + " of " + global.to_string();
    auto a = find(m);
    if (!a) return where + " is split over mesh axis '" + std::string(m.name()) + "', which " + to_string() +
                   " does not have";
    for (int j = 0; j < i; ++j)
      if (global.partition(j) == m)
        return "mesh axis '" + std::string(m.name()) + "' splits both axis " + std::to_string(j) + " and axis " +
               std::to_string(i) + " of " + global.to_string() + "; a mesh axis splits one tensor axis";
    if (global.dim(i) % size(*a) != 0)
      return where + " (size " + std::to_string(global.dim(i)) + ") does not split evenly over mesh axis '" +
             std::string(m.name()) + "' of size " + std::to_string(size(*a));
  }
  return std::nullopt;
}

Shape Mesh::local_shape(const Shape& global) const {
  Shape s = global;
  for (int i = 0; i < global.rank(); ++i)
    if (auto a = global.partition(i).empty() ? std::nullopt : find(global.partition(i)))
      s = s.with_dim(i, global.dim(i) / size(*a));
  return s;
}

Shape Mesh::global_shape(const Shape& local) const {
  Shape s = local;
  for (int i = 0; i < local.rank(); ++i)
    if (auto a = local.partition(i).empty() ? std::nullopt : find(local.partition(i)))
      s = s.with_dim(i, local.dim(i) * size(*a));
  return s;
}

std::string Mesh::to_string() const {
  std::string s = "mesh[";
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (i) s += ',';
    s += std::string(axes_[i].first.name()) + "=" + std::to_string(axes_[i].second);
  }
  return s + "]";
}

}  // namespace radix
