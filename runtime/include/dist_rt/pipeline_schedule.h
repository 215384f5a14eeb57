//===- pipeline_schedule.h - Pipeline schedules as action lists -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The one representation of a pipeline schedule: for each stage (a rank of
// the pipeline axis), the ordered list of what it does in one training step
// (forward, backward, backward-input, backward-weight of a micro-batch, and
// the sends and receives around them). Header-only C++17 with no
// dependencies: the compiler prints the lists (`--compile-to=partition`, the
// plan report) and prices them with `simulate`, the runtime executes the
// same lists, so both always agree on the order.
//
// Schedules:
//  - GPipe: every forward, then every backward (in the same order);
//    m micro-batches of activations are held at once.
//  - 1F1B: stage s runs min(p - s - 1, m) forwards, then alternates one
//    forward and one backward, then the remaining backwards; at most
//    min(p - s, m) micro-batches are held.
//  - ZB-H1 (zero bubble, Qi et al. 2024): the backward is split into the
//    input gradient (backward-input, on the critical path between stages)
//    and the weight gradient (backward-weight, needed by nobody but the
//    optimizer step). Backward-inputs go first and forwards keep 1F1B's
//    bound (p - s micro-batches held whole); weight gradients run when
//    nothing else is ready or when more than p - 1 are pending, so they
//    fill the cool-down bubble: at equal times the bubble is (p - 1) / 3m,
//    a third of 1F1B's. The lists are derived by simulating the schedule at
//    given stage times (the compiler's printout: the cost model's; the
//    runtime: unit times, then the times it measured, the same on every
//    rank), so every rank's list fits every other's.
//
// Bubble: for a stage, (step time - busy time) / busy time, the form in
// which GPipe's and 1F1B's is (p - 1) / m for equal stages.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_PIPELINE_SCHEDULE_H
#define DIST_RT_PIPELINE_SCHEDULE_H

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace dist_rt::pipeline {

enum class ScheduleKind : uint32_t { GPipe = 0, OneFOneB = 1, ZBH1 = 2 };

/// The schedule's name as `--schedule` takes it ("gpipe", "1f1b", "zb-h1").
inline const char *scheduleName(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return "gpipe";
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::ZBH1:
    return "zb-h1";
  }
  return "?";
}

/// Whether the schedule runs the backward as two parts (input, weight).
inline bool splitsBackward(ScheduleKind kind) {
  return kind == ScheduleKind::ZBH1;
}

enum class ActionKind : uint8_t {
  Forward = 0,        ///< F: the stage's forward of a micro-batch
  Backward = 1,       ///< B: its whole backward (input and weight gradients)
  BackwardInput = 2,  ///< I: the gradients of the stage's inputs
  BackwardWeight = 3, ///< W: the gradients of the stage's parameters
  RecvActivation = 4, ///< the previous stage's outputs for a forward
  SendActivation = 5, ///< this stage's outputs to the next stage
  RecvGradient = 6,   ///< the next stage's gradients for a backward
  SendGradient = 7,   ///< the input gradients to the previous stage
};

struct Action {
  ActionKind kind = ActionKind::Forward;
  int32_t microBatch = 0;
  bool operator==(const Action &o) const {
    return kind == o.kind && microBatch == o.microBatch;
  }
};

/// Short name of an action kind as the lists print it.
inline const char *actionName(ActionKind kind) {
  switch (kind) {
  case ActionKind::Forward:
    return "F";
  case ActionKind::Backward:
    return "B";
  case ActionKind::BackwardInput:
    return "I";
  case ActionKind::BackwardWeight:
    return "W";
  case ActionKind::RecvActivation:
    return "recv-act";
  case ActionKind::SendActivation:
    return "send-act";
  case ActionKind::RecvGradient:
    return "recv-grad";
  case ActionKind::SendGradient:
    return "send-grad";
  }
  return "?";
}

inline bool isCompute(ActionKind kind) {
  return kind == ActionKind::Forward || kind == ActionKind::Backward ||
         kind == ActionKind::BackwardInput ||
         kind == ActionKind::BackwardWeight;
}

/// Durations of one micro-batch's work on each stage, for `simulate`.
struct StageTimes {
  double forwardS = 1;
  double backwardInputS = 1;  ///< the whole backward is input + weight
  double backwardWeightS = 1; ///< (for schedules that do not split it too)
  double sendS = 0;           ///< one activation or gradient transfer
};

