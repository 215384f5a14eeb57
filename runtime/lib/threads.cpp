//===- threads.cpp - Thread count and persistent thread pool ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements the process-wide thread count and
// dist_rt_parallel_for on a pool of worker threads that are created on
// first use and live until the library is unloaded. A loop is published as
// a Job; workers and the caller claim its chunks with an atomic counter.
// Idle workers poll for a while (spinTime) so that loops a few ms apart
// do not pay for a wake-up, then sleep on a condition variable.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "dist_rt/kernels.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace {

/// 0 until dist_rt_set_num_threads is called.
std::atomic<int32_t> configuredThreads{0};

int32_t hardwareThreads() {
  unsigned count = std::thread::hardware_concurrency();
  if (count == 0)
    return 1;
  return count > 4096 ? 4096 : static_cast<int32_t>(count);
}

/// How long an idle worker, or a caller waiting for its loop to finish,
/// polls with the CPU's pause alone before it yields between polls.
constexpr std::chrono::microseconds kPauseTime{50};
/// How long it polls in all before it blocks, by default.
constexpr int64_t kDefaultSpinMicros = 2000;

/// How long an idle worker (or a waiting caller) polls before it blocks:
/// DIST_RT_SPIN_US microseconds, 2000 by default; 0 blocks at once. A
/// worker that blocked took long to wake on this project's 2-core VM (a
/// halted virtual CPU waits for the hypervisor): DenseNet-121 at 2 threads
/// ran 60 ms with 50 us of polling, 52 with 1 ms, 44 with 10 ms (alternated
/// runs, slow minutes); in faster ones 42.5-46.4 ms with 50 us, 38.6-41.5
/// with 2 ms, 38.3-39.5 with 10 ms, the next loop mostly coming within a few
/// ms; polling past kPauseTime yields between polls, so that threads of other
/// processes sharing the cores (ranks oversubscribed on them) run meanwhile.
std::chrono::microseconds spinTime() {
  static const std::chrono::microseconds time = [] {
    const char *text = std::getenv("DIST_RT_SPIN_US");
    if (!text || !*text)
      return std::chrono::microseconds{kDefaultSpinMicros};
    char *end = nullptr;
    errno = 0;
    long long value = std::strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0' || value < 0 || value > 10000000) {
      std::fprintf(
          stderr,
          "dist_rt: warning: DIST_RT_SPIN_US=%s ignored (microseconds, "
          "0 to 10000000)\n",
          text);
      return std::chrono::microseconds{kDefaultSpinMicros};
    }
    return std::chrono::microseconds{value};
  }();
  return time;
}

/// Tells the CPU that this is a spin loop.
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Polls `done` for up to spinTime(): with pause for kPauseTime, then
/// yielding the CPU between polls. Returns true if it became true.
template <typename Predicate>
bool spinUntil(Predicate done) {
  auto start = std::chrono::steady_clock::now();
  auto pauseEnd = start + std::min(kPauseTime, spinTime());
  auto deadline = start + spinTime();
  while (true) {
    for (int i = 0; i < 64; ++i) {
      if (done())
        return true;
      cpuRelax();
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      return done();
    if (now >= pauseEnd)
      std::this_thread::yield();
  }
}

/// True on pool workers and on a caller while it runs chunks of its own
/// loop; nested loops then run serially.
thread_local bool insideParallelRegion = false;

/// Where dist_rt_index_error reports on this thread (see RunErrorScope);
/// workers take their job's caller's.
thread_local dist_rt::RunErrors *currentRunErrors = nullptr;

/// One parallel loop. Lives on the caller's stack; the caller does not
/// return before every worker that joined it has left.
struct Job {
  dist_rt_parallel_fn_t fn;
  void *ctx;
  /// The caller's RunErrors (null outside a run).
  dist_rt::RunErrors *errors;
  int64_t n;
  int64_t numChunks;
  /// Workers that may join (numChunks - 1; the caller is the other one).
  int64_t maxWorkers;
  /// Next chunk to claim. Chunk 0 is reserved for the caller.
  std::atomic<int64_t> nextChunk{1};
  /// Chunks finished.
  std::atomic<int64_t> doneChunks{0};
  /// Workers currently inside the job. Incremented under ThreadPool::mutex
  /// (while the job is published); decremented without it, so that the
  /// caller can spin on it instead of sleeping until the last worker has
  /// taken the lock.
  std::atomic<int64_t> workers{0};

  /// Runs chunk `chunk`. Returns true if it was the last one to finish.
  bool runChunk(int64_t chunk) {
    int64_t begin = 0, end = 0;
    dist_rt::parallelChunkRange(n, numChunks, chunk, &begin, &end);
    fn(ctx, begin, end);
    return doneChunks.fetch_add(1, std::memory_order_acq_rel) + 1 == numChunks;
  }

  /// Claims and runs chunks until none are left. Returns true if this call
  /// finished the last chunk.
  bool runChunks() {
    bool finishedLast = false;
    while (true) {
      int64_t chunk = nextChunk.fetch_add(1, std::memory_order_relaxed);
      if (chunk >= numChunks)
        return finishedLast;
      finishedLast |= runChunk(chunk);
    }
  }
};

/// The persistent pool. Workers are started on demand, up to one less than
/// the largest thread count asked for.
class ThreadPool {
public:
  ~ThreadPool();

  /// Runs `job` on the pool and the calling thread. Returns false, without
  /// running anything, if the pool is busy with another caller's job.
  bool run(Job &job);

private:
  void workerMain(uint64_t seenGeneration);

  /// Held by the caller of run() for the whole loop.
  std::mutex dispatchMutex;
  /// Guards everything below (generation is also read without it).
  std::mutex mutex;
  /// Wakes sleeping workers when a job is published or on shutdown.
  std::condition_variable workAvailable;
  /// Wakes a caller waiting for its job to drain.
  std::condition_variable jobDrained;
  /// Incremented for every published job.
  std::atomic<uint64_t> generation{0};
  Job *current = nullptr;
  bool stopping = false;
  std::vector<std::thread> threads;
};

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
    generation.fetch_add(1, std::memory_order_release);
  }
  workAvailable.notify_all();
  for (std::thread &thread : threads)
    thread.join();
}

