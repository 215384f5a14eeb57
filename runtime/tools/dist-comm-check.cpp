//===- dist-comm-check.cpp - Check the runtime's collectives --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-comm-check [--backend mpi|nccl] [--mesh AxB...] [--timeout S]
//                 [--die-rank R] [--hang-rank R]
//
// A test program for the communicators of dist_rt/comm.h, meant to be run
// under mpirun (or alone, as a 1-rank world). Every rank runs every
// collective (all_reduce with each reduction and in place, all_gather,
// reduce_scatter, all_to_all, broadcast from each root, a send/recv ring,
// barrier) on float32 and int64 data derived from its rank, so that the
// expected results can be computed locally, first on the world and then on
// each communicator of the mesh split (--mesh, default one axis over all
// ranks), and compares the results exactly. Each rank then prints
// "rank R/N: all collectives ok" on stdout. A failure is reported as one
// "rank R: error: ..." line on stderr and ends the whole job with exit
// code 1 (dist_rt_world_abort); a bad command line is one
// "dist-comm-check: error: ..." line and exit code 1.
//
// Failure injection, right before the first all_reduce: --die-rank R makes
// rank R exit with code 3 (a dead rank); --hang-rank R makes rank R sleep
// forever (a hung rank), so the others fail once the --timeout deadline of
// each collective (default 300 s) passes.
//
// With --backend nccl the buffers are CUDA managed memory (cudaMallocManaged
// from the CUDA runtime, loaded with dlopen), which the NCCL backend reads
// and writes on the GPU and the checks read on the host; without a GPU the
// world cannot be created and the program says why.
//
// Otherwise the program uses only the runtime's public C API.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/comm.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>

namespace {

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

constexpr const char *kUsage =
    "usage: dist-comm-check [--backend mpi|nccl] [--mesh AxB...]\n"
    "                       [--timeout S] [--die-rank R] [--hang-rank R]\n"
    "\n"
    "Runs every collective of the dist-opt runtime on the world and on each\n"
    "axis of a device mesh and checks the results. Run it under mpirun.\n"
    "\n"
    "  --backend B    mpi (default under mpirun) or nccl (CUDA managed\n"
    "                 buffers, one GPU per rank)\n"
    "  --mesh AxB...  mesh shape; its product must be the number of ranks\n"
    "  --rank0-mesh AxB...  rank 0 asks for this mesh instead (the ranks\n"
    "                 disagree: every rank must fail)\n"
    "                 (default: one axis over all ranks)\n"
    "  --timeout S    deadline of each collective in seconds (default 300,\n"
    "                 0 for none)\n"
    "  --die-rank R   rank R exits with code 3 before the first all_reduce\n"
    "  --hang-rank R  rank R sleeps forever before the first all_reduce\n";

struct Options {
  /// DIST_RT_COMM_AUTO, _MPI or _NCCL.
  int32_t backend = DIST_RT_COMM_AUTO;
  std::vector<int64_t> mesh;
  /// Rank 0's mesh when given (the others use `mesh`): ranks that disagree.
  std::vector<int64_t> rank0Mesh;
  double timeout = 300;
  int64_t dieRank = -1;
  int64_t hangRank = -1;
};

/// Prints a command-line error.
void reportUsageError(const std::string &message) {
  std::fprintf(stderr, "dist-comm-check: error: %s\n", message.c_str());
}

/// Parses a non-negative decimal integer of at most 9 digits.
bool parseCount(const std::string &text, int64_t &out) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::strtoll(text.c_str(), nullptr, 10);
  return true;
}

/// Parses "2x2" into extents of at least 1.
bool parseMesh(const std::string &text, std::vector<int64_t> &out) {
  out.clear();
  size_t start = 0;
  for (;;) {
    size_t end = text.find('x', start);
    int64_t extent = 0;
    if (!parseCount(text.substr(start, end - start), extent) || extent < 1)
      return false;
    out.push_back(extent);
    if (end == std::string::npos)
      return true;
    start = end + 1;
  }
}

