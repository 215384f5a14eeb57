//===- comm_mpi.cpp - MPI backend of the communicators ----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The MPI implementation of CommBackend (comm_backend.h). Every operation is
// started as a non-blocking MPI call (MPI_Iallreduce, MPI_Iallgather,
// MPI_Ireduce_scatter_block, MPI_Ialltoall, MPI_Ibcast, MPI_Isend/Irecv,
// MPI_Ibarrier) and polled with MPI_Test, yielding and then sleeping briefly
// between polls, until it completes or the deadline passes. Communicators
// use MPI_ERRORS_RETURN so MPI errors become statuses. A timeout or an MPI
// error leaves the operation in flight: the backend is then marked failed,
// never frees its MPI communicator, and finalizeMpi refuses to call
// MPI_Finalize (which could wait forever).
//
// all_reduce on two ranks, or on at least kRingMinBytes, is not
// MPI_Iallreduce but a ring (reduce-scatter, then all-gather) of
// MPI_Isend/Irecv pairs on a duplicate of the communicator, combining
// blocks here. Measured with Open MPI 4.1 (vader, CMA) on this project's
// 2-core machine, 8.5 MB of floats over 2 ranks (one data-parallel
// gradient step of the GPT benchmark): MPI_Iallreduce (libnbc) 5.3-5.9 ms,
// blocking MPI_Allreduce 1.9-2.6 ms, the ring 2.1-2.9 ms; at 3 ranks
// oversubscribed the ring 6.0 ms against MPI_Allreduce's 8.0 ms; from 4K
// to 256K floats on 2 ranks the ring took half of MPI_Iallreduce's time.
// The blocking call cannot be bounded by a deadline, the ring can.
// Every block is combined on one rank and then copied, so all ranks end
// with identical bits.
//
// MPI counts are ints: all_reduce, broadcast, send and recv split larger
// counts into several operations; the block collectives reject them.
//
// MPI's library is not linked: it is loaded with dlopen when a program
// first asks for an MPI world (libmpi.so.40 for Open MPI, libmpi.so.12
// for MPICH, or the file DIST_RT_LIBMPI names), so that the runtime and
// every artifact load and run where no MPI is installed (a GPU machine, a
// serving container) as long as they use none. mpi.h gives the types;
// Open MPI's predefined handles (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM...)
// are addresses of its globals, looked up with dlsym as well. A program
// that brought MPI itself (linked or loaded) has that copy used.
//
//===----------------------------------------------------------------------===//

#include "comm_backend.h"
#include "library.h"

// The runtime links only MPI's C library (MPI::MPI_C): keep mpi.h from
// pulling in the deprecated C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <dlfcn.h>

#include <limits>
#include <memory>

#include <atomic>
#include <cinttypes>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

using dist_rt::makeStatus;
using dist_rt::comm::CommBackend;
using dist_rt::comm::Deadline;

/// Most elements one MPI call moves (per rank for the block collectives).
/// Tests may compile with a smaller value to exercise the splitting.
#ifndef DIST_RT_COMM_MAX_CHUNK
#define DIST_RT_COMM_MAX_CHUNK INT_MAX
#endif

