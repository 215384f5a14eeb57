//===- Mesh.cpp - the device mesh of a module -----------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The mesh as text (`--mesh dp=2,tp=2`, parsed once by parseMesh), as the
// typed `#dist.mesh` attribute the compile phases read, and as the
// `shard.grid @mesh` a partitioned module declares.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/Mesh.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using namespace mlir::dist;

int64_t MeshSpec::sizeOf(StringRef name) const {
  for (auto [a, s] : llvm::zip(axes, shape))
    if (a == name)
      return s;
  return 1;
}

bool dist::isKnownMeshAxis(StringRef name) {
  return name == "dp" || name == "tp" || name == "pp";
}

std::string dist::checkMeshAxis(ArrayRef<std::string> before, StringRef name,
                                int64_t size, int64_t &total) {
  if (!isKnownMeshAxis(name))
    return ("unknown mesh axis '" + name +
            "' (expected dp: data parallel, tp: tensor parallel, pp: pipeline "
            "stages)")
        .str();
  if (llvm::is_contained(before, name.str()))
    return ("axis '" + name + "' appears twice").str();
  if (size < 1 || size > kMaxMeshRanks)
    return ("the size of axis '" + name +
            "' must be an integer from 1 to 1048576, got '" +
            std::to_string(size) + "'")
        .str();
  total *= size;
  if (total > kMaxMeshRanks)
    return "the mesh has more than 1048576 ranks";
  return "";
}

std::string dist::parseMesh(StringRef text, MeshSpec &out) {
  out = MeshSpec();
  if (text.trim().empty())
    return "the mesh is empty (expected axis=size pairs, e.g. dp=2,tp=2)";
  SmallVector<StringRef> parts;
  text.split(parts, ',');
  int64_t total = 1;
  for (StringRef part : parts) {
    part = part.trim();
    if (!part.contains('='))
      return ("'" + part + "' is not axis=size (e.g. dp=2)").str();
    auto [name, size] = part.split('=');
    name = name.trim();
    size = size.trim();
    if (name.empty())
      return ("'" + part + "' has no axis name").str();
    int64_t names = 1;
    std::string why = checkMeshAxis(out.axes, name, 1, names);
    if (!why.empty())
      return why;
    int64_t n = 0;
    if (size.getAsInteger(10, n) || n < 1 || n > kMaxMeshRanks)
      return ("the size of axis '" + name +
              "' must be an integer from 1 to 1048576, got '" + size + "'")
          .str();
    total *= n;
    if (total > kMaxMeshRanks)
      return "the mesh has more than 1048576 ranks";
    out.axes.push_back(name.str());
    out.shape.push_back(n);
  }
  return "";
}

std::string MeshSpec::str() const {
  std::string s;
  for (auto [a, n] : llvm::zip(axes, shape))
    s += (s.empty() ? "" : ",") + a + "=" + std::to_string(n);
  return s;
}

MeshAttr dist::getRequestedMesh(ModuleOp module) {
  return module->getAttrOfType<MeshAttr>(DistDialect::getMeshAttrName());
}

std::optional<MeshSpec> dist::getModuleMesh(ModuleOp module) {
  auto grid = module.lookupSymbol<shard::GridOp>(kMeshSymbol);
  if (!grid)
    return std::nullopt;
  MeshSpec spec;
  auto names = grid->getAttrOfType<ArrayAttr>(kMeshAxesAttr);
  for (auto [i, n] : llvm::enumerate(grid.getShape())) {
    StringAttr name = names && i < names.size() ? dyn_cast<StringAttr>(names[i])
                                                : StringAttr();
    spec.axes.push_back(name ? name.str() : "axis" + std::to_string(i));
    spec.shape.push_back(n);
  }
  return spec;
}