/// One bar of a simulated timeline.
struct TimelineEntry {
  int32_t stage = 0;
  Action action;
  double startS = 0, endS = 0;
};

struct Simulation {
  /// The compute actions of each stage in the order they ran.
  std::vector<std::vector<Action>> order;
  std::vector<TimelineEntry> timeline;
  double stepS = 0;
  /// Per stage: busy (compute) time and bubble (step - busy) / busy.
  std::vector<double> busyS, bubble;
  /// Per stage: most micro-batches whose activations were held at once
  /// (from the start of a forward to the end of its last backward part).
  std::vector<int32_t> peakInFlight;
  /// Per stage: most micro-batches held whole (from the start of a forward
  /// to the end of its backward or backward-input: a weight gradient needs
  /// only the layers' inputs and output gradients, not every activation).
  std::vector<int32_t> peakFull;
  /// False when the lists cannot complete (a bug in a generator).
  bool ok = true;
  double meanBubble() const {
    double sum = 0;
    for (double b : bubble)
      sum += b;
    return bubble.empty() ? 0 : sum / static_cast<double>(bubble.size());
  }
};

namespace detail {

/// 1F1B's order of forwards and backwards (kind `back`) on `stage`.
inline std::vector<Action> oneFOneB(int32_t stage, int32_t stages, int32_t m,
                                    ActionKind back) {
  std::vector<Action> out;
  int32_t warm = std::min(stages - stage - 1, m);
  for (int32_t i = 0; i < warm; ++i)
    out.push_back({ActionKind::Forward, i});
  for (int32_t i = 0; i < m - warm; ++i) {
    out.push_back({ActionKind::Forward, warm + i});
    out.push_back({back, i});
  }
  for (int32_t i = m - warm; i < m; ++i)
    out.push_back({back, i});
  return out;
}

/// Runs the pipeline with the given times and fills `sim`. With `fixed`
/// (GPipe, 1F1B) every stage runs its list of forwards and backwards in
/// order. Without it (ZB-H1), a stage that is free runs, first that is
/// ready: a backward-weight when more than p - 1 are pending (the deferred
/// ones keep the layers' inputs and output gradients alive), its next
/// backward-input (the gradient chain between stages is the critical path),
/// its next forward unless p - s micro-batches are already held whole
/// (1F1B's bound), a pending backward-weight; and when nothing is ready,
/// whichever of the first two becomes ready first.
inline void run(const std::vector<std::vector<Action>> *fixed,
                const std::vector<StageTimes> &times, int32_t m,
                Simulation &sim) {
  int32_t p = static_cast<int32_t>(times.size());
  sim = Simulation();
  sim.order.assign(p, {});
  sim.busyS.assign(p, 0);
  sim.bubble.assign(p, 0);
  sim.peakInFlight.assign(p, 0);
  sim.peakFull.assign(p, 0);
  auto idx = [m](int32_t s, int32_t i) { return size_t(s) * m + i; };
  const double never = -1;
  std::vector<double> fwdEnd(size_t(p) * m, never),
      bwdEnd(size_t(p) * m, never);
  std::vector<double> freeAt(p, 0);
  std::vector<size_t> next(p, 0);
  std::vector<int32_t> nextF(p, 0), nextI(p, 0);
  std::vector<std::vector<int32_t>> pendingW(p);
  std::vector<int32_t> inFlight(p, 0), fullInFlight(p, 0);
  auto time = [&](int32_t s, ActionKind k) {
    const StageTimes &t = times[s];
    switch (k) {
    case ActionKind::Forward:
      return t.forwardS;
    case ActionKind::Backward:
      return t.backwardInputS + t.backwardWeightS;
    case ActionKind::BackwardInput:
      return t.backwardInputS;
    default:
      return t.backwardWeightS;
    }
  };
  // When the input of a forward or backward is there (never: not yet
  // produced).
  auto readyAt = [&](int32_t s, const Action &a) {
    if (a.kind == ActionKind::BackwardWeight) // after its own input part
      return bwdEnd[idx(s, a.microBatch)];
    if (a.kind == ActionKind::Forward) {
      if (s == 0)
        return 0.0;
      double f = fwdEnd[idx(s - 1, a.microBatch)];
      return f < 0 ? never : f + times[s - 1].sendS;
    }
    if (s + 1 == p)
      return fwdEnd[idx(s, a.microBatch)];
    double b = bwdEnd[idx(s + 1, a.microBatch)];
    return b < 0 ? never : b + times[s + 1].sendS;
  };
  // The next action of stage s and when it can start (-1: none known yet).
  auto candidate = [&](int32_t s, Action &out) -> double {
    if (fixed) {
      if (next[s] >= (*fixed)[s].size())
        return -1;
      out = (*fixed)[s][next[s]];
      double r = readyAt(s, out);
      return r < 0 ? -1 : std::max(freeAt[s], r);
    }
    double best = -1;
    Action bestAction;
    if (static_cast<int32_t>(pendingW[s].size()) > p - 1) {
      out = {ActionKind::BackwardWeight, pendingW[s].front()};
      return freeAt[s];
    }
    if (nextI[s] < nextF[s]) {
      Action a{ActionKind::BackwardInput, nextI[s]};
      double r = readyAt(s, a);
      if (r >= 0 && r <= freeAt[s]) {
        out = a;
        return freeAt[s];
      }
      if (r >= 0) {
        best = r;
        bestAction = a;
      }
    }
    if (nextF[s] < m && nextF[s] - nextI[s] < p - s) {
      Action a{ActionKind::Forward, nextF[s]};
      double r = readyAt(s, a);
      if (r >= 0 && r <= freeAt[s]) {
        out = a;
        return freeAt[s];
      }
      if (r >= 0 && (best < 0 || r < best)) {
        best = r;
        bestAction = a;
      }
    }
    if (!pendingW[s].empty()) {
      out = {ActionKind::BackwardWeight, pendingW[s].front()};
      return freeAt[s];
    }
    out = bestAction;
    return best;
  };
  while (true) {
    // The stage whose next action can start first (lowest stage on ties),
    // so that the simulation follows time.
    int32_t best = -1;
    double bestStart = 0;
    Action bestAction;
    for (int32_t s = 0; s < p; ++s) {
      Action a;
      double start = candidate(s, a);
      if (start >= 0 && (best < 0 || start < bestStart)) {
        best = s;
        bestStart = start;
        bestAction = a;
      }
    }
    if (best < 0)
      break;
    int32_t s = best;
    Action a = bestAction;
    double end = bestStart + time(s, a.kind);
    sim.timeline.push_back({s, a, bestStart, end});
    sim.order[s].push_back(a);
    sim.busyS[s] += end - bestStart;
    freeAt[s] = end;
    if (fixed)
      ++next[s];
    switch (a.kind) {
    case ActionKind::Forward:
      fwdEnd[idx(s, a.microBatch)] = end;
      ++nextF[s];
      sim.peakInFlight[s] = std::max(sim.peakInFlight[s], ++inFlight[s]);
      sim.peakFull[s] = std::max(sim.peakFull[s], ++fullInFlight[s]);
      break;
    case ActionKind::Backward:
      bwdEnd[idx(s, a.microBatch)] = end;
      --fullInFlight[s];
      --inFlight[s];
      break;
    case ActionKind::BackwardInput:
      bwdEnd[idx(s, a.microBatch)] = end;
      ++nextI[s];
      --fullInFlight[s];
      pendingW[s].push_back(a.microBatch);
      break;
    default:
      pendingW[s].erase(
          std::find(pendingW[s].begin(), pendingW[s].end(), a.microBatch));
      --inFlight[s];
      break;
    }
  }
  sim.ok = true;
  for (int32_t s = 0; s < p; ++s) {
    size_t expected = fixed ? (*fixed)[s].size() : static_cast<size_t>(m) * 3;
    sim.ok = sim.ok && sim.order[s].size() == expected;
    sim.stepS = std::max(sim.stepS, freeAt[s]);
  }
  for (int32_t s = 0; s < p; ++s)
    sim.bubble[s] =
        sim.busyS[s] > 0 ? (sim.stepS - sim.busyS[s]) / sim.busyS[s] : 0;
}

/// Every stage's order of forwards and backward (or backward-input) parts.
inline std::vector<std::vector<Action>> fixedOrder(ScheduleKind kind,
                                                   int32_t stages, int32_t m) {
  std::vector<std::vector<Action>> out(stages);
  for (int32_t s = 0; s < stages; ++s) {
    if (kind == ScheduleKind::GPipe) {
      for (int32_t i = 0; i < m; ++i)
        out[s].push_back({ActionKind::Forward, i});
      for (int32_t i = 0; i < m; ++i)
        out[s].push_back({ActionKind::Backward, i});
      continue;
    }
    out[s] = oneFOneB(s, stages, m,
                      kind == ScheduleKind::ZBH1 ? ActionKind::BackwardInput
                                                 : ActionKind::Backward);
  }
  return out;
}

} // namespace detail