namespace {

/// The MPI entry points and predefined handles the backend uses, from
/// MPI's library loaded with dlopen (see the file comment).
struct MpiApi {
  decltype(&MPI_Abort) Abort = nullptr;
  decltype(&MPI_Comm_dup) Comm_dup = nullptr;
  decltype(&MPI_Comm_free) Comm_free = nullptr;
  decltype(&MPI_Comm_rank) Comm_rank = nullptr;
  decltype(&MPI_Comm_set_errhandler) Comm_set_errhandler = nullptr;
  decltype(&MPI_Comm_size) Comm_size = nullptr;
  decltype(&MPI_Comm_split) Comm_split = nullptr;
  decltype(&MPI_Error_class) Error_class = nullptr;
  decltype(&MPI_Error_string) Error_string = nullptr;
  decltype(&MPI_Finalize) Finalize = nullptr;
  decltype(&MPI_Finalized) Finalized = nullptr;
  decltype(&MPI_Get_count) Get_count = nullptr;
  decltype(&MPI_Iallgather) Iallgather = nullptr;
  decltype(&MPI_Iallreduce) Iallreduce = nullptr;
  decltype(&MPI_Ialltoall) Ialltoall = nullptr;
  decltype(&MPI_Ibarrier) Ibarrier = nullptr;
  decltype(&MPI_Ibcast) Ibcast = nullptr;
  decltype(&MPI_Init_thread) Init_thread = nullptr;
  decltype(&MPI_Initialized) Initialized = nullptr;
  decltype(&MPI_Irecv) Irecv = nullptr;
  decltype(&MPI_Ireduce_scatter_block) Ireduce_scatter_block = nullptr;
  decltype(&MPI_Isend) Isend = nullptr;
  decltype(&MPI_Query_thread) Query_thread = nullptr;
  decltype(&MPI_Test) Test = nullptr;
  decltype(&MPI_Testall) Testall = nullptr;
  MPI_Comm commWorld{}, commNull{};
  MPI_Datatype floatType{}, doubleType{}, int32Type{}, int64Type{};
  MPI_Op sum{}, max{}, min{}, prod{};
  MPI_Errhandler errorsReturn{};
};

/// The loaded library: null until loadMpi succeeds, then never changed.
std::atomic<const MpiApi *> loadedMpi{nullptr};

/// The loaded library's entry points (loadMpi succeeded before).
const MpiApi &mpi() { return *loadedMpi.load(); }

// mpi.h's predefined handles where they are constants (MPICH); nothing
// where they are the addresses of Open MPI's globals, which would make the
// runtime link libmpi.
#ifdef OPEN_MPI
#define DIST_RT_MPI_PREDEFINED(value)                                          \
  {                                                                            \
  }
#else
#define DIST_RT_MPI_PREDEFINED(value) value
#endif

/// Sets `out` to a predefined handle: Open MPI's are the addresses of its
/// globals (OMPI_PREDEFINED_GLOBAL in mpi.h), looked up by `global`; other
/// MPIs' (MPICH's integers) are mpi.h's `value`.
template <typename T>
bool handle(void *lib, [[maybe_unused]] const char *global,
            [[maybe_unused]] T value, T &out) {
#ifdef OPEN_MPI
  return dist_rt::resolveSymbol(lib, global, out);
#else
  (void)lib;
  out = value;
  return true;
#endif
}

/// The library names tried, in order: the file DIST_RT_LIBMPI names, else
/// the sonames of the MPI that mpi.h comes from.
std::vector<std::string> mpiLibraryNames() {
  if (const char *path = std::getenv("DIST_RT_LIBMPI"); path && *path)
    return {path};
#ifdef OPEN_MPI
  return {"libmpi.so.40", "libmpi.so"};
#else
  return {"libmpi.so.12", "libmpi.so"};
#endif
}

/// Makes MPI's library usable (loadedMpi). With `load` false only a
/// library already in the process counts (RTLD_NOLOAD: whether MPI can be
/// running at all). Returns "" or why it cannot, in a phrase.
std::string loadMpi(bool load) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (loadedMpi.load())
    return "";
  void *lib = nullptr;
  std::string tried;
  for (const std::string &name : mpiLibraryNames()) {
    // RTLD_GLOBAL: Open MPI's components, which it loads itself, resolve
    // their symbols in it.
    lib =
        dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL | (load ? 0 : RTLD_NOLOAD));
    if (lib)
      break;
    const char *why = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(why ? why : name);
  }
  if (!lib)
    return load ? "MPI's library does not load (" + tried +
                      "); install Open MPI or set DIST_RT_LIBMPI"
                : "MPI is not loaded";
  // Holds the handles whatever becomes of `a` (never destroyed: MPI may
  // still be called from static destructors).
  static MpiApi &a = *new MpiApi();
  bool ok =
      dist_rt::resolveSymbol(lib, "MPI_Abort", a.Abort) &&
      dist_rt::resolveSymbol(lib, "MPI_Comm_dup", a.Comm_dup) &&
      dist_rt::resolveSymbol(lib, "MPI_Comm_free", a.Comm_free) &&
      dist_rt::resolveSymbol(lib, "MPI_Comm_rank", a.Comm_rank) &&
      dist_rt::resolveSymbol(lib, "MPI_Comm_set_errhandler",
                             a.Comm_set_errhandler) &&
      dist_rt::resolveSymbol(lib, "MPI_Comm_size", a.Comm_size) &&
      dist_rt::resolveSymbol(lib, "MPI_Comm_split", a.Comm_split) &&
      dist_rt::resolveSymbol(lib, "MPI_Error_class", a.Error_class) &&
      dist_rt::resolveSymbol(lib, "MPI_Error_string", a.Error_string) &&
      dist_rt::resolveSymbol(lib, "MPI_Finalize", a.Finalize) &&
      dist_rt::resolveSymbol(lib, "MPI_Finalized", a.Finalized) &&
      dist_rt::resolveSymbol(lib, "MPI_Get_count", a.Get_count) &&
      dist_rt::resolveSymbol(lib, "MPI_Iallgather", a.Iallgather) &&
      dist_rt::resolveSymbol(lib, "MPI_Iallreduce", a.Iallreduce) &&
      dist_rt::resolveSymbol(lib, "MPI_Ialltoall", a.Ialltoall) &&
      dist_rt::resolveSymbol(lib, "MPI_Ibarrier", a.Ibarrier) &&
      dist_rt::resolveSymbol(lib, "MPI_Ibcast", a.Ibcast) &&
      dist_rt::resolveSymbol(lib, "MPI_Init_thread", a.Init_thread) &&
      dist_rt::resolveSymbol(lib, "MPI_Initialized", a.Initialized) &&
      dist_rt::resolveSymbol(lib, "MPI_Irecv", a.Irecv) &&
      dist_rt::resolveSymbol(lib, "MPI_Ireduce_scatter_block",
                             a.Ireduce_scatter_block) &&
      dist_rt::resolveSymbol(lib, "MPI_Isend", a.Isend) &&
      dist_rt::resolveSymbol(lib, "MPI_Query_thread", a.Query_thread) &&
      dist_rt::resolveSymbol(lib, "MPI_Test", a.Test) &&
      dist_rt::resolveSymbol(lib, "MPI_Testall", a.Testall) &&
      handle(lib, "ompi_mpi_comm_world", DIST_RT_MPI_PREDEFINED(MPI_COMM_WORLD),
             a.commWorld) &&
      handle(lib, "ompi_mpi_comm_null", DIST_RT_MPI_PREDEFINED(MPI_COMM_NULL),
             a.commNull) &&
      handle(lib, "ompi_mpi_float", DIST_RT_MPI_PREDEFINED(MPI_FLOAT),
             a.floatType) &&
      handle(lib, "ompi_mpi_double", DIST_RT_MPI_PREDEFINED(MPI_DOUBLE),
             a.doubleType) &&
      handle(lib, "ompi_mpi_int32_t", DIST_RT_MPI_PREDEFINED(MPI_INT32_T),
             a.int32Type) &&
      handle(lib, "ompi_mpi_int64_t", DIST_RT_MPI_PREDEFINED(MPI_INT64_T),
             a.int64Type) &&
      handle(lib, "ompi_mpi_op_sum", DIST_RT_MPI_PREDEFINED(MPI_SUM), a.sum) &&
      handle(lib, "ompi_mpi_op_max", DIST_RT_MPI_PREDEFINED(MPI_MAX), a.max) &&
      handle(lib, "ompi_mpi_op_min", DIST_RT_MPI_PREDEFINED(MPI_MIN), a.min) &&
      handle(lib, "ompi_mpi_op_prod", DIST_RT_MPI_PREDEFINED(MPI_PROD),
             a.prod) &&
      handle(lib, "ompi_mpi_errors_return",
             DIST_RT_MPI_PREDEFINED(MPI_ERRORS_RETURN), a.errorsReturn);
  if (!ok)
    return "the MPI library loaded is not the MPI the runtime was built "
           "with (a symbol is missing)";
  loadedMpi.store(&a);
  return "";
}

