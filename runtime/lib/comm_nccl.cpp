//===- comm_nccl.cpp - NCCL backend of the communicators --------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The NCCL implementation of CommBackend (comm_backend.h), for CUDA device
// buffers: one GPU per rank (the node-local rank modulo the GPUs of the
// node), one NCCL communicator and one CUDA stream per group of ranks. MPI
// bootstraps it: the world's MPI backend broadcasts rank 0's ncclUniqueId,
// split() splits the MPI group and creates a new NCCL communicator on each
// part, and barrier() is MPI's. Each operation is enqueued on the stream and
// polled (cudaStreamQuery, ncclCommGetAsyncError) until it completes or the
// deadline passes; a timeout aborts the NCCL communicator (ncclCommAbort)
// and marks the backend failed.
//
// libnccl.so.2 and the CUDA runtime (libcudart.so.13, .12 or .so) are
// loaded with dlopen when a program asks for this backend, so the runtime
// (and every model executable) runs on machines without CUDA; nccl.h and
// cuda_runtime_api.h give the types at build time. Without them (CMake did
// not find nccl.h) the backend only reports that it was not built.
//
// NCCL has no tags: messages between two ranks arrive in the order they were
// sent, whatever their tags. Its average (ncclAvg) multiplies floating-point
// inputs by 1/n before summing, so it can differ from the MPI backend's
// sum / n in the last bits when n is not a power of two.
//
//===----------------------------------------------------------------------===//

#include "comm_backend.h"
#include "internal.h"
#include "library.h"

#include <string>

#if DIST_RT_HAVE_NCCL

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include <dlfcn.h>

using dist_rt::makeStatus;
using dist_rt::comm::CommBackend;
using dist_rt::comm::Deadline;

namespace {

/// The entry points used, resolved once from the loaded libraries.
struct CudaNcclApi {
  decltype(&cudaGetDeviceCount) getDeviceCount = nullptr;
  decltype(&cudaSetDevice) setDevice = nullptr;
  decltype(&cudaStreamCreateWithFlags) streamCreate = nullptr;
  decltype(&cudaStreamDestroy) streamDestroy = nullptr;
  decltype(&cudaStreamQuery) streamQuery = nullptr;
  decltype(&cudaGetErrorString) cudaError = nullptr;
  decltype(&cudaPointerGetAttributes) pointerAttributes = nullptr;
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRank) commInitRank = nullptr;
  decltype(&ncclCommDestroy) commDestroy = nullptr;
  decltype(&ncclCommAbort) commAbort = nullptr;
  decltype(&ncclCommGetAsyncError) asyncError = nullptr;
  decltype(&ncclGetErrorString) ncclError = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclAllGather) allGather = nullptr;
  decltype(&ncclReduceScatter) reduceScatter = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) groupStart = nullptr;
  decltype(&ncclGroupEnd) groupEnd = nullptr;
};

CudaNcclApi api;
std::once_flag apiOnce;
/// Why the libraries could not be used; empty once `api` is complete.
std::string apiProblem = "not loaded";

/// dlopen of the first name that loads; appends dlerror's text to `tried`.
void *openFirst(std::initializer_list<const char *> names, std::string &tried) {
  for (const char *name : names) {
    if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return handle;
    const char *why = dlerror();
    tried += tried.empty() ? "" : "; ";
    tried += why ? why : name;
  }
  return nullptr;
}

