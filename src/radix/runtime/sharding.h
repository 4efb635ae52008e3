// Host helpers for sharded programs (one process per device, see
// runtime/distributed.h): split a host array into this process's shard, and
// gather the shards of a result back into the whole array.
//
//   Mesh mesh({{"data", 2}});
//   Shape x = Shape(DType::kF32, {8, 64}, {"b", "d"}).with_partition("b", "data");
//   Result<Buffer> xb = upload_shard(platform, mesh, x, std::span<const float>(host_x));  // rows 4r..4r+3
//   Result<std::vector<float>> y = gather_shards<float>(*yb, mesh);   // every rank: all rows
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

#include "radix/core/mesh.h"
#include "radix/core/shape.h"
#include "radix/core/status.h"
#include "radix/runtime/buffer.h"
#include "radix/runtime/platform.h"

namespace radix {

// Copies device `device`'s block of a row-major array of shape `global`
// between the whole array and a shard of Mesh::local_shape(global):
// whole -> shard when `to_shard`, else shard -> whole. `elem` bytes each.
void copy_shard_block(const Shape& global, const Mesh& mesh, long long device, size_t elem, const std::byte* from,
                      std::byte* to, bool to_shard);

// The whole shape a shard of shape `local` belongs to (each partitioned dim
// times its mesh axis' size).
Shape global_shape(const Shape& local, const Mesh& mesh);

// This process's shard (device = MPI rank) of `data`, a row-major array of
// shape `global`, uploaded as a Buffer of Mesh::local_shape(global). Errors:
// the mesh rejects the shape, data has the wrong size, or the job's size is
// not the mesh's device count.
Result<Buffer> upload_shard_bytes(const Platform& platform, const Mesh& mesh, const Shape& global,
                                  std::span<const std::byte> data);
template <class T>
Result<Buffer> upload_shard(const Platform& platform, const Mesh& mesh, const Shape& global, std::span<const T> data) {
  if (global.dtype() != dtype_v<T>)
    return invalid_argument("upload_shard: data of " + std::string(dtype_name(dtype_v<T>)) + " for " + global.to_string());
  return upload_shard_bytes(platform, mesh, global, std::as_bytes(data));
}

// Every process's shard `local` (this process's Buffer of a sharded output)
// gathered over MPI into the whole row-major array, on every rank. A
// collective: every rank of the job must call it.
Result<std::vector<std::byte>> gather_shard_bytes(const Buffer& local, const Mesh& mesh);
template <class T>
Result<std::vector<T>> gather_shards(const Buffer& local, const Mesh& mesh) {
  if (local.dtype() != dtype_v<T>)
    return invalid_argument("gather_shards: a " + local.shape().to_string() + " buffer read as " +
                            std::string(dtype_name(dtype_v<T>)));
  RADIX_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, gather_shard_bytes(local, mesh));
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace radix