#undef DIST_RT_MPI_PREDEFINED

constexpr int64_t kMaxChunk = DIST_RT_COMM_MAX_CHUNK;

/// all_reduce runs as a ring (see the file comment) on two ranks, or on
/// more from this many bytes: below it the ring's 2 (n - 1) message
/// latencies lose to MPI's logarithmic algorithms.
constexpr int64_t kRingMinBytes = 64 * 1024;

/// Tags of the ring's two phases (on its own communicator).
constexpr int kRingReduceTag = 1;
constexpr int kRingGatherTag = 2;

/// a + b and a * b; integers wrap around as MPI's do (computed unsigned:
/// no signed overflow).
template <typename T>
T add(T a, T b) {
  if constexpr (std::is_integral<T>::value)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                          static_cast<std::make_unsigned_t<T>>(b));
  return a + b;
}
template <typename T>
T multiply(T a, T b) {
  if constexpr (std::is_integral<T>::value)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) *
                          static_cast<std::make_unsigned_t<T>>(b));
  return a * b;
}

/// into[i] = reduce(into[i], from[i]) for i < n.
template <typename T>
void combineAs(void *intoBytes, const void *fromBytes, int64_t n,
               dist_rt_reduce_op_t reduce) {
  T *into = static_cast<T *>(intoBytes);
  const T *from = static_cast<const T *>(fromBytes);
  switch (reduce) {
  case DIST_RT_REDUCE_MAX:
    for (int64_t i = 0; i < n; ++i)
      into[i] = from[i] > into[i] ? from[i] : into[i];
    break;
  case DIST_RT_REDUCE_MIN:
    for (int64_t i = 0; i < n; ++i)
      into[i] = from[i] < into[i] ? from[i] : into[i];
    break;
  case DIST_RT_REDUCE_PROD:
    for (int64_t i = 0; i < n; ++i)
      into[i] = multiply(into[i], from[i]);
    break;
  default: // SUM, and the sum of AVG.
    for (int64_t i = 0; i < n; ++i)
      into[i] = add(into[i], from[i]);
    break;
  }
}

