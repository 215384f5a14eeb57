//===- ps_zmq.h - ZeroMQ loaded at run time ---------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The parameter server's transport is Debian's libzmq5, loaded with dlopen
// on first use (as blas.cpp loads OpenBLAS) so that compiled models that use
// no parameter server run on machines without it. Internal to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_LIB_PS_ZMQ_H
#define DIST_RT_LIB_PS_ZMQ_H

#include <zmq.h>

#include <string>

namespace dist_rt {

/// The ZeroMQ functions the parameter server calls.
struct ZmqApi {
  decltype(&zmq_ctx_new) ctxNew;
  decltype(&zmq_ctx_term) ctxTerm;
  decltype(&zmq_ctx_set) ctxSet;
  decltype(&zmq_socket) socket;
  decltype(&zmq_close) close;
  decltype(&zmq_bind) bind;
  decltype(&zmq_connect) connect;
  decltype(&zmq_setsockopt) setsockopt;
  decltype(&zmq_getsockopt) getsockopt;
  decltype(&zmq_msg_init) msgInit;
  decltype(&zmq_msg_init_size) msgInitSize;
  decltype(&zmq_msg_data) msgData;
  decltype(&zmq_msg_size) msgSize;
  decltype(&zmq_msg_more) msgMore;
  decltype(&zmq_msg_close) msgClose;
  decltype(&zmq_msg_send) msgSend;
  decltype(&zmq_msg_recv) msgRecv;
  decltype(&zmq_send) send;
  decltype(&zmq_poll) poll;
  decltype(&zmq_errno) errnum;
  decltype(&zmq_strerror) strerror;
};

/// The loaded library, or null with the reason in `error` (the library is
/// missing: install libzmq5).
const ZmqApi *loadZmq(std::string &error);

} // namespace dist_rt

#endif // DIST_RT_LIB_PS_ZMQ_H
