//===- PipelineScheduleTest.cpp - Pipeline schedule action lists ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Tests of dist_rt/pipeline_schedule.h: every schedule's lists are complete
// and ordered, the simulated bubble of GPipe and 1F1B is the analytic
// (p - 1) / m at equal stage times, ZB-H1's is at most half of 1F1B's with
// no more micro-batches held, and the lists do not depend on the times.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>

using namespace dist_rt::pipeline;

namespace {

constexpr ScheduleKind kAll[] = {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                                 ScheduleKind::ZBH1};

/// Checks that `actions` (with transfers) of `stage` hold every micro-batch's
/// work once, in dependency order, with the transfers where they belong.
void checkComplete(ScheduleKind kind, int32_t stage, int32_t stages, int32_t m,
                   const std::vector<Action> &actions) {
  SCOPED_TRACE(std::string(scheduleName(kind)) + " stage " +
               std::to_string(stage) + " of " + std::to_string(stages) +
               ", m " + std::to_string(m));
  std::map<std::pair<int, int32_t>, int> position;
  for (size_t i = 0; i < actions.size(); ++i) {
    auto key = std::make_pair(static_cast<int>(actions[i].kind),
                              actions[i].microBatch);
    EXPECT_FALSE(position.count(key))
        << actionName(actions[i].kind) << actions[i].microBatch << " twice";
    position[key] = static_cast<int>(i);
  }
  auto at = [&](ActionKind k, int32_t i) {
    auto it = position.find({static_cast<int>(k), i});
    return it == position.end() ? -1 : it->second;
  };
  bool split = splitsBackward(kind);
  for (int32_t i = 0; i < m; ++i) {
    int f = at(ActionKind::Forward, i);
    ASSERT_GE(f, 0) << "F" << i << " missing";
    int b = at(split ? ActionKind::BackwardInput : ActionKind::Backward, i);
    ASSERT_GT(b, f) << "backward of " << i << " missing or before F";
    if (split) {
      EXPECT_GT(at(ActionKind::BackwardWeight, i), b);
      EXPECT_LT(at(ActionKind::Backward, i), 0);
    } else {
      EXPECT_LT(at(ActionKind::BackwardWeight, i), 0);
    }
    int recvAct = at(ActionKind::RecvActivation, i);
    int sendAct = at(ActionKind::SendActivation, i);
    int recvGrad = at(ActionKind::RecvGradient, i);
    int sendGrad = at(ActionKind::SendGradient, i);
    EXPECT_EQ(recvAct, stage > 0 ? f - 1 : -1);
    EXPECT_EQ(sendAct, stage + 1 < stages ? f + 1 : -1);
    EXPECT_EQ(recvGrad, stage + 1 < stages ? b - 1 : -1);
    EXPECT_EQ(sendGrad, stage > 0 ? b + 1 : -1);
  }
  size_t expected = size_t(m) * (split ? 3 : 2) +
                    size_t(m) * ((stage > 0) + (stage + 1 < stages)) * 2;
  EXPECT_EQ(actions.size(), expected);
}

std::vector<StageTimes> equalTimes(int32_t p, double f, double bi, double w) {
  StageTimes t;
  t.forwardS = f;
  t.backwardInputS = bi;
  t.backwardWeightS = w;
  return std::vector<StageTimes>(p, t);
}

} // namespace

TEST(PipelineSchedule, ListsAreCompleteAndOrdered) {
  for (ScheduleKind kind : kAll)
    for (int32_t p : {1, 2, 3, 4, 8})
      for (int32_t m : {1, 2, 3, 4, 8, 16})
        for (int32_t s = 0; s < p; ++s)
          checkComplete(kind, s, p, m, stageActions(kind, s, p, m));
}

TEST(PipelineSchedule, SmallListsReadAsPublished) {
  // 1F1B, p = 2, m = 4: stage 0 warms up with one forward.
  EXPECT_EQ(formatActions(computeActions(ScheduleKind::OneFOneB, 0, 2, 4)),
            "F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_EQ(formatActions(computeActions(ScheduleKind::OneFOneB, 1, 2, 4)),
            "F0 B0 F1 B1 F2 B2 F3 B3");
  EXPECT_EQ(formatActions(computeActions(ScheduleKind::GPipe, 1, 2, 3)),
            "F0 F1 F2 B0 B1 B2");
  EXPECT_EQ(formatActions(stageActions(ScheduleKind::GPipe, 1, 2, 1)),
            "recv-act:0 F0 B0 send-grad:0");
  // ZB-H1: weight gradients wait while inputs and gradients are ready (up
  // to p - 1 of them) and fill the time the stage would wait.
  EXPECT_EQ(formatActions(computeActions(ScheduleKind::ZBH1, 0, 2, 3)),
            "F0 F1 I0 F2 I1 W0 W1 I2 W2");
  EXPECT_EQ(formatActions(computeActions(ScheduleKind::ZBH1, 1, 2, 3)),
            "F0 I0 F1 I1 W0 F2 I2 W1 W2");
}