/// Parses argv. Returns false after reporting an error; sets `showHelp`.
bool parseCommandLine(int argc, char **argv, Options &options, bool &showHelp) {
  showHelp = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string name = arg, value;
    bool hasInlineValue = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasInlineValue = true;
    }
    bool takesValue = name == "--backend" || name == "--mesh" ||
                      name == "--rank0-mesh" || name == "--timeout" ||
                      name == "--die-rank" || name == "--hang-rank";
    if (name == "--help" || name == "-h") {
      showHelp = true;
      continue;
    }
    if (!takesValue) {
      reportUsageError((arg.empty() || arg[0] != '-' ? "unexpected argument '"
                                                     : "unknown option '") +
                       arg + "' (see --help)");
      return false;
    }
    if (!hasInlineValue) {
      if (i + 1 >= argc) {
        reportUsageError("option '" + name + "' needs a value");
        return false;
      }
      value = argv[++i];
    }
    if (name == "--backend") {
      if (value != "mpi" && value != "nccl") {
        reportUsageError("invalid --backend '" + value +
                         "' (expected mpi or nccl)");
        return false;
      }
      options.backend = value == "mpi" ? DIST_RT_COMM_MPI : DIST_RT_COMM_NCCL;
    } else if (name == "--mesh" || name == "--rank0-mesh") {
      if (!parseMesh(value,
                     name == "--mesh" ? options.mesh : options.rank0Mesh)) {
        reportUsageError("invalid --mesh '" + value +
                         "' (expected extents of at least 1 joined by 'x', "
                         "like 2x2)");
        return false;
      }
    } else if (name == "--timeout") {
      char *end = nullptr;
      double seconds = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(seconds) ||
          seconds < 0) {
        reportUsageError("invalid --timeout '" + value +
                         "' (expected a number of seconds, at least 0)");
        return false;
      }
      options.timeout = seconds;
    } else {
      int64_t rank = 0;
      if (!parseCount(value, rank)) {
        reportUsageError("invalid " + name + " '" + value +
                         "' (expected a rank)");
        return false;
      }
      (name == "--die-rank" ? options.dieRank : options.hangRank) = rank;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Failures
//===----------------------------------------------------------------------===//

/// This process's rank in the world, for messages.
int32_t worldRank = 0;

/// Reports a failure on this rank and ends the whole job.
[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "rank %d: error: %s\n", static_cast<int>(worldRank),
               message.c_str());
  dist_rt_world_abort(1);
  std::abort(); // Not reached.
}

/// Fails with the message of `status` (without its "rank R: " prefix,
/// which fail adds again), followed by `context`.
void check(dist_rt_status_t status, const std::string &context) {
  if (!status)
    return;
  std::string message = dist_rt_status_message(status);
  dist_rt_status_free(status);
  std::string prefix = "rank " + std::to_string(worldRank) + ": ";
  if (message.compare(0, prefix.size(), prefix) == 0)
    message.erase(0, prefix.size());
  fail(message + " (" + context + ")");
}

//===----------------------------------------------------------------------===//
// Failure injection
//===----------------------------------------------------------------------===//

Options options;
bool injected = false;

