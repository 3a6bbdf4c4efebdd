// ThreadTuner against step-time models: it settles on the fastest count, comes back when the
// machine changes, probes rarely once settled, and never leaves [1, max_threads].
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "check.h"
#include "core/worker_pool.h"

namespace fastbatch {
namespace {

// Feeds `steps` batch steps whose duration is model(threads); returns how many ran with a
// count other than the one chosen at the end.
int64_t Drive(ThreadTuner* tuner, const std::function<double(int)>& model, int64_t steps) {
  int64_t off = 0;
  for (int64_t s = 0; s < steps; ++s) {
    const int threads = tuner->threads();
    FB_CHECK(threads >= 1);
    tuner->Record(model(threads));
    off += threads != tuner->chosen();
  }
  return off;
}

FB_TEST(OneThreadNeverProbes) {
  ThreadTuner tuner(1);
  Drive(&tuner, [](int) { return 1e-3; }, 10000);
  FB_CHECK_EQ(tuner.chosen(), 1);
  FB_CHECK_EQ(tuner.threads(), 1);
}

FB_TEST(StaysWithAllThreadsWhenMoreIsFaster) {
  ThreadTuner tuner(2);
  FB_CHECK_EQ(tuner.chosen(), 2);
  Drive(&tuner, [](int t) { return 100e-6 / t; }, 100000);
  FB_CHECK_EQ(tuner.chosen(), 2);
}

FB_TEST(DropsToOneThreadWhenASecondIsSlowerAndComesBackLater) {
  ThreadTuner tuner(2);
  // One core busy: two threads stall now and then, 4x slower on average.
  Drive(&tuner, [](int t) { return t == 1 ? 100e-6 : 400e-6; }, 2000);
  FB_CHECK_EQ(tuner.chosen(), 1);
  // Settled: probes take a small share of the steps (1 s intervals, 10 ms probes).
  const int64_t probing = Drive(&tuner, [](int t) { return t == 1 ? 100e-6 : 400e-6; }, 200000);
  FB_CHECK_MSG(probing * 100 < 200000 * 2, std::to_string(probing) + " probe steps");
  FB_CHECK_EQ(tuner.chosen(), 1);
  // The machine is idle again: within a few probe intervals the tuner is back on two threads.
  Drive(&tuner, [](int t) { return 100e-6 / t; }, 30000);
  FB_CHECK_EQ(tuner.chosen(), 2);
}

FB_TEST(ReactsWithinAFewBlocksWhenTheMachineGetsBusy) {
  ThreadTuner tuner(2);
  Drive(&tuner, [](int t) { return 100e-6 / t; }, 100000);  // settled: probes 1 s apart
  FB_CHECK_EQ(tuner.chosen(), 2);
  double elapsed = 0.0;
  while (tuner.chosen() != 1 && elapsed < 10.0) {
    const double seconds = tuner.threads() == 1 ? 100e-6 : 400e-6;
    tuner.Record(seconds);
    elapsed += seconds;
  }
  // Two slow blocks start a probe at once: the block in progress, two slow ones, the probe and
  // the block of two threads that confirms it (10 ms each), not a 1 s interval.
  FB_CHECK_MSG(elapsed <= 0.055, std::to_string(elapsed) + " s");
}

FB_TEST(OneSlowBlockAloneIsNoise) {
  ThreadTuner tuner(2);
  Drive(&tuner, [](int t) { return 100e-6 / t; }, 100000);
  // Every fourth block is twice as slow (noise from other processes): two threads stay.
  int64_t step = 0;
  for (double elapsed = 0.0; elapsed < 2.0; ++step) {
    const double base = tuner.threads() == 1 ? 100e-6 : 50e-6;
    const double seconds = (step / 200) % 4 == 3 ? 2 * base : base;
    tuner.Record(seconds);
    elapsed += seconds;
  }
  FB_CHECK_EQ(tuner.chosen(), 2);
}

// A burst of load that is over by the time the probe it started runs is noise: the probe must
// beat a fresh block of the current choice, not the slow blocks before it.
FB_TEST(ABurstThatPassesBeforeTheProbeDoesNotMoveTheChoice) {
  ThreadTuner tuner(2);
  Drive(&tuner, [](int t) { return 100e-6 / t; }, 100000);  // settled on two threads
  FB_CHECK_EQ(tuner.chosen(), 2);
  bool burst = true;  // two threads 3x slower, until the slowdown's probe starts
  bool moved = false;
  for (double elapsed = 0.0; elapsed < 0.5;) {
    const int threads = tuner.threads();
    burst = burst && threads == 2;
    const double seconds = (burst ? 3.0 : 1.0) * 100e-6 / threads;
    tuner.Record(seconds);
    elapsed += seconds;
    moved = moved || tuner.chosen() != 2;
  }
  FB_CHECK(!burst);  // the burst did start a probe
  FB_CHECK(!moved);
}

FB_TEST(HillClimbsToTheBestOfManyCounts) {
  ThreadTuner tuner(8);
  auto model = [](int t) { return 1e-4 * (1.0 / t + 0.02 * t * t); };  // fastest at 3
  Drive(&tuner, model, 400000);
  FB_CHECK_EQ(tuner.chosen(), 3);
}

FB_TEST(ProbesStayWithinRange) {
  for (int max_threads : {2, 3, 5}) {
    ThreadTuner tuner(max_threads);
    int64_t step = 0;
    for (; step < 50000; ++step) {
      const int t = tuner.threads();
      FB_CHECK_MSG(t >= 1 && t <= max_threads, std::to_string(t));
      tuner.Record(step % 7 == 0 ? 3e-4 : 1e-4);  // noise, no real preference
    }
  }
}

// After a probe upwards pays, the next probe goes further up rather than back down: a pool
// that needs many more threads (async mode, envs that block) climbs one count an interval.
FB_TEST(KeepsProbingTheWayThatPaid) {
  ThreadTuner tuner(8, 2);
  int64_t steps = 0;
  while (tuner.chosen() < 3 && steps < 100000) {
    tuner.Record(800e-6 / tuner.threads());
    ++steps;
  }
  FB_CHECK_EQ(tuner.chosen(), 3);
  int next = 0;  // the count of the next probe
  for (; next == 0 && steps < 200000; ++steps) {
    const int threads = tuner.threads();
    if (threads != tuner.chosen()) next = threads;
    tuner.Record(800e-6 / threads);
  }
  FB_CHECK_EQ(next, 4);
}

// Async mode's tuner: it starts at the cores, may go above them only while the pool raises the
// ceiling (the envs' steps block), and drops back at once when the ceiling comes down.
FB_TEST(StartsWhereToldAndNeverProbesAboveItsCeiling) {
  ThreadTuner tuner(8, 2);
  tuner.set_ceiling(2);
  FB_CHECK_EQ(tuner.chosen(), 2);
  int most = 0;  // the most threads any step ran with
  auto faster_with_more = [&most](int t) {
    most = std::max(most, t);
    return 800e-6 / t;
  };
  const int64_t probes = Drive(&tuner, faster_with_more, 20000);
  FB_CHECK_EQ(most, 2);
  FB_CHECK_EQ(tuner.chosen(), 2);
  FB_CHECK_MSG(probes > 0, std::string("no probe of one thread"));  // it probes, but only downwards
  tuner.set_ceiling(8);
  Drive(&tuner, faster_with_more, 20000);
  FB_CHECK_EQ(tuner.chosen(), 8);
  tuner.set_ceiling(3);
  FB_CHECK_EQ(tuner.chosen(), 3);
  most = 0;
  Drive(&tuner, faster_with_more, 20000);
  FB_CHECK_EQ(most, 3);
  FB_CHECK_EQ(tuner.chosen(), 3);
}

// A probe that costs time outside the steps (the process backend moves envs between processes)
// waits 32 times that cost between probes, the slowdown's probe too; the choice still moves.
FB_TEST(AProbesOwnCostSpacesTheProbes) {
  ThreadTuner tuner(2);
  tuner.set_probe_cost(0.05);  // 32 x 50 ms: probes at least 1.6 s of stepping apart
  int probes = 0;
  int last = tuner.threads();
  double elapsed = 0.0;
  for (; elapsed < 16.0;) {  // two threads are faster: every probe of one thread fails
    const int threads = tuner.threads();
    probes += threads != last && threads != tuner.chosen();
    last = threads;
    const double seconds = 100e-6 / threads;
    tuner.Record(seconds);
    elapsed += seconds;
  }
  FB_CHECK_EQ(tuner.chosen(), 2);
  FB_CHECK_MSG(probes >= 2 && probes <= 10, std::to_string(probes) + " probes in 16 s");
  // The machine gets busy: the slowdown's probe still comes, after the cost's spacing at most.
  double busy = 0.0;
  while (tuner.chosen() != 1 && busy < 10.0) {
    const double seconds = tuner.threads() == 1 ? 100e-6 : 400e-6;
    tuner.Record(seconds);
    busy += seconds;
  }
  FB_CHECK_EQ(tuner.chosen(), 1);
  FB_CHECK_MSG(busy <= 1.7, std::to_string(busy) + " s");
}

// Skipped probes (the owner cannot run one) leave the choice and the measures alone and are
// spaced like lost ones; once the owner lets a probe run, the choice moves.
FB_TEST(SkippedProbesLeaveTheChoiceAndSpaceOut) {
  ThreadTuner tuner(2, 1);
  tuner.SkipProbe();  // not probing: nothing happens
  FB_CHECK_EQ(tuner.threads(), 1);
  int skipped = 0;
  for (double elapsed = 0.0; elapsed < 8.0; elapsed += 100e-6) {
    if (tuner.threads() != tuner.chosen()) {
      tuner.SkipProbe();
      ++skipped;
    }
    tuner.Record(tuner.threads() == 1 ? 100e-6 : 50e-6);  // two would be faster
  }
  FB_CHECK_EQ(tuner.chosen(), 1);
  FB_CHECK_MSG(skipped >= 3 && skipped <= 14, std::to_string(skipped) + " skips in 8 s");
  Drive(&tuner, [](int t) { return 100e-6 / t; }, 40000);  // probes run again
  FB_CHECK_EQ(tuner.chosen(), 2);
}

}  // namespace
}  // namespace fastbatch

FB_TEST_MAIN()
