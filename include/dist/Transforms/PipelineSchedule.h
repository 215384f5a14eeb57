//===- PipelineSchedule.h - the --schedule option ---------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The pipeline schedules a training compile can ask for (`dist-opt
// --schedule`, dist-split-stages' `schedule` option) as a typed option. The
// schedules themselves (per-stage action lists, their simulation) are the
// runtime's header-only dist_rt/pipeline_schedule.h, which the compiler and
// the runtime share.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_TRANSFORMS_PIPELINESCHEDULE_H
#define DIST_TRANSFORMS_PIPELINESCHEDULE_H

#include "dist/Support/EnumOption.h"
#include "dist_rt/pipeline_schedule.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <optional>

namespace mlir::dist {

using PipelineSchedule = ::dist_rt::pipeline::ScheduleKind;

template <>
struct EnumOptionTraits<PipelineSchedule> {
  static llvm::ArrayRef<EnumOptionValue<PipelineSchedule>> values() {
    static const EnumOptionValue<PipelineSchedule> table[] = {
        {PipelineSchedule::OneFOneB, "1f1b",
         "one forward, one backward: at most p micro-batches held"},
        {PipelineSchedule::GPipe, "gpipe",
         "every forward, then every backward"},
        {PipelineSchedule::ZBH1, "zb-h1",
         "zero bubble: weight gradients fill the cool-down"}};
    return table;
  }
  static constexpr const char *noun = "schedule";
  static constexpr const char *passPrefix = "dist-split-stages option ";
  static constexpr bool nounNamesFlag = false;
};

/// What the module attribute `dist.pipeline` (dist-split-stages) says.
struct PipelineInfo {
  int64_t stages = 1, microBatches = 1;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
};

/// Reads `dist.pipeline`; nullopt when a key is missing or malformed.
inline std::optional<PipelineInfo> readPipelineAttr(DictionaryAttr attr) {
  auto stages = attr ? attr.getAs<IntegerAttr>("stages") : IntegerAttr();
  auto micro = attr ? attr.getAs<IntegerAttr>("micro_batches") : IntegerAttr();
  auto name = attr ? attr.getAs<StringAttr>("schedule") : StringAttr();
  if (!stages || !micro || !name)
    return std::nullopt;
  std::optional<PipelineSchedule> kind =
      symbolizeEnumOption<PipelineSchedule>(name.getValue());
  if (!kind || stages.getInt() < 1 || micro.getInt() < 1)
    return std::nullopt;
  return PipelineInfo{stages.getInt(), micro.getInt(), *kind};
}

} // namespace mlir::dist

DIST_ENUM_OPTION_PARSER(mlir::dist::PipelineSchedule)

#endif // DIST_TRANSFORMS_PIPELINESCHEDULE_H