void loadApi() {
  std::string tried;
  void *cudart =
      openFirst({"libcudart.so.13", "libcudart.so.12", "libcudart.so"}, tried);
  void *nccl = openFirst({"libnccl.so.2", "libnccl.so"}, tried);
  if (!cudart || !nccl) {
    apiProblem = "cannot load the CUDA runtime and NCCL (" + tried + ")";
    return;
  }
  CudaNcclApi a;
  bool ok =
      dist_rt::resolveSymbol(cudart, "cudaGetDeviceCount", a.getDeviceCount) &&
      dist_rt::resolveSymbol(cudart, "cudaSetDevice", a.setDevice) &&
      dist_rt::resolveSymbol(cudart, "cudaStreamCreateWithFlags",
                             a.streamCreate) &&
      dist_rt::resolveSymbol(cudart, "cudaStreamDestroy", a.streamDestroy) &&
      dist_rt::resolveSymbol(cudart, "cudaStreamQuery", a.streamQuery) &&
      dist_rt::resolveSymbol(cudart, "cudaGetErrorString", a.cudaError) &&
      dist_rt::resolveSymbol(cudart, "cudaPointerGetAttributes",
                             a.pointerAttributes) &&
      dist_rt::resolveSymbol(nccl, "ncclGetUniqueId", a.getUniqueId) &&
      dist_rt::resolveSymbol(nccl, "ncclCommInitRank", a.commInitRank) &&
      dist_rt::resolveSymbol(nccl, "ncclCommDestroy", a.commDestroy) &&
      dist_rt::resolveSymbol(nccl, "ncclCommAbort", a.commAbort) &&
      dist_rt::resolveSymbol(nccl, "ncclCommGetAsyncError", a.asyncError) &&
      dist_rt::resolveSymbol(nccl, "ncclGetErrorString", a.ncclError) &&
      dist_rt::resolveSymbol(nccl, "ncclAllReduce", a.allReduce) &&
      dist_rt::resolveSymbol(nccl, "ncclAllGather", a.allGather) &&
      dist_rt::resolveSymbol(nccl, "ncclReduceScatter", a.reduceScatter) &&
      dist_rt::resolveSymbol(nccl, "ncclBroadcast", a.broadcast) &&
      dist_rt::resolveSymbol(nccl, "ncclSend", a.send) &&
      dist_rt::resolveSymbol(nccl, "ncclRecv", a.recv) &&
      dist_rt::resolveSymbol(nccl, "ncclGroupStart", a.groupStart) &&
      dist_rt::resolveSymbol(nccl, "ncclGroupEnd", a.groupEnd);
  if (!ok) {
    const char *why = dlerror();
    apiProblem = "cannot use the loaded CUDA runtime or NCCL (" +
                 std::string(why ? why : "an entry point is missing") + ")";
    return;
  }
  api = a;
  apiProblem.clear();
}

ncclDataType_t ncclType(uint32_t dtype) {
  switch (dtype) {
  case DIST_RT_DTYPE_FLOAT:
    return ncclFloat32;
  case DIST_RT_DTYPE_DOUBLE:
    return ncclFloat64;
  case DIST_RT_DTYPE_INT32:
    return ncclInt32;
  default:
    return ncclInt64;
  }
}

ncclRedOp_t ncclOp(dist_rt_reduce_op_t reduce) {
  switch (reduce) {
  case DIST_RT_REDUCE_MAX:
    return ncclMax;
  case DIST_RT_REDUCE_MIN:
    return ncclMin;
  case DIST_RT_REDUCE_PROD:
    return ncclProd;
  case DIST_RT_REDUCE_AVG:
    return ncclAvg;
  default:
    return ncclSum;
  }
}

/// A group of ranks over one NCCL communicator and the MPI group that
/// bootstrapped it, which it owns.
class NcclBackend final : public CommBackend {
public:
  NcclBackend(std::unique_ptr<CommBackend> host, int device, ncclComm_t comm,
              cudaStream_t stream)
      : host(std::move(host)), device(device), comm(comm), stream(stream) {}

  ~NcclBackend() override {
    if (failed)
      return; // Aborted already; the stream may still hold work.
    api.commDestroy(comm);
    api.streamDestroy(stream);
  }

