//===- ps_zmq.cpp - ZeroMQ loaded at run time -----------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// See ps_zmq.h.
//
//===----------------------------------------------------------------------===//

#include "ps_zmq.h"

#include <dlfcn.h>
#include <mutex>

namespace dist_rt {

namespace {

struct Loaded {
  ZmqApi api{};
  std::string error;
  bool ok = false;
};

template <typename Fn>
bool resolve(void *handle, const char *name, Fn &fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return fn != nullptr;
}

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
  bool ok = resolve(handle, "zmq_ctx_new", a.ctxNew) &&
            resolve(handle, "zmq_ctx_term", a.ctxTerm) &&
            resolve(handle, "zmq_ctx_set", a.ctxSet) &&
            resolve(handle, "zmq_socket", a.socket) &&
            resolve(handle, "zmq_close", a.close) &&
            resolve(handle, "zmq_bind", a.bind) &&
            resolve(handle, "zmq_connect", a.connect) &&
            resolve(handle, "zmq_setsockopt", a.setsockopt) &&
            resolve(handle, "zmq_getsockopt", a.getsockopt) &&
            resolve(handle, "zmq_msg_init", a.msgInit) &&
            resolve(handle, "zmq_msg_init_size", a.msgInitSize) &&
            resolve(handle, "zmq_msg_data", a.msgData) &&
            resolve(handle, "zmq_msg_size", a.msgSize) &&
            resolve(handle, "zmq_msg_more", a.msgMore) &&
            resolve(handle, "zmq_msg_close", a.msgClose) &&
            resolve(handle, "zmq_msg_send", a.msgSend) &&
            resolve(handle, "zmq_msg_recv", a.msgRecv) &&
            resolve(handle, "zmq_send", a.send) &&
            resolve(handle, "zmq_poll", a.poll) &&
            resolve(handle, "zmq_errno", a.errnum) &&
            resolve(handle, "zmq_strerror", a.strerror);
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