/// data[i] /= ranks for i < n: the last step of an average.
template <typename T> void divideAs(void *bytes, int64_t n, int32_t ranks) {
  T *data = static_cast<T *>(bytes);
  const T divisor = static_cast<T>(ranks);
  for (int64_t i = 0; i < n; ++i)
    data[i] /= divisor;
}

void combine(void *into, const void *from, int64_t n, uint32_t dtype,
             dist_rt_reduce_op_t reduce) {
  switch (dtype) {
  case DIST_RT_DTYPE_FLOAT:
    return combineAs<float>(into, from, n, reduce);
  case DIST_RT_DTYPE_DOUBLE:
    return combineAs<double>(into, from, n, reduce);
  case DIST_RT_DTYPE_INT32:
    return combineAs<int32_t>(into, from, n, reduce);
  default:
    return combineAs<int64_t>(into, from, n, reduce);
  }
}

/// Divides the `n` summed elements at `data` by `ranks` when `reduce` is an
/// average; nothing otherwise.
void finishAverage(void *data, int64_t n, uint32_t dtype,
                   dist_rt_reduce_op_t reduce, int32_t ranks) {
  if (reduce != DIST_RT_REDUCE_AVG)
    return;
  switch (dtype) {
  case DIST_RT_DTYPE_FLOAT:
    return divideAs<float>(data, n, ranks);
  case DIST_RT_DTYPE_DOUBLE:
    return divideAs<double>(data, n, ranks);
  case DIST_RT_DTYPE_INT32:
    return divideAs<int32_t>(data, n, ranks);
  default:
    return divideAs<int64_t>(data, n, ranks);
  }
}

/// True when createMpiWorldBackend called MPI_Init_thread.
std::atomic<bool> initializedHere{false};
std::atomic<bool> serializedThreads{false};
/// True once any operation timed out or failed in MPI.
std::atomic<bool> communicationFailed{false};

/// True between MPI_Init and MPI_Finalize (whoever called them).
bool mpiRunning() {
  if (!loadMpi(/*load=*/false).empty())
    return false;
  int initialized = 0, finalized = 0;
  mpi().Initialized(&initialized);
  mpi().Finalized(&finalized);
  return initialized && !finalized;
}

/// MPI's description of an error code.
std::string mpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (mpi().Error_string(code, text, &length) != MPI_SUCCESS || length <= 0)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

MPI_Datatype mpiType(uint32_t dtype) {
  switch (dtype) {
  case DIST_RT_DTYPE_FLOAT:
    return mpi().floatType;
  case DIST_RT_DTYPE_DOUBLE:
    return mpi().doubleType;
  case DIST_RT_DTYPE_INT32:
    return mpi().int32Type;
  default:
    return mpi().int64Type;
  }
}

MPI_Op mpiOp(dist_rt_reduce_op_t reduce) {
  switch (reduce) {
  case DIST_RT_REDUCE_MAX:
    return mpi().max;
  case DIST_RT_REDUCE_MIN:
    return mpi().min;
  case DIST_RT_REDUCE_PROD:
    return mpi().prod;
  default: // SUM, and AVG (divided afterwards: MPI has no average).
    return mpi().sum;
  }
}

/// "the other rank" or "the other N ranks".
std::string otherRanks(int32_t size) {
  if (size == 2)
    return "the other rank";
  return "the other " + std::to_string(size - 1) + " ranks";
}

/// A group of ranks over one MPI communicator, which it owns.
class MpiBackend final : public CommBackend {
public:
  /// Takes `comm` and `ringComm`, a duplicate of it for the ring
  /// all-reduce's messages (which must not meet the user's send/recv tags).
  MpiBackend(MPI_Comm comm, MPI_Comm ringComm)
      : comm(comm), ringComm(ringComm) {
    int value = 0;
    mpi().Comm_rank(comm, &value);
    myRank = value;
    mpi().Comm_size(comm, &value);
    numRanks = value;
  }

  ~MpiBackend() override {
    // After a failure operations may still be in flight on the
    // communicators and into the scratch block; leave them all to the end
    // of the process.
    if (failed) {
      new std::vector<char>(std::move(scratch)); // Deliberately leaked.
      return;
    }
    if (mpiRunning()) {
      mpi().Comm_free(&ringComm);
      mpi().Comm_free(&comm);
    }
  }