  /// Creates the NCCL communicator of the ranks of `host` on GPU `device`
  /// (collective over them): rank 0's unique id is broadcast over `host`,
  /// and every step that can fail on one rank is agreed on over `host`
  /// before the next, so that all ranks fail together instead of waiting
  /// for one that gave up.
  static dist_rt_status_t create(const char *op,
                                 std::unique_ptr<CommBackend> host, int device,
                                 std::unique_ptr<CommBackend> *out) {
    const Deadline never(Deadline::kNeverSeconds);
    // Whether every rank of `host` passes `ok` (a MIN all-reduce).
    auto allOk = [&](bool ok, bool *all) -> dist_rt_status_t {
      int32_t mine = ok ? 1 : 0, everyone = 0;
      if (dist_rt_status_t status =
              host->allReduce(op, &mine, &everyone, 1, DIST_RT_DTYPE_INT32,
                              DIST_RT_REDUCE_MIN, never))
        return status;
      *all = everyone == 1;
      return nullptr;
    };
    // [ok, id...] from rank 0.
    static_assert(sizeof(ncclUniqueId) % sizeof(int32_t) == 0,
                  "the unique id travels as int32 elements");
    int32_t message[1 + sizeof(ncclUniqueId) / sizeof(int32_t)] = {1};
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    dist_rt_status_t failure = nullptr;
    if (cudaError_t rc = api.setDevice(device); rc != cudaSuccess)
      failure = cudaFailure(op, "cudaSetDevice", rc);
    if (host->rank() == 0) {
      if (ncclResult_t rc = api.getUniqueId(&id); rc != ncclSuccess) {
        message[0] = 0;
        if (!failure)
          failure = ncclFailure(op, "ncclGetUniqueId", rc);
      }
      std::memcpy(&message[1], &id, sizeof(id));
    }
    if (dist_rt_status_t status =
            host->broadcast(op, message, sizeof(message) / sizeof(int32_t),
                            DIST_RT_DTYPE_INT32, /*root=*/0, never)) {
      dist_rt_status_free(failure);
      return status;
    }
    std::memcpy(&id, &message[1], sizeof(id));
    if (!message[0] && !failure)
      failure = makeStatus(DIST_RT_ERROR_COMM,
                           "%s: rank 0 could not create the NCCL id", op);
    cudaStream_t stream = nullptr;
    if (!failure)
      // Default flags: the stream waits for work the caller queued on the
      // legacy default stream, which may be filling the buffers.
      if (cudaError_t rc = api.streamCreate(&stream, cudaStreamDefault);
          rc != cudaSuccess)
        failure = cudaFailure(op, "cudaStreamCreateWithFlags", rc);
    bool all = false;
    if (dist_rt_status_t status = allOk(!failure, &all)) {
      dist_rt_status_free(failure);
      return status;
    }
    auto dropStream = [&] {
      if (stream)
        api.streamDestroy(stream);
    };
    if (!all) {
      dropStream();
      return failure ? failure
                     : makeStatus(DIST_RT_ERROR_COMM,
                                  "%s: another rank could not prepare its "
                                  "GPU for NCCL",
                                  op);
    }
    ncclComm_t comm = nullptr;
    if (ncclResult_t rc =
            api.commInitRank(&comm, host->size(), id, host->rank());
        rc != ncclSuccess) {
      failure = ncclFailure(op, "ncclCommInitRank", rc);
      comm = nullptr;
    }
    if (dist_rt_status_t status = allOk(!failure, &all)) {
      dist_rt_status_free(failure);
      return status;
    }
    if (!all) {
      if (comm)
        api.commAbort(comm);
      dropStream();
      return failure ? failure
                     : makeStatus(DIST_RT_ERROR_COMM,
                                  "%s: ncclCommInitRank failed on another "
                                  "rank",
                                  op);
    }
    out->reset(new NcclBackend(std::move(host), device, comm, stream));
    return nullptr;
  }

  int32_t rank() const override { return host->rank(); }
  int32_t size() const override { return host->size(); }
  bool deviceMemory() const override { return true; }
  CommBackend *hostBackend() override { return host.get(); }

  dist_rt_status_t allReduce(const char *op, const void *send, void *recv,
                             int64_t count, uint32_t dtype,
                             dist_rt_reduce_op_t reduce,
                             const Deadline &deadline) override {
    if (onHost(send, recv))
      return host->allReduce(op, send, recv, count, dtype, reduce, deadline);
    return run(op, deadline, [&] {
      return api.allReduce(send, recv, static_cast<size_t>(count),
                           ncclType(dtype), ncclOp(reduce), comm, stream);
    });
  }

  dist_rt_status_t allGather(const char *op, const void *send, void *recv,
                             int64_t countPerRank, uint32_t dtype,
                             const Deadline &deadline) override {
    if (onHost(send, recv))
      return host->allGather(op, send, recv, countPerRank, dtype, deadline);
    return run(op, deadline, [&] {
      return api.allGather(send, recv, static_cast<size_t>(countPerRank),
                           ncclType(dtype), comm, stream);
    });
  }