/// Runs before every all_reduce; acts on the first one only.
void beforeAllReduce() {
  if (injected)
    return;
  injected = true;
  if (worldRank == options.dieRank) {
    std::fprintf(stderr,
                 "rank %d: exiting with code 3 before the first all_reduce "
                 "(--die-rank)\n",
                 static_cast<int>(worldRank));
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(3);
  }
  if (worldRank == options.hangRank) {
    std::fprintf(stderr,
                 "rank %d: hanging before the first all_reduce "
                 "(--hang-rank)\n",
                 static_cast<int>(worldRank));
    std::fflush(stderr);
    for (;;)
      std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

/// cudaMallocManaged and cudaFree, set for --backend nccl.
using ManagedAllocFn = int (*)(void **, size_t, unsigned);
using ManagedFreeFn = int (*)(void *);
ManagedAllocFn managedAlloc = nullptr;
ManagedFreeFn managedFree = nullptr;

/// Loads the CUDA runtime's managed allocation; false when it cannot.
bool loadManagedMemory() {
  for (const char *name :
       {"libcudart.so.13", "libcudart.so.12", "libcudart.so"})
    if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      managedAlloc =
          reinterpret_cast<ManagedAllocFn>(dlsym(handle, "cudaMallocManaged"));
      managedFree = reinterpret_cast<ManagedFreeFn>(dlsym(handle, "cudaFree"));
      return managedAlloc && managedFree;
    }
  return false;
}

/// Host memory, or CUDA managed memory once loadManagedMemory succeeded.
template <typename T>
struct CommAllocator {
  using value_type = T;
  CommAllocator() = default;
  template <typename U>
  CommAllocator(const CommAllocator<U> &) {}
  T *allocate(size_t n) {
    void *p = nullptr;
    if (managedAlloc) {
      if (managedAlloc(&p, std::max<size_t>(n, 1) * sizeof(T),
                       /*cudaMemAttachGlobal=*/1) != 0)
        throw std::bad_alloc();
    } else if (!(p = std::malloc(std::max<size_t>(n, 1) * sizeof(T)))) {
      throw std::bad_alloc();
    }
    return static_cast<T *>(p);
  }
  void deallocate(T *p, size_t) {
    if (managedFree)
      managedFree(p);
    else
      std::free(p);
  }
  template <typename U>
  bool operator==(const CommAllocator<U> &) const {
    return true;
  }
  template <typename U>
  bool operator!=(const CommAllocator<U> &) const {
    return false;
  }
};

/// The buffers handed to the collectives.
template <typename T>
using Buffer = std::vector<T, CommAllocator<T>>;

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

template <typename T>
struct DType;
template <>
struct DType<float> {
  static constexpr uint32_t code = DIST_RT_DTYPE_FLOAT;
  static constexpr const char *name = "float32";
  /// Added to values that are only moved, never reduced.
  static constexpr float offset = 0;
};
template <>
struct DType<int64_t> {
  static constexpr uint32_t code = DIST_RT_DTYPE_INT64;
  static constexpr const char *name = "int64";
  static constexpr int64_t offset = int64_t(1) << 40;
};

/// Compares `got` with `expected` element by element.
template <typename T>
void expectEqual(const Buffer<T> &got, const Buffer<T> &expected,
                 const std::string &context, bool approximate = false) {
  for (size_t i = 0; i < expected.size(); ++i)
    if (approximate ? !(std::fabs(static_cast<double>(got[i]) -
                                  static_cast<double>(expected[i])) <=
                        1e-6 * std::fabs(static_cast<double>(expected[i])))
                    : got[i] != expected[i])
      fail(context + ": element " + std::to_string(i) + " is " +
           std::to_string(got[i]) + ", expected " +
           std::to_string(expected[i]));
}

/// Whether a result of `op` is NCCL's average, which is exact only up to
/// rounding.
bool averagedByNccl(dist_rt_reduce_op_t op) {
  return op == DIST_RT_REDUCE_AVG && options.backend == DIST_RT_COMM_NCCL;
}

/// Runs and checks every collective on `comm` with element type T.
template <typename T>
void checkCollectives(dist_rt_comm_t comm, const std::string &label) {
  const uint32_t dtype = DType<T>::code;
  const std::string where = label + ", " + DType<T>::name;
  const int64_t r = dist_rt_comm_rank(comm);
  const int64_t n = dist_rt_comm_size(comm);
  const T big = DType<T>::offset;
  const int64_t count = 5;
  const size_t c = static_cast<size_t>(count);
  const size_t nc = static_cast<size_t>(n) * c;

  // all_reduce: each reduction, out of place, on values v(p, i).
  struct Case {
    dist_rt_reduce_op_t op;
    const char *name;
  };
  const Case cases[] = {{DIST_RT_REDUCE_SUM, "sum"},
                        {DIST_RT_REDUCE_MAX, "max"},
                        {DIST_RT_REDUCE_MIN, "min"},
                        {DIST_RT_REDUCE_PROD, "prod"},
                        {DIST_RT_REDUCE_AVG, "avg"}};
  // 5 elements; 1 (fewer than the ranks: empty ring blocks); and a count
  // past the ring threshold that the ranks do not divide.
  for (const int64_t length : {count, int64_t(1), int64_t(100003)})
    for (const Case &reduction : cases) {
      const size_t c = static_cast<size_t>(length);
      auto value = [&](int64_t p, int64_t i) -> T {
        switch (reduction.op) {
        case DIST_RT_REDUCE_SUM:
        case DIST_RT_REDUCE_AVG:
          return T(p + i + 1);
        case DIST_RT_REDUCE_MAX:
        case DIST_RT_REDUCE_MIN:
          return T((p * 3 + i) % (n + 1) - i);
        default:
          return T((p + i) % 2 + 1);
        }
      };
      Buffer<T> send(c), recv(c, T(-99)), expected(c);
      for (int64_t i = 0; i < length; ++i) {
        send[i] = value(r, i);
        T e = value(0, i);
        for (int64_t p = 1; p < n; ++p) {
          T v = value(p, i);
          switch (reduction.op) {
          case DIST_RT_REDUCE_SUM:
          case DIST_RT_REDUCE_AVG:
            e += v;
            break;
          case DIST_RT_REDUCE_MAX:
            e = v > e ? v : e;
            break;
          case DIST_RT_REDUCE_MIN:
            e = v < e ? v : e;
            break;
          default:
            e *= v;
            break;
          }
        }
        expected[i] = reduction.op == DIST_RT_REDUCE_AVG ? e / T(n) : e;
      }
      std::string context = where + ", all_reduce " + reduction.name + " of " +
                            std::to_string(length);
      beforeAllReduce();
      check(dist_rt_all_reduce(comm, send.data(), recv.data(), length, dtype,
                               reduction.op),
            context);
      // NCCL's average multiplies by 1/n before summing (see comm.h).
      expectEqual(recv, expected, context, averagedByNccl(reduction.op));
    }

  // all_reduce in place, on a larger buffer.
  {
    const int64_t large = 100000;
    Buffer<T> buf(static_cast<size_t>(large)), expected(buf.size());
    for (int64_t i = 0; i < large; ++i) {
      buf[i] = T(r + 1 + i % 1000);
      expected[i] = T(n * (n + 1) / 2 + n * (i % 1000));
    }
    std::string context = where + ", all_reduce sum in place";
    check(dist_rt_all_reduce(comm, buf.data(), buf.data(), large, dtype,
                             DIST_RT_REDUCE_SUM),
          context);
    expectEqual(buf, expected, context);
  }

  // all_gather: rank p contributes p * 100 + i.
  {
    Buffer<T> send(c), recv(nc, T(-99)), expected(nc);
    for (int64_t i = 0; i < count; ++i)
      send[i] = big + T(r * 100 + i);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t i = 0; i < count; ++i)
        expected[p * count + i] = big + T(p * 100 + i);
    std::string context = where + ", all_gather";
    check(dist_rt_all_gather(comm, send.data(), recv.data(), count, dtype),
          context);
    expectEqual(recv, expected, context);
  }

  // reduce_scatter, sum and average: block b of rank p holds
  // p * 1000 + b * 10 + i.
  for (const Case &reduction : {cases[0], cases[4]}) {
    Buffer<T> send(nc), recv(c, T(-99)), expected(c);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < count; ++i)
        send[b * count + i] = T(r * 1000 + b * 10 + i);
    for (int64_t i = 0; i < count; ++i) {
      T e = 0;
      for (int64_t p = 0; p < n; ++p)
        e += T(p * 1000 + r * 10 + i);
      expected[i] = reduction.op == DIST_RT_REDUCE_AVG ? e / T(n) : e;
    }
    std::string context = where + ", reduce_scatter " + reduction.name;
    check(dist_rt_reduce_scatter(comm, send.data(), recv.data(), count, dtype,
                                 reduction.op),
          context);
    expectEqual(recv, expected, context, averagedByNccl(reduction.op));
  }

  // all_to_all: block b of rank p holds p * 100 + b * 10 + i.
  {
    Buffer<T> send(nc), recv(nc, T(-99)), expected(nc);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < count; ++i) {
        send[b * count + i] = big + T(r * 100 + b * 10 + i);
        expected[b * count + i] = big + T(b * 100 + r * 10 + i);
      }
    std::string context = where + ", all_to_all";
    check(dist_rt_all_to_all(comm, send.data(), recv.data(), count, dtype),
          context);
    expectEqual(recv, expected, context);
  }

  // broadcast from every root.
  for (int64_t root = 0; root < n; ++root) {
    Buffer<T> buf(c), expected(c);
    for (int64_t i = 0; i < count; ++i) {
      expected[i] = big + T(root * 7 + i + 1);
      buf[i] = r == root ? expected[i] : T(-99);
    }
    std::string context = where + ", broadcast from " + std::to_string(root);
    check(dist_rt_broadcast(comm, buf.data(), count, dtype,
                            static_cast<int32_t>(root)),
          context);
    expectEqual(buf, expected, context);
  }

  // A ring of send/recv: even ranks send first, odd ranks receive first
  // (not with one rank under NCCL, which cannot send to itself).
  if (n > 1 || options.backend != DIST_RT_COMM_NCCL) {
    const int32_t tag = 5;
    int32_t next = static_cast<int32_t>((r + 1) % n);
    int32_t prev = static_cast<int32_t>((r + n - 1) % n);
    Buffer<T> send(c), recv(c, T(-99)), expected(c);
    for (int64_t i = 0; i < count; ++i) {
      send[i] = big + T(r * 10 + i);
      expected[i] = big + T(prev * 10 + i);
    }
    std::string context = where + ", send/recv ring";
    if (r % 2 == 0) {
      check(dist_rt_send(comm, send.data(), count, dtype, next, tag), context);
      check(dist_rt_recv(comm, recv.data(), count, dtype, prev, tag), context);
    } else {
      check(dist_rt_recv(comm, recv.data(), count, dtype, prev, tag), context);
      check(dist_rt_send(comm, send.data(), count, dtype, next, tag), context);
    }
    expectEqual(recv, expected, context);
  }

  check(dist_rt_barrier(comm), where + ", barrier");
}

} // namespace

