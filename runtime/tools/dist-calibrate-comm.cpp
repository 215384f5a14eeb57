//===- dist-calibrate-comm.cpp - Measure collectives between ranks -------===//
// SPDX-License-Identifier: Apache-2.0
//
// mpirun -np P dist-calibrate-comm [--quick] [--json OUT]
//
// Times dist_rt_all_reduce of float buffers from 8 bytes to 16 MiB (quick:
// to 1 MiB) between the ranks of the job, through the runtime's own
// collectives, and fits the alpha-beta model of a ring all-reduce to the
// medians: t(n) = 2 (P - 1) alpha + 2 (P - 1) / P * n * beta, alpha from
// the smallest and beta from the largest message. Rank 0
// prints (or writes atomically to OUT) one JSON object:
//   {"ranks": P, "all_reduce": [[bytes, seconds], ...],
//    "latency_s": alpha, "bandwidth_bytes_per_s": 1 / beta}
// dist-opt calibrate runs it with 2 local ranks and stores the fit as the
// node's intra link. Failures: one "dist-calibrate-comm: error: ..." line,
// exit 1.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/comm.h"
#include "dist_rt/param_format.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int fail(int rank, dist_rt_status_t status) {
  std::fprintf(stderr, "dist-calibrate-comm: error: rank %d: %s\n", rank,
               dist_rt_status_message(status));
  dist_rt_status_free(status);
  dist_rt_world_abort(1);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--json" && i + 1 < argc) {
      out = argv[++i];
    } else if (a.rfind("--", 0) == 0 || a == "--json") {
      std::fprintf(stderr,
                   "dist-calibrate-comm: error: unknown option '%s' (usage: "
                   "dist-calibrate-comm [--quick] [--json OUT])\n",
                   a.c_str());
      return 1;
    }
  }
  dist_rt_world_options_t opts;
  dist_rt_world_options_initialize(&opts);
  opts.timeout_s = 60;
  dist_rt_comm_t world = nullptr;
  if (dist_rt_status_t s = dist_rt_world_init(&argc, &argv, &opts, &world)) {
    std::fprintf(stderr, "dist-calibrate-comm: error: %s\n",
                 dist_rt_status_message(s));
    dist_rt_status_free(s);
    return 1;
  }
  int rank = dist_rt_comm_rank(world);
  int size = dist_rt_comm_size(world);
  if (size < 2) {
    if (rank == 0)
      std::fprintf(stderr, "dist-calibrate-comm: error: needs at least 2 "
                           "ranks (run it under mpirun -np 2)\n");
    dist_rt_status_free(dist_rt_world_finalize());
    dist_rt_comm_release(world);
    return 1;
  }
  int64_t maxBytes = quick ? (1 << 20) : (16 << 20);
  std::vector<float> buf(maxBytes / sizeof(float), 1.0f);
  std::vector<std::pair<double, double>> points;
  for (int64_t bytes = 8; bytes <= maxBytes; bytes *= 4) {
    int64_t count = bytes / static_cast<int64_t>(sizeof(float));
    std::vector<double> times;
    double spent = 0;
    for (int rep = 0; rep < 200 && (rep < 5 || spent < (quick ? 0.05 : 0.2));
         ++rep) {
      if (dist_rt_status_t s = dist_rt_barrier(world))
        return fail(rank, s);
      auto start = Clock::now();
      if (dist_rt_status_t s =
              dist_rt_all_reduce(world, buf.data(), buf.data(), count,
                                 DIST_RT_DTYPE_FLOAT, DIST_RT_REDUCE_MAX))
        return fail(rank, s);
      double t = std::chrono::duration<double>(Clock::now() - start).count();
      // Every rank agrees on the slowest rank's time.
      double slowest = t;
      if (dist_rt_status_t s = dist_rt_all_reduce(
              world, &t, &slowest, 1, DIST_RT_DTYPE_DOUBLE, DIST_RT_REDUCE_MAX))
        return fail(rank, s);
      times.push_back(slowest);
      spent += slowest;
    }
    std::sort(times.begin(), times.end());
    points.emplace_back(static_cast<double>(bytes), times[times.size() / 2]);
    if (rank == 0 && out.size())
      std::fprintf(stderr, "calibrate: all_reduce %d ranks %lld B: %.2f us\n",
                   size, static_cast<long long>(bytes),
                   times[times.size() / 2] * 1e6);
  }
  // Latency from the smallest message, bandwidth from the largest (a least
  // squares fit over sizes spanning six orders of magnitude lets the large
  // ones swamp the latency term).
  double p = size;
  double alpha = std::max(1e-9, points.front().second / (2 * (p - 1)));
  double beta = std::max(1e-15, (points.back().second - 2 * (p - 1) * alpha) /
                                    (2 * (p - 1) / p * points.back().first));
  int rc = 0;
  if (rank == 0) {
    std::string json =
        "{\"ranks\": " + std::to_string(size) + ", \"all_reduce\": [";
    for (size_t i = 0; i < points.size(); ++i) {
      char item[64];
      std::snprintf(item, sizeof(item), "%s[%.0f, %.6g]", i ? ", " : "",
                    points[i].first, points[i].second);
      json += item;
    }
    char tail[128];
    std::snprintf(tail, sizeof(tail),
                  "], \"latency_s\": %.6g, \"bandwidth_bytes_per_s\": %.6g}\n",
                  alpha, 1.0 / beta);
    json += tail;
    if (out.empty()) {
      std::fputs(json.c_str(), stdout);
    } else {
      std::string tmp = out + ".tmp";
      FILE *f = std::fopen(tmp.c_str(), "w");
      if (!f || std::fputs(json.c_str(), f) < 0 || std::fclose(f) != 0 ||
          std::rename(tmp.c_str(), out.c_str()) != 0) {
        std::fprintf(stderr, "dist-calibrate-comm: error: cannot write %s\n",
                     out.c_str());
        rc = 1;
      }
    }
  }
  if (dist_rt_status_t s = dist_rt_world_finalize()) {
    std::fprintf(stderr, "dist-calibrate-comm: error: %s\n",
                 dist_rt_status_message(s));
    dist_rt_status_free(s);
    rc = 1;
  }
  dist_rt_comm_release(world);
  return rc;
}