  dist_rt_status_t reduceScatter(const char *op, const void *send, void *recv,
                                 int64_t countPerRank, uint32_t dtype,
                                 dist_rt_reduce_op_t reduce,
                                 const Deadline &deadline) override {
    if (onHost(send, recv))
      return host->reduceScatter(op, send, recv, countPerRank, dtype, reduce,
                                 deadline);
    return run(op, deadline, [&] {
      return api.reduceScatter(send, recv, static_cast<size_t>(countPerRank),
                               ncclType(dtype), ncclOp(reduce), comm, stream);
    });
  }

  dist_rt_status_t allToAll(const char *op, const void *send, void *recv,
                            int64_t countPerRank, uint32_t dtype,
                            const Deadline &deadline) override {
    if (onHost(send, recv))
      return host->allToAll(op, send, recv, countPerRank, dtype, deadline);
    size_t bytes =
        static_cast<size_t>(countPerRank) * dist_rt_dtype_size(dtype);
    return run(op, deadline, [&]() -> ncclResult_t {
      if (ncclResult_t rc = api.groupStart(); rc != ncclSuccess)
        return rc;
      ncclResult_t first = ncclSuccess;
      for (int32_t peer = 0; peer < size() && first == ncclSuccess; ++peer) {
        first = api.send(static_cast<const char *>(send) + peer * bytes,
                         static_cast<size_t>(countPerRank), ncclType(dtype),
                         peer, comm, stream);
        if (first == ncclSuccess)
          first = api.recv(static_cast<char *>(recv) + peer * bytes,
                           static_cast<size_t>(countPerRank), ncclType(dtype),
                           peer, comm, stream);
      }
      ncclResult_t end = api.groupEnd();
      return first != ncclSuccess ? first : end;
    });
  }

  dist_rt_status_t broadcast(const char *op, void *buf, int64_t count,
                             uint32_t dtype, int32_t root,
                             const Deadline &deadline) override {
    if (onHost(buf, buf))
      return host->broadcast(op, buf, count, dtype, root, deadline);
    return run(op, deadline, [&] {
      return api.broadcast(buf, buf, static_cast<size_t>(count),
                           ncclType(dtype), root, comm, stream);
    });
  }

  dist_rt_status_t send(const char *op, const void *buf, int64_t count,
                        uint32_t dtype, int32_t peer, int32_t tag,
                        const Deadline &deadline) override {
    if (onHost(buf, buf))
      return host->send(op, buf, count, dtype, peer, tag, deadline);
    return run(op, deadline, [&] {
      return api.send(buf, static_cast<size_t>(count), ncclType(dtype), peer,
                      comm, stream);
    });
  }

  dist_rt_status_t recv(const char *op, void *buf, int64_t count,
                        uint32_t dtype, int32_t peer, int32_t tag,
                        const Deadline &deadline) override {
    if (onHost(buf, buf))
      return host->recv(op, buf, count, dtype, peer, tag, deadline);
    return run(op, deadline, [&] {
      return api.recv(buf, static_cast<size_t>(count), ncclType(dtype), peer,
                      comm, stream);
    });
  }

  dist_rt_status_t barrier(const char *op, const Deadline &deadline) override {
    // Every operation here has finished on the GPU before it returned, so
    // the host group's barrier orders them too.
    return host->barrier(op, deadline);
  }

  dist_rt_status_t split(const char *op, int32_t color, int32_t key,
                         std::unique_ptr<CommBackend> *out) override {
    std::unique_ptr<CommBackend> part;
    if (dist_rt_status_t status = host->split(op, color, key, &part))
      return status;
    return create(op, std::move(part), device, out);
  }

private:
  /// Whether `send` or `recv` is host memory the GPU cannot address (a
  /// CUDA model's driver loop exchanging a flag or a checkpoint's bytes):
  /// such operations go to the MPI group that bootstrapped this one. The
  /// model's buffers are device or managed memory, which NCCL takes. Both
  /// pointers are on the same side in every caller; a message and its
  /// peer's must be too (the runtime passes alike buffers on every rank).
  static bool onHost(const void *send, const void *recv) {
    for (const void *p : {send, recv}) {
      if (!p)
        continue;
      cudaPointerAttributes attributes;
      std::memset(&attributes, 0, sizeof(attributes));
      if (api.pointerAttributes(&attributes, p) != cudaSuccess ||
          attributes.type == cudaMemoryTypeUnregistered ||
          attributes.type == cudaMemoryTypeHost)
        return true;
    }
    return false;
  }