void ThreadPool::workerMain(uint64_t seenGeneration) {
  insideParallelRegion = true;
  while (true) {
    auto published = [&] {
      return generation.load(std::memory_order_acquire) != seenGeneration;
    };
    bool spun = spinUntil(published);
    std::unique_lock<std::mutex> lock(mutex);
    if (!spun)
      workAvailable.wait(lock, [&] { return stopping || published(); });
    if (stopping)
      return;
    seenGeneration = generation.load(std::memory_order_relaxed);
    Job *job = current;
    if (!job || job->workers.load(std::memory_order_relaxed) >= job->maxWorkers)
      continue;
    job->workers.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();

    currentRunErrors = job->errors;
    job->runChunks();
    currentRunErrors = nullptr;

    // The caller may return (and the job die) as soon as this reaches 0;
    // only the pool is touched after it. The caller checks `workers` under
    // the mutex before it sleeps, so taking the mutex here before notifying
    // cannot lose the wake-up.
    if (job->workers.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      lock.lock();
      jobDrained.notify_all();
    }
  }
}

bool ThreadPool::run(Job &job) {
  std::unique_lock<std::mutex> dispatch(dispatchMutex, std::try_to_lock);
  if (!dispatch.owns_lock())
    return false;

  {
    std::lock_guard<std::mutex> lock(mutex);
    if (stopping)
      return false;
    // Start missing workers. Each begins with the current generation so
    // that it sees the job published below.
    auto wanted = static_cast<size_t>(job.maxWorkers);
    uint64_t startGeneration = generation.load(std::memory_order_relaxed);
    while (threads.size() < wanted) {
#if DIST_RT_HAS_EXCEPTIONS
      try {
        threads.emplace_back(&ThreadPool::workerMain, this, startGeneration);
      } catch (...) {
        // Could not start a thread: run with the workers there are.
        break;
      }
#else
      threads.emplace_back(&ThreadPool::workerMain, this, startGeneration);
#endif
    }
    current = &job;
    generation.fetch_add(1, std::memory_order_release);
  }
  workAvailable.notify_all();

  insideParallelRegion = true;
  job.runChunk(0);
  job.runChunks();
  insideParallelRegion = false;

  // No worker can join once `current` is cleared; wait for those inside.
  // Spinning first matters: a worker leaves a moment after its last chunk,
  // and a caller that then sleeps on the condition variable pays a futex
  // wake-up per loop (perf showed mutex and futex calls around every loop).
  // On the benchmark CNN at 2 threads, four interleaved pairs: medians
  // 0.184-0.228 ms against 0.190-0.239 with the sleep, p90 0.20-0.29
  // against 0.23-0.31.
  {
    std::lock_guard<std::mutex> lock(mutex);
    current = nullptr;
  }
  auto drained = [&] {
    return job.doneChunks.load(std::memory_order_acquire) == job.numChunks &&
           job.workers.load(std::memory_order_acquire) == 0;
  };
  if (!spinUntil(drained)) {
    std::unique_lock<std::mutex> lock(mutex);
    jobDrained.wait(lock, drained);
  }
  return true;
}

ThreadPool &threadPool() {
  static ThreadPool pool;
  return pool;
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" void dist_rt_set_num_threads(int32_t n) {
  int32_t count = n > 0 ? n : hardwareThreads();
  configuredThreads.store(count, std::memory_order_relaxed);
}

extern "C" int32_t dist_rt_get_num_threads(void) {
  int32_t count = configuredThreads.load(std::memory_order_relaxed);
  return count > 0 ? count : hardwareThreads();
}

int64_t dist_rt::parallelThreads() {
  return insideParallelRegion ? 1 : dist_rt_get_num_threads();
}

