//===- StripMesh.cpp - drop the mesh declarations after bufferization ----===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-strip-mesh: once bufferization has turned the shard collectives into
// runtime calls (Collectives.cpp), the `shard.grid` declarations are dead;
// the runtime reads the mesh from the model descriptor. Any other shard op
// left is one host codegen does not support.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#define DEBUG_TYPE "dist-strip-mesh"

namespace mlir::dist {
#define GEN_PASS_DEF_STRIPMESHPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {
struct StripMeshPass : public dist::impl::StripMeshPassBase<StripMeshPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    WalkResult r = module.walk([&](Operation *op) {
      if (isa<shard::ShardDialect>(op->getDialect()) &&
          !isa<shard::GridOp>(op)) {
        op->emitOpError("is not supported by host codegen");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    for (auto grid : llvm::make_early_inc_range(module.getOps<shard::GridOp>()))
      grid.erase();
  }
};

} // namespace