  static dist_rt_status_t ncclFailure(const char *op, const char *call,
                                      ncclResult_t rc) {
    return makeStatus(DIST_RT_ERROR_COMM, "%s: %s failed: %s", op, call,
                      api.ncclError(rc));
  }
  static dist_rt_status_t cudaFailure(const char *op, const char *call,
                                      cudaError_t rc) {
    return makeStatus(DIST_RT_ERROR_COMM, "%s: %s failed: %s", op, call,
                      api.cudaError(rc));
  }

  /// Enqueues the NCCL calls of `launch` on the stream and waits for them
  /// as the file comment says.
  template <typename Launch>
  dist_rt_status_t run(const char *op, const Deadline &deadline,
                       Launch launch) {
    if (failed)
      return makeStatus(DIST_RT_ERROR_COMM,
                        "%s: the NCCL communicator failed before", op);
    // The current GPU is per host thread; collectives may come from
    // another thread than the one that created the communicator.
    if (cudaError_t rc = api.setDevice(device); rc != cudaSuccess)
      return cudaFailure(op, "cudaSetDevice", rc);
    if (ncclResult_t rc = launch(); rc != ncclSuccess)
      return abort(ncclFailure(op, "the NCCL call", rc));
    dist_rt::comm::PollBackoff backoff;
    for (;;) {
      cudaError_t state = api.streamQuery(stream);
      if (state == cudaSuccess)
        return nullptr;
      if (state != cudaErrorNotReady)
        return abort(cudaFailure(op, "cudaStreamQuery", state));
      ncclResult_t async = ncclSuccess;
      if (ncclResult_t rc = api.asyncError(comm, &async); rc != ncclSuccess)
        return abort(ncclFailure(op, "ncclCommGetAsyncError", rc));
      if (async != ncclSuccess)
        return abort(ncclFailure(op, "the NCCL operation", async));
      if (deadline.expired())
        return abort(makeStatus(DIST_RT_ERROR_COMM,
                                "%s timed out after %g s waiting for the "
                                "other ranks",
                                op, deadline.seconds()));
      backoff.pause();
    }
  }

  /// Aborts the communicator (its operations may never finish) and returns
  /// `status`.
  dist_rt_status_t abort(dist_rt_status_t status) {
    failed = true;
    api.commAbort(comm);
    return status;
  }

  std::unique_ptr<CommBackend> host;
  int device;
  ncclComm_t comm;
  cudaStream_t stream;
  bool failed = false;
};

} // namespace

dist_rt_status_t
dist_rt::comm::createNcclWorldBackend(int *argc, char ***argv,
                                      std::unique_ptr<CommBackend> *out) {
  std::call_once(apiOnce, loadApi);
  if (!apiProblem.empty())
    return makeStatus(DIST_RT_ERROR_COMM, "world_init: the NCCL backend %s",
                      apiProblem.c_str());
  int devices = 0;
  if (cudaError_t rc = api.getDeviceCount(&devices); rc != cudaSuccess)
    return makeStatus(DIST_RT_ERROR_COMM,
                      "world_init: the NCCL backend needs a CUDA GPU: "
                      "cudaGetDeviceCount failed: %s",
                      api.cudaError(rc));
  if (devices <= 0)
    return makeStatus(DIST_RT_ERROR_COMM,
                      "world_init: the NCCL backend needs a CUDA GPU, and "
                      "this machine has none");
  std::unique_ptr<CommBackend> host;
  if (dist_rt_status_t status = createMpiWorldBackend(argc, argv, &host))
    return status;
  int device = dist_rt::launcherLocalRank(host->rank()) % devices;
  return NcclBackend::create("world_init", std::move(host), device, out);
}

#else // !DIST_RT_HAVE_NCCL

dist_rt_status_t
dist_rt::comm::createNcclWorldBackend(int *, char ***,
                                      std::unique_ptr<CommBackend> *) {
  return dist_rt::makeStatus(DIST_RT_ERROR_COMM,
                             "world_init: this runtime was built without the "
                             "NCCL backend (nccl.h was not found)");
}

#endif // DIST_RT_HAVE_NCCL
