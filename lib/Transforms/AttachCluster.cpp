//===- AttachCluster.cpp - the cluster a module is planned for ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-attach-cluster: reads a cluster file (or detects this machine) and
// puts it on the module as `#dist.cluster`, the unified cluster object that
// dist-plan and the cost model work on.
//
//===----------------------------------------------------------------------===//

#include "dist/Transforms/Passes.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Transforms/ClusterAttr.h"

#define DEBUG_TYPE "dist-attach-cluster"

namespace mlir::dist {
#define GEN_PASS_DEF_ATTACHCLUSTERPASS
#include "dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {
struct AttachClusterPass
    : public dist::impl::AttachClusterPassBase<AttachClusterPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    StringAttr name =
        StringAttr::get(&getContext(), DistDialect::getClusterAttrName());
    if (cluster.empty() && module->hasAttr(name))
      return;
    std::optional<ClusterSpec> spec;
    if (cluster.empty() || cluster == "local") {
      spec = detectLocalCluster();
    } else {
      std::string error;
      spec = loadClusterFile(cluster, error);
      if (!spec) {
        // The message names the place (file:line:col) already.
        emitError(UnknownLoc::get(&getContext())) << error;
        return signalPassFailure();
      }
    }
    module->setAttr(name, clusterToAttr(&getContext(), *spec));
  }
};
} // namespace
