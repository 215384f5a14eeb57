//===- ClusterAttr.h - the cluster object as IR and as C++ -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Converts between the planner's C++ model of a cluster (ClusterSpec,
// dist/Planner/Cluster.h) and the typed `#dist.cluster` attribute a module
// carries. Here rather than in the dialect, so that the dialect does not
// depend on the planner.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_TRANSFORMS_CLUSTERATTR_H
#define DIST_TRANSFORMS_CLUSTERATTR_H

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Planner/Cluster.h"

#include <optional>
#include <string>

namespace mlir::dist {

/// The attribute of `cluster` (which loadClusterFile or detectLocalCluster
/// checked).
ClusterAttr clusterToAttr(MLIRContext *ctx, const ClusterSpec &cluster);

/// The C++ model of `attr`; std::nullopt with a one-line `error` when its
/// calibrated shape grids are not complete grids.
std::optional<ClusterSpec> clusterFromAttr(ClusterAttr attr,
                                           std::string &error);

} // namespace mlir::dist

#endif // DIST_TRANSFORMS_CLUSTERATTR_H
