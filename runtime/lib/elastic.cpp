//===- elastic.cpp - Elastic layout sets and the supervisor's records -----===//
// SPDX-License-Identifier: Apache-2.0
//
// Two things an elastic job needs from every rank:
//
// - The layout for the job's world size. `dist-opt --elastic=MIN:MAX`
//   writes one executable per world size; whichever of them the launcher
//   started replaces itself (execv, before MPI is initialised) with the one
//   compiled for the world size the launcher's environment gives.
//
// - A record for `dist-launch` (runtime/tools/dist-launch.cpp), when it set
//   DIST_LAUNCH_DIR: the file `<dir>/rank-<R>` holds one line, rewritten in
//   place, with the rank's pid and host, its last finished step, a
//   heartbeat (wall clock, milliseconds) that a thread refreshes every
//   200 ms whatever the training does, and its state: running, done, error (the
//   rank failed on its own, e.g. a peer's failure seen in a collective),
//   terminated (SIGTERM, as mpirun ends a job), or replan (stopped at a
//   snapshot because the supervisor asked for a new layout). A rank killed with
//   SIGKILL stays "running" with a heartbeat that ages; one stopped with
//   SIGSTOP too: that is how the supervisor tells a lost rank from the
//   ranks the job's end took with it.
//
//===----------------------------------------------------------------------===//

#include "driver.h"
#include "internal.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dist_rt {
namespace driver {

namespace {

/// The first of `names` set in the environment, as a non-negative integer;
/// -1 when none is.
int64_t environmentNumber(std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (const char *v = std::getenv(name)) {
      char *end = nullptr;
      long long n = std::strtoll(v, &end, 10);
      if (end != v && *end == '\0' && n >= 0)
        return n;
    }
  return -1;
}

/// The ranks this executable's layout was compiled for.
int64_t layoutRanks(const dist_rt_model_desc_t &desc) {
  int64_t n = 1;
  for (uint32_t a = 0; a < desc.num_mesh_axes; ++a)
    n *= desc.mesh_shape[a];
  return n;
}

} // namespace

int64_t launcherWorldSize() {
  int64_t n = environmentNumber({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
  if (n < 0)
    n = environmentNumber({"SLURM_NTASKS"});
  return n;
}

int64_t launcherWorldRank() {
  return environmentNumber(
      {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"});
}

bool switchLayout(char **argv, const dist_rt_model_desc_t &desc,
                  std::string &error) {
  const dist_rt_elastic_desc_t &e = *desc.elastic;
  int64_t world = launcherWorldSize();
  // A process alone runs the one-process layout when the set has one, else
  // its own (which says what it cannot do alone).
  if (world < 0)
    world = 1;
  if (world == layoutRanks(desc) || (world == 1 && e.min_ranks > 1))
    return true;
  if (world < e.min_ranks || world > e.max_ranks) {
    error = "model '" + std::string(desc.name) + "' has layouts for " +
            std::to_string(e.min_ranks) + " to " + std::to_string(e.max_ranks) +
            " ranks (dist-opt --elastic=" + std::to_string(e.min_ranks) + ":" +
            std::to_string(e.max_ranks) + "), not for the " +
            std::to_string(world) + " of this job";
    return false;
  }
  std::string file = e.executables[world - e.min_ranks];
  std::string path = file[0] == '/' ? file : modelDirectory(&desc) + "/" + file;
  ::execv(path.c_str(), argv);
  error = "cannot start " + path + ", the layout of model '" + desc.name +
          "' for " + std::to_string(world) + " ranks: " + std::strerror(errno);
  return false;
}

//===----------------------------------------------------------------------===//
// The supervisor's record
//===----------------------------------------------------------------------===//

namespace {

/// Bytes of the record's line (padded with spaces; ends in a newline).
constexpr size_t kRecordBytes = 192;

int64_t wallMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Record {
  int fd = -1;
  /// This machine's name: dist-launch signals only the pids of its own.
  char host[64] = "";
  std::atomic<int64_t> step{0};
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread beat;
  /// What SIGTERM writes (kept ready: the handler may not format).
  char terminated[kRecordBytes];

  void format(char *out, const char *state) {
    std::memset(out, ' ', kRecordBytes);
    int n = std::snprintf(
        out, kRecordBytes, "pid=%ld step=%lld beat=%lld state=%s host=%s",
        static_cast<long>(::getpid()), static_cast<long long>(step.load()),
        static_cast<long long>(wallMillis()), state, host);
    if (n > 0 && static_cast<size_t>(n) < kRecordBytes)
      out[n] = ' ';
    out[kRecordBytes - 1] = '\n';
  }

  void write(const char *state) {
    char line[kRecordBytes];
    format(line, state);
    std::lock_guard<std::mutex> lock(mutex);
    if (fd >= 0) {
      ssize_t ignored = ::pwrite(fd, line, kRecordBytes, 0);
      (void)ignored;
    }
    format(terminated, "terminated");
  }
};

Record *theRecord = nullptr;

extern "C" void onTerminate(int) {
  if (theRecord && theRecord->fd >= 0) {
    ssize_t ignored =
        ::pwrite(theRecord->fd, theRecord->terminated, kRecordBytes, 0);
    (void)ignored;
  }
  ::_exit(128 + SIGTERM);
}

} // namespace

bool launchRecordStart(std::string &error) {
  const char *dir = std::getenv("DIST_LAUNCH_DIR");
  if (!dir || !*dir || theRecord)
    return true;
  int64_t rank = launcherWorldRank();
  std::string path =
      std::string(dir) + "/rank-" + std::to_string(rank < 0 ? 0 : rank);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error =
        "DIST_LAUNCH_DIR: cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  auto *r = new Record; // Lives to the end of the process (signal handler).
  r->fd = fd;
  ::gethostname(r->host, sizeof r->host - 1);
  r->write("running");
  theRecord = r;
  std::signal(SIGTERM, onTerminate);
  r->beat = std::thread([r] {
    std::unique_lock<std::mutex> lock(r->mutex);
    while (!r->stopping) {
      r->wake.wait_for(lock, std::chrono::milliseconds(200));
      if (r->stopping)
        break;
      lock.unlock();
      r->write("running");
      lock.lock();
    }
  });
  return true;
}

void launchRecordStep(int64_t step) {
  if (theRecord)
    theRecord->step.store(step);
}

void launchRecordFinish(const char *state) {
  Record *r = theRecord;
  if (!r)
    return;
  {
    std::lock_guard<std::mutex> lock(r->mutex);
    r->stopping = true;
  }
  r->wake.notify_all();
  if (r->beat.joinable())
    r->beat.join();
  r->write(state);
}

bool launchReplanRequested() {
  const char *dir = std::getenv("DIST_LAUNCH_DIR");
  if (!dir || !*dir)
    return false;
  struct stat st;
  return ::stat((std::string(dir) + "/replan").c_str(), &st) == 0;
}

} // namespace driver
} // namespace dist_rt