/// Simulates `kind` over stages with the given times (one per stage).
inline Simulation simulate(ScheduleKind kind,
                           const std::vector<StageTimes> &times, int32_t m) {
  Simulation sim;
  int32_t p = static_cast<int32_t>(times.size());
  if (p < 1 || m < 1) {
    sim.ok = false;
    return sim;
  }
  if (splitsBackward(kind)) {
    detail::run(nullptr, times, m, sim);
  } else {
    std::vector<std::vector<Action>> fixed = detail::fixedOrder(kind, p, m);
    detail::run(&fixed, times, m, sim);
  }
  return sim;
}

/// Runs every stage's given list of compute actions, in order, with the
/// given times: what the runtime does once the lists are set. It completes
/// (`ok`) for any times when the lists came from one simulation, whatever
/// its times: that simulation's timeline orders every action after the
/// ones it waits for, in every stage's order, so no stage can wait for a
/// stage that waits for it.
inline Simulation replay(const std::vector<std::vector<Action>> &orders,
                         const std::vector<StageTimes> &times, int32_t m) {
  Simulation sim;
  if (orders.size() != times.size() || times.empty() || m < 1) {
    sim.ok = false;
    return sim;
  }
  detail::run(&orders, times, m, sim);
  return sim;
}

/// The compute actions of `stage` in order: the same on every rank. ZB-H1
/// places weight gradients by a simulation at the stages' `times` (one per
/// stage; empty: unit times), which must be the same on every rank too.
inline std::vector<Action>
computeActions(ScheduleKind kind, int32_t stage, int32_t stages, int32_t m,
               const std::vector<StageTimes> &times = {}) {
  if (stage < 0 || stage >= stages || m < 1)
    return {};
  if (!splitsBackward(kind))
    return detail::fixedOrder(kind, stages, m)[stage];
  Simulation sim = simulate(kind,
                            static_cast<int32_t>(times.size()) == stages
                                ? times
                                : std::vector<StageTimes>(stages),
                            m);
  return sim.order[stage];
}

