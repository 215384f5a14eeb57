#!/usr/bin/python3
#===- bench/ps_transport.py - gRPC against ZeroMQ for pull-sized messages -===#
# SPDX-License-Identifier: Apache-2.0
#
# Why the parameter server speaks ZeroMQ (dist_rt/ps.h): the round trip of
# one pull of 4,096 ids (a 32 KiB request, a 185 KB answer of 16-float
# rows) on loopback over gRPC (a generic bytes method, Debian's
# python3-grpcio) and over ZeroMQ (DEALER to ROUTER, Debian's python3-zmq),
# both driven from Python so that the transports alone differ.
#
#   /usr/bin/python3 bench/ps_transport.py [--rounds 2000]

import argparse
import threading
import time
from concurrent import futures

import grpc
import zmq

REQUEST, ANSWER = b"x" * 32768, b"y" * 185000
BIG = [("grpc.max_send_message_length", 1 << 26),
       ("grpc.max_receive_message_length", 1 << 26)]


def grpc_round_trip(rounds):
    server = grpc.server(futures.ThreadPoolExecutor(2), options=BIG)
    handler = grpc.unary_unary_rpc_method_handler(lambda req, ctx: ANSWER)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("ps", {"pull": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    call = grpc.insecure_channel("127.0.0.1:%d" % port,
                                 options=BIG).unary_unary("/ps/pull")
    for _ in range(50):
        call(REQUEST)
    start = time.perf_counter()
    for _ in range(rounds):
        call(REQUEST)
    seconds = (time.perf_counter() - start) / rounds
    server.stop(0)
    return seconds


def zmq_round_trip(rounds):
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    stop = []

    def serve():
        while not stop:
            if router.poll(100):
                identity, _ = router.recv_multipart()
                router.send_multipart([identity, ANSWER])

    thread = threading.Thread(target=serve)
    thread.start()
    dealer = context.socket(zmq.DEALER)
    dealer.connect("tcp://127.0.0.1:%d" % port)
    for _ in range(50):
        dealer.send(REQUEST)
        dealer.recv()
    start = time.perf_counter()
    for _ in range(rounds):
        dealer.send(REQUEST)
        dealer.recv()
    seconds = (time.perf_counter() - start) / rounds
    stop.append(True)
    thread.join()
    dealer.close(0)
    router.close(0)
    context.term()
    return seconds


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=2000)
    a = p.parse_args()
    g, z = grpc_round_trip(a.rounds), zmq_round_trip(a.rounds)
    print("pull-sized round trip on loopback: grpc %.0f us, zeromq %.0f us "
          "(grpc/zeromq %.1fx)" % (g * 1e6, z * 1e6, g / z))


if __name__ == "__main__":
    main()