TEST(PipelineSchedule, DefaultMicroBatchesDivideTheBatch) {
  EXPECT_EQ(defaultMicroBatches(1, 16), 1);
  EXPECT_EQ(defaultMicroBatches(2, 16), 4);
  EXPECT_EQ(defaultMicroBatches(2, 0), 4); // batch not known
  EXPECT_EQ(defaultMicroBatches(2, 2), 2);
  EXPECT_EQ(defaultMicroBatches(4, 4), 4); // 8 does not divide 4
  EXPECT_EQ(defaultMicroBatches(4, 6), 6);
  EXPECT_EQ(defaultMicroBatches(3, 7), 1);
}

TEST(PipelineSchedule, GPipeAnd1F1BBubbleIsAnalytic) {
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    for (int32_t p : {2, 4, 8})
      for (int32_t m : {4, 8, 16}) {
        Simulation sim = simulate(kind, equalTimes(p, 1, 1, 1), m);
        ASSERT_TRUE(sim.ok);
        for (int32_t s = 0; s < p; ++s)
          EXPECT_NEAR(sim.bubble[s], analyticBubble(p, m), 1e-12)
              << scheduleName(kind) << " p " << p << " m " << m << " stage "
              << s;
        EXPECT_NEAR(sim.stepS, (m + p - 1) * 3.0, 1e-9);
      }
}

TEST(PipelineSchedule, ZeroBubbleHalvesThe1F1BBubble) {
  // With at least as many micro-batches as stages (fewer leave the last
  // stages idle whatever the order).
  for (int32_t p : {2, 4, 8})
    for (int32_t m : {8, 16, 32}) {
      SCOPED_TRACE("p " + std::to_string(p) + " m " + std::to_string(m));
      Simulation one =
          simulate(ScheduleKind::OneFOneB, equalTimes(p, 1, 1, 1), m);
      Simulation zb = simulate(ScheduleKind::ZBH1, equalTimes(p, 1, 1, 1), m);
      ASSERT_TRUE(one.ok);
      ASSERT_TRUE(zb.ok);
      EXPECT_LE(zb.meanBubble(), one.meanBubble() / 2 + 1e-12);
      EXPECT_LT(zb.stepS, one.stepS);
      for (int32_t s = 0; s < p; ++s) {
        // Whole micro-batches as 1F1B; deferred weight gradients at most
        // p - 1 more.
        EXPECT_LE(zb.peakFull[s], one.peakInFlight[s]);
        EXPECT_LE(zb.peakInFlight[s], std::min(m, (p - s) + (p - 1)));
      }
      // The published figure: (p - 1)(F + I - W) of idle time.
      EXPECT_NEAR(zb.stepS, 3.0 * m + (p - 1), 1e-9);
    }
}

TEST(PipelineSchedule, ZeroBubbleNeverSlowerThan1F1B) {
  for (int32_t p : {2, 4, 8})
    for (int32_t m : {1, 2, 3, 4, 5}) {
      Simulation one =
          simulate(ScheduleKind::OneFOneB, equalTimes(p, 1, 1, 1), m);
      Simulation zb = simulate(ScheduleKind::ZBH1, equalTimes(p, 1, 1, 1), m);
      ASSERT_TRUE(zb.ok);
      EXPECT_LE(zb.stepS, one.stepS) << "p " << p << " m " << m;
    }
}

TEST(PipelineSchedule, PeakMicroBatchesHeld) {
  for (int32_t p : {2, 4, 8})
    for (int32_t m : {1, 4, 16}) {
      Simulation gpipe =
          simulate(ScheduleKind::GPipe, equalTimes(p, 1, 1, 1), m);
      Simulation one =
          simulate(ScheduleKind::OneFOneB, equalTimes(p, 1, 1, 1), m);
      for (int32_t s = 0; s < p; ++s) {
        EXPECT_EQ(gpipe.peakInFlight[s], m);
        EXPECT_EQ(one.peakInFlight[s], std::min(p - s, m));
      }
    }
}

