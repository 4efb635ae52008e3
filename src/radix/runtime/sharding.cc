#include "radix/runtime/sharding.h"

#include <cstring>

#include "radix/runtime/distributed.h"

namespace radix {

void copy_shard_block(const Shape& global, const Mesh& mesh, long long device, size_t elem, const std::byte* from,
                      std::byte* to, bool to_shard) {
  const Shape local = mesh.local_shape(global);
  const int r = global.rank();
  // The block's first index along each axis.
  std::vector<int64_t> start(static_cast<size_t>(r), 0);
  for (int i = 0; i < r; ++i)
    if (auto a = global.partition(i).empty() ? std::nullopt : mesh.find(global.partition(i)))
      start[static_cast<size_t>(i)] = mesh.coordinate(device, *a) * local.dim(i);
  // Row by row: the innermost axis is contiguous in both arrays.
  const int64_t inner = r ? local.dim(r - 1) : 1;
  const int64_t rows = inner ? local.count() / inner : 0;
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);
  for (int64_t row = 0; row < rows; ++row) {
    int64_t rem = row, g = 0;
    for (int i = r - 2; i >= 0; --i) {
      idx[static_cast<size_t>(i)] = rem % local.dim(i);
      rem /= local.dim(i);
    }
    for (int i = 0; i < r; ++i) {
      const int64_t at = (i == r - 1 ? 0 : idx[static_cast<size_t>(i)]) + start[static_cast<size_t>(i)];
      g = g * global.dim(i) + at;
    }
    const size_t bytes = static_cast<size_t>(inner) * elem;
    const size_t g_off = static_cast<size_t>(g) * elem, l_off = static_cast<size_t>(row * inner) * elem;
    if (to_shard) std::memcpy(to + l_off, from + g_off, bytes);
    else std::memcpy(to + g_off, from + l_off, bytes);
  }
}

Result<Buffer> upload_shard_bytes(const Platform& platform, const Mesh& mesh, const Shape& global,
                                  std::span<const std::byte> data) {
  if (auto err = mesh.check(global)) return invalid_argument("upload_shard: " + *err);
  if (data.size() != global.byte_size())
    return invalid_argument("upload_shard: " + std::to_string(data.size()) + " bytes for " + global.to_string() +
                            " (" + std::to_string(global.byte_size()) + " bytes)");
  RADIX_RETURN_IF_ERROR(distributed::require_size(mesh.num_devices(), ("upload_shard on " + mesh.to_string()).c_str()));
  const Shape local = mesh.local_shape(global);
  std::vector<std::byte> part(local.byte_size());
  copy_shard_block(global, mesh, distributed::rank(), dtype_size(global.dtype()), data.data(), part.data(), true);
  return platform.bytes(local, part);
}

Result<std::vector<std::byte>> gather_shard_bytes(const Buffer& local, const Mesh& mesh) {
  RADIX_RETURN_IF_ERROR(distributed::require_size(mesh.num_devices(), ("gather_shards on " + mesh.to_string()).c_str()));
  const Shape global = mesh.global_shape(local.shape());
  if (auto err = mesh.check(global)) return invalid_argument("gather_shards: " + *err);
  std::vector<std::byte> mine(local.shape().byte_size());
  RADIX_RETURN_IF_ERROR(local.copy_to_host(mine));
  const int n = distributed::size();
  std::vector<std::byte> all(mine.size() * static_cast<size_t>(n));
  RADIX_RETURN_IF_ERROR(distributed::all_gather(mine.data(), all.data(), mine.size()));
  std::vector<std::byte> out(global.byte_size());
  const size_t elem = dtype_size(global.dtype());
  for (int d = 0; d < n; ++d)
    copy_shard_block(global, mesh, d, elem, all.data() + mine.size() * static_cast<size_t>(d), out.data(), false);
  return out;
}

}  // namespace radix
