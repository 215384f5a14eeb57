#!/usr/bin/python3
#===- bench/ps_throughput.py - parameter server pull/push throughput -----===#
# SPDX-License-Identifier: Apache-2.0
#
# Pull and push throughput of the parameter server (dist_rt/ps.h) on
# loopback, one server shard and one worker, in keys per second, for rows
# of 16 and 64 floats and batches of 4,096 ids of which 30% repeat an
# earlier id of the batch, beside two peers from the same run:
#  - a Python dict server: pyzmq (Debian's python3-zmq) on the same
#    transport and the same message frames, one dict entry (a numpy row)
#    per id, SGD applied per row; driven by the same client (`dist-ps
#    bench`), so only the server differs;
#  - numpy in one process, the local bound: a pull is `table[ids]`, a push
#    `np.add.at(table, ids, -lr * grads)` on a dense table.
# The server runs in ASYNC mode (a pull never waits for other workers).
# Pushes are measured first, so the rows the pulls read exist on the
# servers, as they do in numpy's dense table.
# The target: within 3x of the local bound.
#
#   /usr/bin/python3 bench/ps_throughput.py [--build build] [--seconds 3]
#       [--dims 16 64] [--batch 4096] [--repeat 0.3] [--rows 1000000]
#
# Figures depend on this 2-core machine's mood (server and client share its
# two cores): run it twice and read the spread.

import argparse
import os
import struct
import subprocess
import sys
import threading
import time

import numpy as np

HEADER = struct.Struct("<IIQQQIIqQIIII")  # ps_internal.h's Header
MAGIC, HELLO, PULL, PUSH, READ, BYE, REPLY = 0x31535044, 1, 2, 3, 4, 5, 100


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def dict_server(dim, lr, ready, stop):
    """A parameter server in Python: a dict of numpy rows."""
    import zmq
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    ready.append("tcp://127.0.0.1:%d" % port)
    rows = {}
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    while not stop:
        if not poller.poll(100):
            continue
        frames = sock.recv_multipart()
        ident, head = frames[0], list(HEADER.unpack(frames[1]))
        op = head[1]
        reply = b""
        if op in (PULL, READ):
            ids = np.frombuffer(frames[2], dtype=np.int64)
            out = np.empty((len(ids), dim), dtype=np.float32)
            for k, i in enumerate(ids.tolist()):
                r = rows.get(i)
                out[k] = 0.0 if r is None else r
            reply = out.tobytes()
        elif op == PUSH:
            ids = np.frombuffer(frames[2], dtype=np.int64)
            grads = np.frombuffer(frames[3], dtype=np.float32).reshape(-1, dim)
            for k, i in enumerate(ids.tolist()):
                r = rows.get(i)
                if r is None:
                    r = rows[i] = np.zeros(dim, dtype=np.float32)
                r -= lr * grads[k]
        head[1] = REPLY
        head[8] = len(reply)
        sock.send_multipart([ident, HEADER.pack(*head), reply])
    sock.close(0)
    ctx.term()


def client_bench(a, dim, servers):
    out = subprocess.run(
        [os.path.join(a.build, "bin", "dist-ps"), "bench", "--tables",
         "emb:%d:%d" % (a.rows, dim), "--init", "zeros", "--servers", servers,
         "--batch", str(a.batch), "--repeat", str(a.repeat), "--seconds",
         str(a.seconds)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=a.seconds * 4 + 60)
    if out.returncode != 0:
        sys.exit("ps_throughput: dist-ps bench failed:\n" + out.stdout)
    figures = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) > 3 and parts[1] == "bench:":
            figures[parts[2]] = float(parts[3])
    return figures


def batches(a, count=16):
    rng = np.random.default_rng(1)
    result = []
    for _ in range(count):
        ids = rng.integers(0, a.rows, a.batch)
        rep = rng.random(a.batch) < a.repeat
        rep[0] = False
        for i in np.nonzero(rep)[0]:
            ids[i] = ids[rng.integers(0, i)]
        result.append(ids.astype(np.int64))
    return result


def numpy_bound(a, dim):
    table = np.zeros((a.rows, dim), dtype=np.float32)
    pool = batches(a)
    grads = np.full((a.batch, dim), 1e-6, dtype=np.float32)
    figures = {}
    for what in ("pull", "push"):
        keys, n, start = 0, 0, time.perf_counter()
        while time.perf_counter() - start < a.seconds:
            ids = pool[n % len(pool)]
            if what == "pull":
                rows = table[ids]
            else:
                np.add.at(table, ids, -0.01 * grads)
            keys += len(ids)
            n += 1
        figures[what] = keys / (time.perf_counter() - start)
    return figures


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default="build")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--dims", type=int, nargs="+", default=[16, 64])
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--repeat", type=float, default=0.3)
    p.add_argument("--rows", type=int, default=1000000)
    a = p.parse_args()
    tool = os.path.join(a.build, "bin", "dist-ps")
    if not os.access(tool, os.X_OK):
        sys.exit("ps_throughput: %s not built (ninja -C %s dist-ps)" %
                 (tool, a.build))
    print("# parameter server throughput, keys/s, on %s (%d cores), "
          "batch %d ids, %d%% repeats, 1 server + 1 worker on loopback" %
          (cpu_name(), os.cpu_count(), a.batch, round(a.repeat * 100)))
    print("%-5s %-5s %12s %12s %12s %10s" %
          ("dim", "op", "dist-ps", "python-dict", "numpy-local",
           "local/dist"))
    ok = True
    for dim in a.dims:
        endpoint = "/tmp/dist-ps-bench-%d.ep" % os.getpid()
        server = subprocess.Popen(
            [tool, "server", "--tables", "emb:%d:%d" % (a.rows, dim),
             "--init", "zeros", "--mode", "async", "--endpoint-file",
             endpoint], stdout=subprocess.DEVNULL)
        for _ in range(100):
            if os.path.exists(endpoint):
                break
            time.sleep(0.05)
        ours = client_bench(a, dim, open(endpoint).read().strip())
        os.remove(endpoint)
        server.wait(timeout=30)
        ready, stop = [], []
        t = threading.Thread(target=dict_server, args=(dim, 0.01, ready, stop))
        t.start()
        while not ready:
            time.sleep(0.01)
        peer = client_bench(a, dim, ready[0])
        stop.append(True)
        t.join()
        local = numpy_bound(a, dim)
        for what in ("pull", "push"):
            ratio = local[what] / ours[what]
            ok = ok and ratio <= 3.0
            print("%-5d %-5s %12.3g %12.3g %12.3g %9.2fx" %
                  (dim, what, ours[what], peer[what], local[what], ratio))
    print("# target: dist-ps within 3x of numpy-local (local/dist <= 3): %s" %
          ("met" if ok else "not met"))


if __name__ == "__main__":
    main()