int main(int argc, char **argv) {
  bool showHelp = false;
  if (!parseCommandLine(argc, argv, options, showHelp))
    return 1;
  if (showHelp) {
    std::fputs(kUsage, stdout);
    return 0;
  }

  dist_rt_world_options_t worldOptions;
  dist_rt_world_options_initialize(&worldOptions);
  worldOptions.timeout_s = options.timeout;
  worldOptions.backend = options.backend;
  dist_rt_comm_t world = nullptr;
  if (dist_rt_status_t status =
          dist_rt_world_init(&argc, &argv, &worldOptions, &world)) {
    reportUsageError(dist_rt_status_message(status));
    dist_rt_status_free(status);
    return 1;
  }
  worldRank = dist_rt_comm_rank(world);
  int32_t size = dist_rt_comm_size(world);
  if (options.backend == DIST_RT_COMM_NCCL && !loadManagedMemory())
    fail("--backend nccl: cannot load cudaMallocManaged from the CUDA "
         "runtime");
  for (int64_t rank : {options.dieRank, options.hangRank})
    if (rank >= size)
      fail("rank " + std::to_string(rank) + " is out of range (the world has " +
           std::to_string(size) + (size == 1 ? " rank)" : " ranks)"));

  if (options.mesh.empty())
    options.mesh.push_back(size);
  if (worldRank == 0 && !options.rank0Mesh.empty())
    options.mesh = options.rank0Mesh;
  int32_t numAxes = static_cast<int32_t>(options.mesh.size());
  std::vector<dist_rt_comm_t> axes(options.mesh.size(), nullptr);
  check(
      dist_rt_comm_split_mesh(world, options.mesh.data(), numAxes, axes.data()),
      "mesh split");

  try {
    checkCollectives<float>(world, "world");
    checkCollectives<int64_t>(world, "world");
    for (int32_t a = 0; a < numAxes; ++a) {
      std::string label = "mesh axis " + std::to_string(a);
      checkCollectives<float>(axes[a], label);
      checkCollectives<int64_t>(axes[a], label);
    }
  } catch (const std::bad_alloc &) {
    fail(options.backend == DIST_RT_COMM_NCCL
             ? "out of memory (cudaMallocManaged failed)"
             : "out of memory");
  }

  std::printf("rank %d/%d: all collectives ok\n", static_cast<int>(worldRank),
              static_cast<int>(size));
  std::fflush(stdout);
  for (dist_rt_comm_t axis : axes)
    dist_rt_comm_release(axis);
  dist_rt_comm_release(world);
  check(dist_rt_world_finalize(), "finalize");
  return 0;
}