  /// Wraps `comm` (with MPI_ERRORS_RETURN set) and a duplicate of it into
  /// `*out`; takes `comm` even on failure. Collective over `comm`.
  static dist_rt_status_t create(const char *op, MPI_Comm comm,
                                 std::unique_ptr<CommBackend> *out) {
    MPI_Comm ringComm = mpi().commNull;
    int rc = mpi().Comm_dup(comm, &ringComm);
    if (rc == MPI_SUCCESS) {
      rc = mpi().Comm_set_errhandler(ringComm, mpi().errorsReturn);
      if (rc != MPI_SUCCESS)
        mpi().Comm_free(&ringComm);
    }
    if (rc != MPI_SUCCESS) {
      mpi().Comm_free(&comm);
      return makeStatus(DIST_RT_ERROR_COMM,
                        "%s: duplicating the communicator failed: %s", op,
                        mpiErrorText(rc).c_str());
    }
    out->reset(new MpiBackend(comm, ringComm));
    return nullptr;
  }

  int32_t rank() const override { return myRank; }
  int32_t size() const override { return numRanks; }

  dist_rt_status_t allReduce(const char *op, const void *send, void *recv,
                             int64_t count, uint32_t dtype,
                             dist_rt_reduce_op_t reduce,
                             const Deadline &deadline) override {
    size_t elementSize = dist_rt_dtype_size(dtype);
    bool inPlace = send == recv;
    bool ring = numRanks == 2 ||
                (numRanks > 2 && count * static_cast<int64_t>(elementSize) >=
                                     kRingMinBytes);
    if (ring && !inPlace && count > 0)
      std::memcpy(recv, send, static_cast<size_t>(count) * elementSize);
    return forChunks(count, [&](int64_t offset, int n) -> dist_rt_status_t {
      const void *chunkSend =
          inPlace ? MPI_IN_PLACE
                  : static_cast<const char *>(send) + offset * elementSize;
      void *chunkRecv = static_cast<char *>(recv) + offset * elementSize;
      if (ring)
        return ringAllReduce(op, chunkRecv, n, dtype, reduce, deadline);
      if (dist_rt_status_t status = startAndWait(
              op, deadline, otherRanks(numRanks), [&](MPI_Request *request) {
                return mpi().Iallreduce(chunkSend, chunkRecv, n, mpiType(dtype),
                                        mpiOp(reduce), comm, request);
              }))
        return status;
      finishAverage(chunkRecv, n, dtype, reduce, numRanks);
      return nullptr;
    });
  }

  dist_rt_status_t allGather(const char *op, const void *send, void *recv,
                             int64_t countPerRank, uint32_t dtype,
                             const Deadline &deadline) override {
    if (dist_rt_status_t status = checkBlockCount(op, countPerRank))
      return status;
    int n = static_cast<int>(countPerRank);
    return startAndWait(
        op, deadline, otherRanks(numRanks), [&](MPI_Request *request) {
          return mpi().Iallgather(send, n, mpiType(dtype), recv, n,
                                  mpiType(dtype), comm, request);
        });
  }

  dist_rt_status_t reduceScatter(const char *op, const void *send, void *recv,
                                 int64_t countPerRank, uint32_t dtype,
                                 dist_rt_reduce_op_t reduce,
                                 const Deadline &deadline) override {
    if (dist_rt_status_t status = checkBlockCount(op, countPerRank))
      return status;
    if (dist_rt_status_t status = startAndWait(
            op, deadline, otherRanks(numRanks), [&](MPI_Request *request) {
              return mpi().Ireduce_scatter_block(
                  send, recv, static_cast<int>(countPerRank), mpiType(dtype),
                  mpiOp(reduce), comm, request);
            }))
      return status;
    finishAverage(recv, countPerRank, dtype, reduce, numRanks);
    return nullptr;
  }

  dist_rt_status_t allToAll(const char *op, const void *send, void *recv,
                            int64_t countPerRank, uint32_t dtype,
                            const Deadline &deadline) override {
    if (dist_rt_status_t status = checkBlockCount(op, countPerRank))
      return status;
    int n = static_cast<int>(countPerRank);
    return startAndWait(
        op, deadline, otherRanks(numRanks), [&](MPI_Request *request) {
          return mpi().Ialltoall(send, n, mpiType(dtype), recv, n,
                                 mpiType(dtype), comm, request);
        });
  }

  dist_rt_status_t broadcast(const char *op, void *buf, int64_t count,
                             uint32_t dtype, int32_t root,
                             const Deadline &deadline) override {
    size_t elementSize = dist_rt_dtype_size(dtype);
    std::string waitingFor = myRank == root
                                 ? otherRanks(numRanks)
                                 : "the root, rank " + std::to_string(root);
    return forChunks(count, [&](int64_t offset, int n) -> dist_rt_status_t {
      return startAndWait(op, deadline, waitingFor, [&](MPI_Request *request) {
        return mpi().Ibcast(static_cast<char *>(buf) + offset * elementSize, n,
                            mpiType(dtype), root, comm, request);
      });
    });
  }

