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

} // namespace mlir::dist

DIST_ENUM_OPTION_PARSER(mlir::dist::PipelineSchedule)

#endif // DIST_TRANSFORMS_PIPELINESCHEDULE_H
