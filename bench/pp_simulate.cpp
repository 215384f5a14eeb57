//===- pp_simulate.cpp - Simulate a pipeline schedule with given times ----===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-pp-simulate SCHEDULE MICRO_BATCHES F0,I0,W0[,SEND0] F1,I1,W1 ...:
// runs dist_rt/pipeline_schedule.h's simulation of SCHEDULE (gpipe, 1f1b,
// zb-h1) over one stage per time triple (seconds of one micro-batch's
// forward, backward-input and backward-weight; the whole backward is
// I + W) and prints one JSON object: the step time, each stage's bubble
// and the micro-batches it holds, and the analytic (p - 1) / m. The same
// code the compiler prints and the runtime executes, so bench/pp_schedule.py
// sets its prediction from measured times beside the measured figures.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/pipeline_schedule.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace dist_rt::pipeline;

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s gpipe|1f1b|zb-h1 MICRO_BATCHES "
                 "F,I,W[,SEND] ... (one per stage)\n",
                 argv[0]);
    return 2;
  }
  ScheduleKind kind;
  if (!std::strcmp(argv[1], "gpipe"))
    kind = ScheduleKind::GPipe;
  else if (!std::strcmp(argv[1], "1f1b"))
    kind = ScheduleKind::OneFOneB;
  else if (!std::strcmp(argv[1], "zb-h1"))
    kind = ScheduleKind::ZBH1;
  else {
    std::fprintf(stderr, "error: unknown schedule '%s'\n", argv[1]);
    return 2;
  }
  int m = std::atoi(argv[2]);
  std::vector<StageTimes> times;
  for (int i = 3; i < argc; ++i) {
    StageTimes t;
    t.sendS = 0;
    if (std::sscanf(argv[i], "%lf,%lf,%lf,%lf", &t.forwardS, &t.backwardInputS,
                    &t.backwardWeightS, &t.sendS) < 3) {
      std::fprintf(stderr, "error: '%s' is not F,I,W[,SEND]\n", argv[i]);
      return 2;
    }
    times.push_back(t);
  }
  Simulation sim = simulate(kind, times, m);
  if (!sim.ok) {
    std::fprintf(stderr, "error: the schedule does not complete\n");
    return 1;
  }
  // The slowest stage's bubble: the step beyond its work. Idle that only
  // makes a faster stage wait for a slower one (load imbalance, the same
  // under every schedule) is not in it; for equal stages it is the mean.
  double slowest = *std::max_element(sim.busyS.begin(), sim.busyS.end());
  std::string bubbles, held, whole;
  for (size_t s = 0; s < times.size(); ++s) {
    bubbles += (s ? ", " : "") + std::to_string(sim.bubble[s]);
    held += (s ? ", " : "") + std::to_string(sim.peakInFlight[s]);
    whole += (s ? ", " : "") + std::to_string(sim.peakFull[s]);
  }
  std::printf("{\"step_s\": %.9g, \"mean_bubble\": %.9g, "
              "\"slowest_bubble\": %.9g, \"bubble\": [%s], "
              "\"held\": [%s], \"held_whole\": [%s], \"analytic\": %.9g}\n",
              sim.stepS, sim.meanBubble(),
              slowest > 0 ? (sim.stepS - slowest) / slowest : 0.0,
              bubbles.c_str(), held.c_str(), whole.c_str(),
              analyticBubble(static_cast<int32_t>(times.size()), m));
  return 0;
}