extern "C" void dist_rt_parallel_for(int64_t n, dist_rt_parallel_fn_t fn,
                                     void *ctx) {
  if (n <= 0 || !fn)
    return;
  int64_t numChunks = std::min<int64_t>(n, dist_rt_get_num_threads());
  if (numChunks <= 1 || insideParallelRegion) {
    fn(ctx, 0, n);
    return;
  }
  Job job;
  job.fn = fn;
  job.ctx = ctx;
  job.errors = currentRunErrors;
  job.n = n;
  job.numChunks = numChunks;
  job.maxWorkers = numChunks - 1;
  if (!threadPool().run(job))
    fn(ctx, 0, n);
}

//===----------------------------------------------------------------------===//
// Errors met by generated code
//===----------------------------------------------------------------------===//

dist_rt::RunErrorScope::RunErrorScope(RunErrors &errors)
    : previous(currentRunErrors) {
  currentRunErrors = &errors;
}

dist_rt::RunErrorScope::~RunErrorScope() { currentRunErrors = previous; }

namespace {
/// Fails the run going on with `text` (the first error wins), or prints it
/// outside a run.
void reportRunError(const char *text);

/// Reports the error `format` (printf, its first argument the node's name)
/// of the ONNX node whose NUL-terminated name generated code passes as the
/// address `node`. Only a run's first error is kept: later ones (a tensor of
/// bad indices reports each) return at once.
template <typename... Args>
void reportNodeError(int64_t node, const char *format, Args... args) {
  dist_rt::RunErrors *errors = currentRunErrors;
  if (errors && errors->failed.load(std::memory_order_acquire))
    return;
  const char *name =
      reinterpret_cast<const char *>(static_cast<intptr_t>(node));
  char where[256];
  dist_rt::escapeForMessage(name ? name : "?", name ? std::strlen(name) : 1,
                            where, sizeof(where));
  char text[512];
  std::snprintf(text, sizeof(text), format, where, args...);
  reportRunError(text);
}
} // namespace

extern "C" void dist_rt_index_error(int64_t index, int64_t size, int64_t node) {
  reportNodeError(node,
                  "node '%s': index %" PRId64
                  " is out of range for an axis of %" PRId64 " (valid: %" PRId64
                  " to %" PRId64 ")",
                  index, size, -size, size - 1);
}

extern "C" void dist_rt_shape_error(int64_t a, int64_t b, int64_t axis,
                                    int64_t node) {
  reportNodeError(node,
                  "node '%s': its operands have sizes %" PRId64 " and %" PRId64
                  " on output axis %" PRId64
                  " (sizes unknown at compile time must be equal; to "
                  "broadcast a size 1, give the input's shape with "
                  "--input-shape)",
                  a, b, axis);
}

namespace {
/// `name` (a NUL-terminated string's address from generated code) escaped
/// for a message.
std::string escapedName(int64_t name) {
  const char *text =
      reinterpret_cast<const char *>(static_cast<intptr_t>(name));
  char out[256];
  dist_rt::escapeForMessage(text ? text : "?", text ? std::strlen(text) : 1,
                            out, sizeof(out));
  return out;
}
} // namespace

extern "C" void dist_rt_value_error(int64_t got, int64_t expected,
                                    int64_t element, int64_t input,
                                    int64_t node) {
  std::string in = escapedName(input);
  reportNodeError(node,
                  "node '%s': input '%s' holds %" PRId64 " at element %" PRId64
                  ", but the output shape the model declares needs %" PRId64,
                  in.c_str(), got, element, expected);
}

extern "C" void dist_rt_axes_error(int64_t input, int64_t node) {
  std::string in = escapedName(input);
  reportNodeError(node,
                  "node '%s': the axes in input '%s' repeat an axis, lie "
                  "outside the rank, or do not give the output shape the "
                  "model declares",
                  in.c_str());
}

extern "C" void dist_rt_extent_error(int64_t axis, int64_t got,
                                     int64_t expected, int64_t input,
                                     int64_t node) {
  std::string in = escapedName(input);
  reportNodeError(node,
                  "node '%s': input '%s' gives output axis %" PRId64
                  " an extent of %" PRId64
                  ", but the output shape the model declares has %" PRId64,
                  in.c_str(), axis, got, expected);
}

extern "C" void dist_rt_unsupported_error(int64_t what, int64_t node) {
  std::string text = escapedName(what);
  reportNodeError(node, "node '%s': %s is not supported by codegen",
                  text.c_str());
}

extern "C" void dist_rt_input_error(int64_t what, int64_t input,
                                    int64_t node) {
  std::string in = escapedName(input), text = escapedName(what);
  reportNodeError(node, "node '%s': input '%s' %s", in.c_str(), text.c_str());
}

namespace {
void reportRunError(const char *text) {
  dist_rt::RunErrors *errors = currentRunErrors;
  if (!errors) {
    std::fprintf(stderr, "error: %s\n", text);
    return;
  }
  std::lock_guard<std::mutex> lock(errors->mutex);
  if (errors->failed.load(std::memory_order_relaxed))
    return;
  errors->message = text;
  errors->failed.store(true, std::memory_order_release);
}
} // namespace

void dist_rt::failRun(const char *text) { reportRunError(text); }

bool dist_rt::runFailed() {
  dist_rt::RunErrors *errors = currentRunErrors;
  return errors && errors->failed.load(std::memory_order_acquire);
}
