// Sharding annotations while tracing (a program compiled for a Mesh of
// several devices, TraceOptions::mesh).
//
// Arguments are split as their Shapes say (Shape::with_partition); results
// are replicated unless shard() says otherwise; in between, MLIR's
// sharding-propagation and shard-partition choose how every op runs on the
// device's part and insert the collectives (an all-reduce after a product
// whose contracting axis is split). shard() pins a value's sharding where
// the choice matters (JAX's with_sharding_constraint).
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

}  // namespace radix
