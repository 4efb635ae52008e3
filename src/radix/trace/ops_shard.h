// Sharding annotations while tracing (a program compiled for a Mesh of
// several devices, TraceOptions::mesh).
//
// Arguments are split as their Shapes say (Shape::with_partition); results
// are replicated unless shard() says otherwise; in between, MLIR's
// sharding-propagation and shard-partition choose how every op runs on the
// device's part and insert the collectives (an all-reduce after a product
// whose contracting axis is split). shard() pins a value's sharding where
// the choice matters (JAX's with_sharding_constraint).
//
// With TraceOptions::Partitioning::kManual the program is traced as one
// device's part instead, and communicates through all_reduce.
#pragma once

#include <initializer_list>
#include <utility>

#include "radix/core/shape.h"
#include "radix/trace/tensor.h"

namespace radix {

// x with the listed axes split over the named mesh axes and every other axis
// replicated: shard(h, {{"b", "data"}}), shard(y, {}) for fully replicated.
// Same dims and values; on a one-device mesh only the Shape changes. A mesh
// axis the mesh lacks, one mesh axis for two tensor axes, or a dim that does
// not divide evenly fails at once (TraceError naming shape and mesh).
Tensor shard(const Tensor& x, std::initializer_list<std::pair<Axis, Tag>> spec);

// The reduction of all_reduce.
enum class CollectiveReduction { kSum, kMax, kMin, kProduct };

// Inside one device's program (TraceOptions::Partitioning::kManual): x
// reduced element-wise over the devices along mesh axis `mesh_axis`, the
// result on each of them (MPI_Allreduce). Same shape; f32, f64, i32 or i64.
// A row-parallel product's partial sums become the whole product:
//   y = all_reduce(dot(h_local, w_rows_local, "h"), "model").
// TraceError outside manual partitioning, or for a mesh axis the mesh lacks.
Tensor all_reduce(const Tensor& x, Tag mesh_axis, CollectiveReduction op = CollectiveReduction::kSum);

}  // namespace radix