  dist_rt_status_t send(const char *op, const void *buf, int64_t count,
                        uint32_t dtype, int32_t peer, int32_t tag,
                        const Deadline &deadline) override {
    size_t elementSize = dist_rt_dtype_size(dtype);
    std::string waitingFor = "rank " + std::to_string(peer) +
                             " to receive tag " + std::to_string(tag);
    return forChunks(count, [&](int64_t offset, int n) -> dist_rt_status_t {
      return startAndWait(op, deadline, waitingFor, [&](MPI_Request *request) {
        return mpi().Isend(static_cast<const char *>(buf) +
                               offset * elementSize,
                           n, mpiType(dtype), peer, tag, comm, request);
      });
    });
  }

  dist_rt_status_t startSend(const char *op, const void *buf, int64_t count,
                             uint32_t dtype, int32_t peer, int32_t tag,
                             const Deadline &deadline,
                             void **out_request) override {
    *out_request = nullptr;
    if (count > std::numeric_limits<int>::max())
      return send(op, buf, count, dtype, peer, tag, deadline);
    auto request = std::make_unique<MPI_Request>();
    int rc = mpi().Isend(buf, static_cast<int>(count), mpiType(dtype), peer,
                         tag, comm, request.get());
    if (rc != MPI_SUCCESS)
      return mpiError(op, rc);
    *out_request = request.release();
    return nullptr;
  }

  dist_rt_status_t testSend(const char *op, void *request,
                            bool *out_done) override {
    auto *r = static_cast<MPI_Request *>(request);
    int done = 0;
    int rc = mpi().Test(r, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
      return mpiError(op, rc);
    *out_done = done != 0;
    if (done)
      delete r;
    return nullptr;
  }

  dist_rt_status_t recv(const char *op, void *buf, int64_t count,
                        uint32_t dtype, int32_t peer, int32_t tag,
                        const Deadline &deadline) override {
    size_t elementSize = dist_rt_dtype_size(dtype);
    std::string waitingFor =
        "rank " + std::to_string(peer) + " to send tag " + std::to_string(tag);
    return forChunks(count, [&](int64_t offset, int n) -> dist_rt_status_t {
      MPI_Request request;
      int rc = mpi().Irecv(static_cast<char *>(buf) + offset * elementSize, n,
                           mpiType(dtype), peer, tag, comm, &request);
      if (rc != MPI_SUCCESS)
        return mpiError(op, rc);
      MPI_Status status;
      bool truncated = false;
      if (dist_rt_status_t failure =
              wait(op, &request, deadline, waitingFor, &status, &truncated))
        return failure;
      int received = 0;
      if (!truncated &&
          mpi().Get_count(&status, mpiType(dtype), &received) == MPI_SUCCESS &&
          received == n)
        return nullptr;
      std::string got = truncated || received == MPI_UNDEFINED
                            ? std::string("a longer message")
                            : "a message of " +
                                  std::to_string(offset + received) +
                                  " elements";
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "%s: expected %" PRId64 " %s elements from rank "
                        "%" PRId32 " with tag %" PRId32 ", got %s",
                        op, count, dist_rt_dtype_name(dtype), peer, tag,
                        got.c_str());
    });
  }

  dist_rt_status_t barrier(const char *op, const Deadline &deadline) override {
    return startAndWait(
        op, deadline, otherRanks(numRanks),
        [&](MPI_Request *request) { return mpi().Ibarrier(comm, request); });
  }

  dist_rt_status_t split(const char *op, int32_t color, int32_t key,
                         std::unique_ptr<CommBackend> *out) override {
    MPI_Comm newComm = mpi().commNull;
    int rc = mpi().Comm_split(comm, color, key, &newComm);
    if (rc != MPI_SUCCESS)
      return mpiError(op, rc);
    rc = mpi().Comm_set_errhandler(newComm, mpi().errorsReturn);
    if (rc != MPI_SUCCESS) {
      mpi().Comm_free(&newComm);
      return mpiError(op, rc);
    }
    return create(op, newComm, out);
  }

private:
  /// Marks the backend failed and reports MPI error `code`.
  dist_rt_status_t mpiError(const char *op, int code) {
    failed = true;
    communicationFailed.store(true);
    return makeStatus(DIST_RT_ERROR_COMM, "%s failed: %s", op,
                      mpiErrorText(code).c_str());
  }

