//===- dist-cluster-fuzzer.cpp - libFuzzer target for cluster files -------===//
// SPDX-License-Identifier: Apache-2.0
//
// Feeds arbitrary bytes to the cluster file parser (YAML, or JSON as YAML
// reads it) behind `dist-opt --cluster=FILE`. A rejected file must get a
// one-line error; an accepted one, written back as YAML and as JSON, must
// parse again to the same file.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "dist/Planner/Cluster.h"

using namespace dist_fuzz;
using namespace mlir::dist;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<ClusterSpec> spec = parseCluster(text, "fuzz.yaml", error);
  if (!spec) {
    checkOneLine(error);
    return 0;
  }
  // Written either way and read back, the cluster is the same (compared in
  // its YAML form).
  std::string yaml = clusterToYaml(*spec);
  for (const std::string &written : {yaml, clusterToJson(*spec)}) {
    std::optional<ClusterSpec> back = parseCluster(written, "written", error);
    if (!back)
      finding("the written cluster does not parse", error + "\n" + written);
    if (clusterToYaml(*back) != yaml)
      finding("the cluster changed when written and read back", written);
  }
  return 0;
}