TEST(PipelineSchedule, UnequalTimesCompleteAndKeepTheOrder) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> d(0.1, 3.0);
  for (ScheduleKind kind : kAll)
    for (int32_t p : {2, 3, 5})
      for (int32_t m : {1, 3, 8}) {
        std::vector<StageTimes> times(p);
        for (StageTimes &t : times) {
          t.forwardS = d(rng);
          t.backwardInputS = d(rng);
          t.backwardWeightS = d(rng);
          t.sendS = d(rng) / 4;
        }
        Simulation sim = simulate(kind, times, m);
        ASSERT_TRUE(sim.ok);
        double busy = 0;
        for (const TimelineEntry &e : sim.timeline) {
          EXPECT_LE(e.endS, sim.stepS + 1e-9);
          busy += e.endS - e.startS;
        }
        double expected = 0;
        for (const StageTimes &t : times)
          expected += m * (t.forwardS + t.backwardInputS + t.backwardWeightS);
        EXPECT_NEAR(busy, expected, 1e-9);
        // GPipe and 1F1B run their fixed order whatever the times.
        if (!splitsBackward(kind))
          for (int32_t s = 0; s < p; ++s)
            EXPECT_EQ(sim.order[s], computeActions(kind, s, p, m));
      }
}

// The runtime orders ZB-H1's actions by times it measured in a few steps
// and then runs them at whatever times the later steps take: the lists must be
// complete for any times they were derived from, and run to the end (no
// stage waiting for one that waits for it) at any other times.
TEST(PipelineSchedule, ListsFromMeasuredTimesRunAtAnyTimes) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> d(0.05, 4.0);
  auto randomTimes = [&](int32_t p) {
    std::vector<StageTimes> times(p);
    for (StageTimes &t : times) {
      t.forwardS = d(rng);
      t.backwardInputS = d(rng);
      t.backwardWeightS = d(rng) / 4;
      t.sendS = d(rng) / 8;
    }
    return times;
  };
  for (ScheduleKind kind : kAll)
    for (int32_t p : {2, 3, 4, 8})
      for (int32_t m : {1, 2, 4, 7, 16})
        for (int trial = 0; trial < 4; ++trial) {
          std::vector<StageTimes> measured = randomTimes(p);
          std::vector<std::vector<Action>> orders;
          for (int32_t s = 0; s < p; ++s) {
            orders.push_back(computeActions(kind, s, p, m, measured));
            checkComplete(kind, s, p, m, stageActions(kind, s, p, m, measured));
          }
          for (int again = 0; again < 3; ++again) {
            Simulation sim = replay(orders, randomTimes(p), m);
            ASSERT_TRUE(sim.ok)
                << scheduleName(kind) << " p " << p << " m " << m;
            for (int32_t s = 0; s < p; ++s)
              EXPECT_EQ(sim.order[s], orders[s]);
          }
        }
  // A list that waits for itself does not complete.
  std::vector<std::vector<Action>> stuck = {{{ActionKind::BackwardInput, 0},
                                             {ActionKind::Forward, 0},
                                             {ActionKind::BackwardWeight, 0}},
                                            {{ActionKind::Forward, 0},
                                             {ActionKind::BackwardInput, 0},
                                             {ActionKind::BackwardWeight, 0}}};
  EXPECT_FALSE(replay(stuck, equalTimes(2, 1, 1, 1), 1).ok);
}

// Where stages are unlike, lists placed by the real times leave less idle
// than the unit-time lists run at those times (what the runtime did before
// it measured). The times: the GPT-style LM's two stages as measured (ms),
// the first with almost no input gradient (its input is token ids).
TEST(PipelineSchedule, ZeroBubbleListsFollowTheTimes) {
  std::vector<StageTimes> times(2);
  times[0].forwardS = 10.5;
  times[0].backwardInputS = 0.3;
  times[0].backwardWeightS = 14.5;
  times[1].forwardS = 10.7;
  times[1].backwardInputS = 11.0;
  times[1].backwardWeightS = 6.5;
  int32_t m = 4;
  std::vector<std::vector<Action>> unit, measured;
  for (int32_t s = 0; s < 2; ++s) {
    unit.push_back(computeActions(ScheduleKind::ZBH1, s, 2, m));
    measured.push_back(computeActions(ScheduleKind::ZBH1, s, 2, m, times));
  }
  Simulation byUnit = replay(unit, times, m);
  Simulation byMeasured = replay(measured, times, m);
  ASSERT_TRUE(byUnit.ok && byMeasured.ok);
  EXPECT_LT(byMeasured.stepS, byUnit.stepS);
  EXPECT_EQ(byMeasured.stepS, simulate(ScheduleKind::ZBH1, times, m).stepS);
}

TEST(PipelineSchedule, RefusesEmptyPipelines) {
  EXPECT_FALSE(simulate(ScheduleKind::OneFOneB, {}, 4).ok);
  EXPECT_FALSE(simulate(ScheduleKind::OneFOneB, equalTimes(2, 1, 1, 1), 0).ok);
  EXPECT_TRUE(computeActions(ScheduleKind::GPipe, 2, 2, 4).empty());
}