  /// Rejects a per-rank count that an MPI int cannot hold.
  static dist_rt_status_t checkBlockCount(const char *op, int64_t count) {
    if (count <= kMaxChunk)
      return nullptr;
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: %" PRId64 " elements per rank exceed the MPI "
                      "limit of %" PRId64 " per call",
                      op, count, kMaxChunk);
  }

  /// Calls `body(offset, n)` for consecutive chunks of at most kMaxChunk
  /// elements covering [0, count), at least once (with n = 0 for an empty
  /// buffer), and stops at the first failure.
  template <typename Body>
  static dist_rt_status_t forChunks(int64_t count, Body &&body) {
    int64_t offset = 0;
    do {
      int64_t n = count - offset < kMaxChunk ? count - offset : kMaxChunk;
      if (dist_rt_status_t status = body(offset, static_cast<int>(n)))
        return status;
      offset += n;
    } while (offset < count);
    return nullptr;
  }

  /// All-reduces the `n` elements at `data` in place as a ring: n - 1
  /// steps of reduce-scatter (each rank sends one block to the next rank
  /// and combines the block it receives from the previous one into its
  /// own), after which rank r holds the result of block r + 1 (divided
  /// there for an average), then n - 1 steps of all-gather passing the
  /// finished blocks on.
  dist_rt_status_t ringAllReduce(const char *op, void *data, int n,
                                 uint32_t dtype, dist_rt_reduce_op_t reduce,
                                 const Deadline &deadline) {
    const size_t elementSize = dist_rt_dtype_size(dtype);
    const int64_t size = numRanks;
    const int64_t block = (n + size - 1) / size;
    auto begin = [&](int64_t b) {
      int64_t start = ((b % size) + size) % size * block;
      return start < n ? start : static_cast<int64_t>(n);
    };
    auto length = [&](int64_t b) {
      int64_t start = begin(b);
      return (start + block < n ? start + block : n) - start;
    };
    auto at = [&](int64_t b) {
      return static_cast<char *>(data) + begin(b) * elementSize;
    };
    // One block of scratch per backend, kept between calls (and never
    // freed after a failure: a receive may still be posted into it).
    if (scratch.size() < static_cast<size_t>(block) * elementSize)
      scratch.resize(static_cast<size_t>(block) * elementSize);
    const int right = static_cast<int>((myRank + 1) % size);
    const int left = static_cast<int>((myRank + size - 1) % size);
    const std::string waitingFor = otherRanks(numRanks);
    for (int phase = 0; phase < 2; ++phase) {
      const bool gather = phase == 1;
      const int tag = gather ? kRingGatherTag : kRingReduceTag;
      for (int64_t step = 0; step < size - 1; ++step) {
        int64_t sendBlock = myRank - step + (gather ? 1 : 0);
        int64_t recvBlock = sendBlock - 1;
        void *into = gather ? static_cast<void *>(at(recvBlock))
                            : static_cast<void *>(scratch.data());
        MPI_Request requests[2];
        int rc = mpi().Irecv(into, static_cast<int>(length(recvBlock)),
                             mpiType(dtype), left, tag, ringComm, &requests[0]);
        if (rc != MPI_SUCCESS)
          return mpiError(op, rc);
        rc = mpi().Isend(at(sendBlock), static_cast<int>(length(sendBlock)),
                         mpiType(dtype), right, tag, ringComm, &requests[1]);
        if (rc != MPI_SUCCESS) {
          // The receive stays posted: the communicator is abandoned.
          return mpiError(op, rc);
        }
        if (dist_rt_status_t status =
                poll(op, deadline, waitingFor, [&](int *done) {
                  return mpi().Testall(2, requests, done, MPI_STATUSES_IGNORE);
                }))
          return status;
        if (gather)
          continue;
        combine(at(recvBlock), scratch.data(), length(recvBlock), dtype,
                reduce);
        // The last combine finishes this rank's block (still in cache).
        if (step == size - 2)
          finishAverage(at(recvBlock), length(recvBlock), dtype, reduce,
                        numRanks);
      }
    }
    return nullptr;
  }

  /// Starts a nonblocking call (`start` fills the request and returns the
  /// MPI code) and waits for it as `wait` does.
  template <typename Start>
  dist_rt_status_t startAndWait(const char *op, const Deadline &deadline,
                                const std::string &waitingFor, Start start) {
    MPI_Request request;
    int rc = start(&request);
    if (rc != MPI_SUCCESS)
      return mpiError(op, rc);
    return wait(op, &request, deadline, waitingFor);
  }

  /// Polls `request` until it completes or `deadline` passes. A receive's
  /// status is stored in `*status`; a truncated receive sets `*truncated`
  /// and is not a communication failure.
  dist_rt_status_t wait(const char *op, MPI_Request *request,
                        const Deadline &deadline, const std::string &waitingFor,
                        MPI_Status *status = nullptr,
                        bool *truncated = nullptr) {
    return poll(op, deadline, waitingFor, [&](int *done) {
      int rc = mpi().Test(request, done, status ? status : MPI_STATUS_IGNORE);
      int errorClass = 0;
      if (rc != MPI_SUCCESS && truncated &&
          mpi().Error_class(rc, &errorClass) == MPI_SUCCESS &&
          errorClass == MPI_ERR_TRUNCATE) {
        *truncated = true;
        *done = 1;
        return MPI_SUCCESS;
      }
      return rc;
    });
  }

  /// Calls `test(&done)` (an MPI_Test-like call returning the MPI code)
  /// until it sets `done`, fails, or `deadline` passes.
  template <typename Test>
  dist_rt_status_t poll(const char *op, const Deadline &deadline,
                        const std::string &waitingFor, Test test) {
    dist_rt::comm::PollBackoff backoff;
    for (;;) {
      int done = 0;
      int rc = test(&done);
      if (rc != MPI_SUCCESS)
        return mpiError(op, rc);
      if (done)
        return nullptr;
      if (deadline.expired()) {
        failed = true;
        communicationFailed.store(true);
        return makeStatus(DIST_RT_ERROR_COMM,
                          "%s timed out after %g s waiting for %s", op,
                          deadline.seconds(), waitingFor.c_str());
      }
      backoff.pause();
    }
  }

  MPI_Comm comm;
  MPI_Comm ringComm;
  /// The ring all-reduce's receive block.
  std::vector<char> scratch;
  int32_t myRank = 0;
  int32_t numRanks = 1;
  /// Set after a timeout or an MPI error.
  bool failed = false;
};

} // namespace

