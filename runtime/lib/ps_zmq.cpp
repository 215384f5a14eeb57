//===- ps_zmq.cpp - ZeroMQ loaded at run time -----------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// See ps_zmq.h.
//
//===----------------------------------------------------------------------===//

#include "ps_zmq.h"
#include "library.h"

#include <dlfcn.h>
#include <mutex>

namespace dist_rt {

namespace {

struct Loaded {
  ZmqApi api{};
  std::string error;
  bool ok = false;
};

Loaded load() {
  Loaded loaded;
  void *handle = dlopen("libzmq.so.5", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    loaded.error = std::string("cannot load ZeroMQ (libzmq.so.5; install "
                               "Debian's libzmq5): ") +
                   (why ? why : "unknown error");
    return loaded;
  }
  ZmqApi &a = loaded.api;
  bool ok =
      dist_rt::resolveSymbol(handle, "zmq_ctx_new", a.ctxNew) &&
      dist_rt::resolveSymbol(handle, "zmq_ctx_term", a.ctxTerm) &&
      dist_rt::resolveSymbol(handle, "zmq_ctx_set", a.ctxSet) &&
      dist_rt::resolveSymbol(handle, "zmq_socket", a.socket) &&
      dist_rt::resolveSymbol(handle, "zmq_close", a.close) &&
      dist_rt::resolveSymbol(handle, "zmq_bind", a.bind) &&
      dist_rt::resolveSymbol(handle, "zmq_connect", a.connect) &&
      dist_rt::resolveSymbol(handle, "zmq_setsockopt", a.setsockopt) &&
      dist_rt::resolveSymbol(handle, "zmq_getsockopt", a.getsockopt) &&
      dist_rt::resolveSymbol(handle, "zmq_msg_init", a.msgInit) &&
      dist_rt::resolveSymbol(handle, "zmq_msg_init_size", a.msgInitSize) &&
      dist_rt::resolveSymbol(handle, "zmq_msg_data", a.msgData) &&
      dist_rt::resolveSymbol(handle, "zmq_msg_size", a.msgSize) &&
      dist_rt::resolveSymbol(handle, "zmq_msg_more", a.msgMore) &&
      dist_rt::resolveSymbol(handle, "zmq_msg_close", a.msgClose) &&
      dist_rt::resolveSymbol(handle, "zmq_msg_send", a.msgSend) &&
      dist_rt::resolveSymbol(handle, "zmq_msg_recv", a.msgRecv) &&
      dist_rt::resolveSymbol(handle, "zmq_send", a.send) &&
      dist_rt::resolveSymbol(handle, "zmq_poll", a.poll) &&
      dist_rt::resolveSymbol(handle, "zmq_errno", a.errnum) &&
      dist_rt::resolveSymbol(handle, "zmq_strerror", a.strerror);
  if (!ok) {
    loaded.error = "libzmq.so.5 lacks a ZeroMQ 4 function";
    return loaded;
  }
  loaded.ok = true;
  return loaded;
}

} // namespace

const ZmqApi *loadZmq(std::string &error) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    error = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

} // namespace dist_rt