/// The actions of `stage` with the transfers around each compute action:
/// a forward receives the previous stage's outputs first (unless it is the
/// first stage) and sends its own after (unless it is the last); a backward
/// or backward-input receives the next stage's gradients first (unless it is
/// the last stage) and sends its input gradients after (unless it is the
/// first).
inline std::vector<Action>
stageActions(ScheduleKind kind, int32_t stage, int32_t stages, int32_t m,
             const std::vector<StageTimes> &times = {}) {
  std::vector<Action> out;
  for (const Action &a : computeActions(kind, stage, stages, m, times)) {
    bool forward = a.kind == ActionKind::Forward;
    bool gradient =
        a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardInput;
    if (forward && stage > 0)
      out.push_back({ActionKind::RecvActivation, a.microBatch});
    if (gradient && stage + 1 < stages)
      out.push_back({ActionKind::RecvGradient, a.microBatch});
    out.push_back(a);
    if (forward && stage + 1 < stages)
      out.push_back({ActionKind::SendActivation, a.microBatch});
    if (gradient && stage > 0)
      out.push_back({ActionKind::SendGradient, a.microBatch});
  }
  return out;
}

/// "F0 F1 B0 ..." (compute actions only) or with the transfers.
inline std::string formatActions(const std::vector<Action> &actions) {
  std::string out;
  for (const Action &a : actions) {
    if (!out.empty())
      out += ' ';
    out += actionName(a.kind);
    if (!isCompute(a.kind))
      out += ':';
    out += std::to_string(a.microBatch);
  }
  return out;
}

/// The micro-batches a pipeline of `stages` runs by default (dist-opt
/// without --micro-batches): two per stage, or the most below that which
/// divide `samples`, one dp rank's share of the batch (0: not known).
inline int64_t defaultMicroBatches(int64_t stages, int64_t samples) {
  int64_t m = stages > 1 ? 2 * stages : 1;
  while (samples > 0 && m > 1 && samples % m != 0)
    --m;
  return m;
}

/// The analytic bubble of GPipe and 1F1B for equal stages: (p - 1) / m.
inline double analyticBubble(int32_t stages, int32_t m) {
  return m > 0 ? static_cast<double>(stages - 1) / m : 0;
}

} // namespace dist_rt::pipeline

#endif // DIST_RT_PIPELINE_SCHEDULE_H