dist_rt_status_t
dist_rt::comm::createMpiWorldBackend(int *argc, char ***argv,
                                     std::unique_ptr<CommBackend> *out) {
  if (std::string problem = loadMpi(/*load=*/true); !problem.empty())
    return makeStatus(DIST_RT_ERROR_COMM, "world_init: %s", problem.c_str());
  int initialized = 0, finalized = 0;
  mpi().Initialized(&initialized);
  mpi().Finalized(&finalized);
  if (finalized)
    return makeStatus(DIST_RT_ERROR_COMM,
                      "world_init: MPI was already finalized and cannot be "
                      "initialized again");
  if (!initialized) {
    int provided = 0;
    // SERIALIZED when the library has it: the mesh collectives of
    // generated code (mesh.cpp) run on a communication thread.
    int rc = mpi().Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS)
      return makeStatus(DIST_RT_ERROR_COMM,
                        "world_init: MPI_Init_thread failed: %s",
                        mpiErrorText(rc).c_str());
    if (provided < MPI_THREAD_FUNNELED) {
      mpi().Finalize();
      return makeStatus(DIST_RT_ERROR_COMM,
                        "world_init: this MPI library gives thread support "
                        "level %d, the runtime needs MPI_THREAD_FUNNELED",
                        provided);
    }
    initializedHere.store(true);
    serializedThreads.store(provided >= MPI_THREAD_SERIALIZED);
    // Only when MPI is ours: the program's own handler is left alone.
    mpi().Comm_set_errhandler(mpi().commWorld, mpi().errorsReturn);
  }
  MPI_Comm world = mpi().commNull;
  int rc = mpi().Comm_dup(mpi().commWorld, &world);
  if (rc != MPI_SUCCESS)
    return makeStatus(DIST_RT_ERROR_COMM, "world_init: MPI_Comm_dup failed: %s",
                      mpiErrorText(rc).c_str());
  rc = mpi().Comm_set_errhandler(world, mpi().errorsReturn);
  if (rc != MPI_SUCCESS) {
    mpi().Comm_free(&world);
    return makeStatus(DIST_RT_ERROR_COMM,
                      "world_init: MPI_Comm_set_errhandler failed: %s",
                      mpiErrorText(rc).c_str());
  }
  return MpiBackend::create("world_init", world, out);
}

bool dist_rt::comm::mpiAllowsSerializedThreads() {
  if (initializedHere.load())
    return serializedThreads.load();
  int provided = 0;
  return mpiRunning() && mpi().Query_thread(&provided) == MPI_SUCCESS &&
         provided >= MPI_THREAD_SERIALIZED;
}

dist_rt_status_t dist_rt::comm::finalizeMpi() {
  if (!initializedHere.load() || !mpiRunning())
    return nullptr;
  int rank = 0;
  mpi().Comm_rank(mpi().commWorld, &rank);
  if (communicationFailed.load())
    return makeStatus(DIST_RT_ERROR_COMM,
                      "rank %d: world_finalize: MPI is not finalized after a "
                      "communication failure (it could wait forever); end "
                      "the job with dist_rt_world_abort",
                      rank);
  int rc = mpi().Finalize();
  if (rc != MPI_SUCCESS)
    return makeStatus(DIST_RT_ERROR_COMM,
                      "rank %d: world_finalize: MPI_Finalize failed: %s", rank,
                      mpiErrorText(rc).c_str());
  return nullptr;
}

void dist_rt::comm::abortMpi(int code) {
  if (mpiRunning())
    mpi().Abort(mpi().commWorld, code);
}
