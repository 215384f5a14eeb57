#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks elastic training: lost ranks, hung ranks, added ranks, crashes.

Compiles train_check.py's GPT-style LM (2 layers, d=64, batch 12 of 16
tokens, static batch) twice with dist-opt --train (AdamW): once for one
process, once with --elastic=2:4 --zero 1 (a dp layout with ZeRO-1 for 2,
3 and 4 ranks). Then, against the per-step losses of one uninterrupted
process (the last record of each step in the --log file counts):

  kill:   dist-launch -np 4 runs the job (--steps); rank R is killed with
          SIGKILL at a random step of its first half (seeded). The job must
          finish on 3 ranks, with every step's loss within --tol of one
          process and at most K (--snapshot-every) steps run twice.
  stop:   the same with SIGSTOP: dist-launch's --timeout finds the rank.
  grow:   a host file offers 2 slots; dist-launch -np 4 starts on 2; the
          file then offers 4 and the job grows to 4 at its next snapshot,
          losing no step.
  etcd:   grow with the hosts kept in etcd (a one-member etcd on loopback,
          keys PREFIX<host> = "slots=N"), and an unreachable store.
  uneven: the GPT exported with a dynamic batch, a global batch of 10 over
          3 and 4 ranks (rows split unevenly, each rank's means weighted by
          its rows): losses within --tol and final parameters within
          --param-tol of one process.
  pipeline: the set compiled with --elastic=2:4 --mesh pp=2 (2 stages at
          2 ranks, dp=3 at 3, 2 stages x dp=2 at 4): killed with SIGKILL
          at 4 ranks, it finishes on 3 without stages, as `kill` checks.
  crash:  the job (snapshots every step) is killed with SIGKILL at random
          moments, several times; after each kill the newest checkpoint
          must load (a resumed run of one step succeeds).
  errors: a bad world size for the layouts, --max-restarts exhausted, a
          job that fails on its own (not restarted), a checkpoint of
          another model, a bad --elastic range: one error line each.

Prints one line per check and `N passed, M failed`; exits non-zero when a
check fails.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_check  # noqa: E402
from script_util import Checks  # noqa: E402

MPI_ARGS = ["--mpi-arg", "--mca", "--mpi-arg", "btl", "--mpi-arg",
            "self,vader", "--mpi-arg", "--bind-to", "--mpi-arg", "none"]
BATCH = 12


def run(cmd, timeout=600, **kw):
    return subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout, **kw)


def read_log(path):
    """Per step, the last record's loss; and how many records each had."""
    losses, counts = {}, {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            losses[r["step"]] = r["loss"]
            counts[r["step"]] = counts.get(r["step"], 0) + 1
    return losses, counts


def record(state, rank):
    """The dist-launch record of a rank: {pid, step, beat, state}."""
    try:
        with open(os.path.join(state, f"rank-{rank}")) as f:
            words = f.read().split()
    except OSError:
        return None
    r = dict(w.split("=", 1) for w in words if "=" in w)
    if "pid" not in r:
        return None
    return {"pid": int(r["pid"]), "step": int(r["step"]),
            "state": r.get("state")}


def wait_for_step(state, ranks, step, proc, deadline=120):
    """Waits until every one of `ranks` ranks is past `step`."""
    end = time.time() + deadline
    while time.time() < end and proc.poll() is None:
        recs = [record(state, k) for k in range(ranks)]
        if all(r and r["step"] >= step for r in recs):
            return recs
        time.sleep(0.02)
    raise RuntimeError(f"the job did not reach step {step}")


class Job:
    def __init__(self, args, work, name):
        self.args, self.work = args, work
        self.dir = os.path.join(work, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.state = os.path.join(self.dir, "state")
        self.log = os.path.join(self.dir, "log.jsonl")
        self.ck = os.path.join(self.dir, "ck")

    def start(self, launch_flags, steps, every):
        shutil.rmtree(self.state, ignore_errors=True)
        cmd = ([self.args.dist_launch, "--state-dir", self.state] + MPI_ARGS +
               launch_flags + ["--", self.args.exe, "train"] +
               self.args.data + ["--batch-size", str(BATCH), "--steps",
                                 str(steps), "--threads", "1", "--quiet",
                                 "--log", self.log, "--checkpoint-dir",
                                 self.ck, "--snapshot-every", str(every)])
        self.out = open(os.path.join(self.dir, "launch.out"), "w")
        self.err_path = os.path.join(self.dir, "launch.err")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=self.err)
        return self.proc

    def finish(self, timeout=300):
        code = self.proc.wait(timeout=timeout)
        self.out.close()
        self.err.close()
        with open(self.err_path) as f:
            lines = [l.strip() for l in f if l.startswith("dist-launch:")]
        return code, lines


def compare(ref, log, steps, every, tol):
    losses, counts = read_log(log)
    missing = [s for s in range(1, steps + 1) if s not in losses]
    worst = max((abs(losses[s] - ref[s]) / max(abs(ref[s]), 1e-30)
                 for s in range(1, steps + 1) if s in losses), default=0.0)
    again = sum(c - 1 for c in counts.values())
    ok = not missing and worst <= tol and again <= every
    return ok, (f"{len(losses)} of {steps} steps, max loss rel err "
                f"{worst:.3g}, {again} steps run twice (K = {every})")


class Attempt:
    """Collects one attempt's reports and notes (in order) instead of
    counting and printing them."""

    def __init__(self):
        self.lines = []

    def report(self, name, ok, detail):
        self.lines.append((name, ok, detail))

    def note(self, text):
        self.lines.append((None, True, text))


def note(checks, text):
    """A line under a check's report: printed, or kept by an Attempt."""
    if isinstance(checks, Attempt):
        checks.note(text)
    else:
        print(text, flush=True)


def with_one_retry(checks, name, run_once):
    """Runs the timing-dependent scenario `run_once(reporter)` (kill, stop,
    grow: where a kill lands against the snapshots, and whether a 2-core
    machine lets the launcher see the host file before the job ends, vary
    from run to run); when an attempt fails, says so in one line and runs
    it once more, whose result counts. A scenario that fails twice fails."""
    first = Attempt()
    try:
        run_once(first)
    except Exception as e:  # report and go on
        first.report(name, False, f"error: {e}")
    if all(ok for _, ok, _ in first.lines):
        for n, ok, detail in first.lines:
            if n is None:
                print(detail, flush=True)
            else:
                checks.report(n, ok, detail)
        return
    for n, ok, detail in first.lines:
        print(detail if n is None else
              f"{n}: first attempt: {detail} (timing; run again)", flush=True)
    run_once(checks)


def check_loss(args, checks, ref, name, signum, victim, at, timeout):
    job = Job(args, args.work, name)
    flags = ["-np", "4"] + (["--timeout", str(timeout)] if timeout else [])
    proc = job.start(flags, args.steps, args.every)
    recs = wait_for_step(job.state, 4, at, proc)
    t_kill = time.time()
    os.kill(recs[victim]["pid"], signum)
    at = record(job.state, victim)["step"]
    code, lines = job.finish()
    restart = [l for l in lines if "restart" in l]
    ok, detail = compare(ref, job.log, args.steps, args.every, args.tol)
    final = [record(job.state, k) for k in range(4)]
    ranks_after = sum(1 for r in final if r and r["state"] == "done")
    ok = ok and code == 0 and len(restart) == 1 and ranks_after == 3
    checks.report(name, ok,
                  f"rank {victim} at step {at}: exit {code}, "
                  f"{len(restart)} restart, finished on {ranks_after} ranks, "
                  + detail)
    if restart:
        note(checks, f"  {restart[0]}")
    return time.time() - t_kill


def kill_step(args, rng):
    """A random step to kill a rank at: after the first snapshot, in the
    first half of the run, so that the kill lands before the job ends
    (the steps take a few ms: the job runs on while the kill is aimed)."""
    return rng.randint(args.every + 1, args.steps // 2)


def check_pipeline(args, checks, ref, onnx_path, flags, rng):
    """The elastic set with pipeline stages, killed as `kill` is."""
    out = os.path.join(args.work, "elastic_pp")
    r = run([args.dist_opt, onnx_path] + flags +
            ["--elastic=2:4", "--mesh", "pp=2", "-o", out, "--name", "gpt"])
    layouts = [l for l in r.stdout.splitlines() if l.startswith("elastic")]
    if r.returncode or not any("pp=2,dp=2" in l for l in layouts):
        checks.report("pipeline", False, "compile: " + (r.stderr.strip() or
                                                        "; ".join(layouts)))
        return
    print("compiled: " + "; ".join(layouts), flush=True)
    saved = args.exe
    args.exe = os.path.join(out, "gpt")
    try:
        check_loss(args, checks, ref, "pipeline", signal.SIGKILL,
                   rng.randint(0, 3), kill_step(args, rng), None)
    finally:
        args.exe = saved


def check_grow(args, checks, ref, store=None):
    """2 -> 4 ranks when the membership offers more slots: a host file, or
    with `store` (an Etcd) the keys under a prefix in etcd."""
    name = "grow" if store is None else "etcd"
    job = Job(args, args.work, name)
    hosts = os.path.join(job.dir, "hosts")

    def offer(slots):
        if store:
            store.put(ETCD_PREFIX + "localhost", f"slots={slots}")
            return
        with open(hosts + ".new", "w") as f:
            f.write(f"localhost slots={slots}\n")
        os.replace(hosts + ".new", hosts)

    offer(2)
    members = (["--etcd", store.endpoint, "--etcd-prefix", ETCD_PREFIX]
               if store else ["--hostfile", hosts])
    proc = job.start(["-np", "4"] + members + ["--mpi-arg", "--oversubscribe"],
                     args.steps, args.every)
    wait_for_step(job.state, 2, args.every + 2, proc)
    offer(4)
    code, lines = job.finish()
    regrow = [l for l in lines if "regrow" in l]
    ok, detail = compare(ref, job.log, args.steps, args.every, args.tol)
    _, counts = read_log(job.log)
    final = [record(job.state, k) for k in range(4)]
    ranks_after = sum(1 for r in final if r and r["state"] == "done")
    again = sum(c - 1 for c in counts.values())
    ok = ok and code == 0 and len(regrow) == 1 and ranks_after == 4 and \
        again == 0
    checks.report(name, ok, f"2 -> 4 ranks: exit {code}, finished on "
                  f"{ranks_after} ranks, " + detail)
    if regrow:
        note(checks, f"  {regrow[0]}")


ETCD_PREFIX = "/dist-launch-check/hosts/"


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Etcd:
    """A one-member etcd on loopback (Debian's etcd-server), for the hosts
    of `etcd`; stopped and its data removed on exit."""

    def __init__(self, work):
        if not shutil.which("etcd") or not shutil.which("etcdctl"):
            raise RuntimeError("etcd or etcdctl is not installed "
                               "(scripts/install-deps.sh installs "
                               "etcd-server and etcd-client)")
        self.data = os.path.join(work, "etcd-data")
        shutil.rmtree(self.data, ignore_errors=True)
        client, peer = free_port(), free_port()
        self.endpoint = f"http://127.0.0.1:{client}"
        peer_url = f"http://127.0.0.1:{peer}"
        self.log = open(os.path.join(work, "etcd.log"), "w")
        self.proc = subprocess.Popen(
            ["etcd", "--name", "check", "--data-dir", self.data,
             "--listen-client-urls", self.endpoint,
             "--advertise-client-urls", self.endpoint,
             "--listen-peer-urls", peer_url,
             "--initial-advertise-peer-urls", peer_url,
             "--initial-cluster", f"check={peer_url}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        end = time.time() + 30
        while run(["etcdctl", "--endpoints=" + self.endpoint,
                   "--dial-timeout=1s", "endpoint", "health"]).returncode:
            if time.time() > end or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("etcd did not start (see etcd.log)")
            time.sleep(0.2)

    def put(self, key, value):
        r = run(["etcdctl", "--endpoints=" + self.endpoint, "put", key, value])
        if r.returncode:
            raise RuntimeError(f"etcdctl put: {r.stderr.strip()}")

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.data, ignore_errors=True)


def reference(args, steps):
    """Per step, the loss of one uninterrupted process."""
    ref_log = os.path.join(args.work, f"one_{steps}.jsonl")
    r = run([args.one_exe, "train"] + args.data +
            ["--batch-size", str(BATCH), "--steps", str(steps),
             "--threads", "1", "--quiet", "--log", ref_log])
    if r.returncode:
        raise RuntimeError(f"one-process run failed: {r.stderr}")
    return read_log(ref_log)[0]


def check_etcd(args, checks, ref):
    """Membership from etcd: the grow of check_grow with the hosts in the
    store, and an unreachable store, no hosts, --etcd with --hostfile or
    an empty prefix: one error line each."""
    store = Etcd(args.work)
    try:
        with_one_retry(checks, "etcd",
                       lambda c: check_grow(args, c, ref, store))
        expect(checks, "etcd unreachable",
               [args.dist_launch, "-np", "2", "--etcd",
                f"http://127.0.0.1:{free_port()}", "--", args.exe, "train"],
               lambda c: True, "cannot read the hosts under "
               "/dist-launch/hosts/: Error: context deadline exceeded")
        expect(checks, "etcd with hostfile",
               [args.dist_launch, "--etcd", store.endpoint, "--hostfile",
                os.path.join(args.work, "hosts"), "--", args.exe, "train"],
               lambda c: True,
               "give --hostfile FILE or --etcd ENDPOINTS, not both")
        expect(checks, "etcd empty prefix",
               [args.dist_launch, "--etcd", store.endpoint, "--etcd-prefix",
                "", "--", args.exe, "train"],
               lambda c: True, "--etcd-prefix expects a key prefix, got ''")
        expect(checks, "etcd without hosts",
               [args.dist_launch, "--etcd", store.endpoint, "--etcd-prefix",
                "/nothing/here/", "--", args.exe, "train"],
               lambda c: True, "no host under /nothing/here/")
    finally:
        store.close()


def check_uneven(args, checks, flags):
    """A dynamic batch of 10 over 3 and 4 ranks (rows 3/3/4, 2/3/2/3):
    losses and final parameters against one process."""
    d = os.path.join(args.work, "uneven")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    spec = train_check.make_spec("gpt")
    spec.dynamic_batch = True
    spec.batch = 10
    onnx_path = os.path.join(d, "gpt.onnx")
    train_check.export_onnx(spec, onnx_path)
    for out, extra in (("one", []), ("el", ["--elastic=2:4", "--zero", "1"])):
        r = run([args.dist_opt, onnx_path] + flags + extra +
                ["-o", os.path.join(d, out), "--name", "gpt"])
        if r.returncode:
            raise RuntimeError(r.stderr.strip())
    steps = 20

    def train(exe, tag, launcher):
        log = os.path.join(d, tag + ".jsonl")
        save = os.path.join(d, tag + "_params")
        r = run(launcher + [exe, "train"] + args.data +
                ["--batch-size", "10", "--steps", str(steps), "--threads",
                 "1", "--quiet", "--log", log, "--save-params", save])
        if r.returncode:
            raise RuntimeError(r.stderr.strip()[-400:])
        losses, _ = read_log(log)
        return losses, save

    ref, ref_save = train(os.path.join(d, "one", "gpt"), "one", [])
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca",
              "btl", "self,vader", "--bind-to", "none"]
    for ranks in (3, 4):
        got, save = train(os.path.join(d, "el", "gpt"), f"np{ranks}",
                          mpirun + ["-np", str(ranks)])
        loss_err = max(abs(got[s] - ref[s]) / abs(ref[s])
                       for s in range(1, steps + 1))
        param_err = 0.0
        for n in sorted(os.listdir(ref_save)):
            a = np.load(os.path.join(ref_save, n))
            b = np.load(os.path.join(save, n))
            param_err = max(param_err, float(np.abs(a - b).max()) /
                            max(float(np.abs(a).max()), 1e-30))
        checks.report(f"uneven {ranks} ranks", loss_err <= args.tol and
                      param_err <= args.param_tol,
                      f"batch 10 over {ranks} ranks, {steps} steps: max loss "
                      f"rel err {loss_err:.3g}, max param rel err "
                      f"{param_err:.3g}")


def check_crash(args, checks):
    rng = random.Random(args.seed + 1)
    job = Job(args, args.work, "crash")
    loadable, mid_write, stale = 0, 0, 0
    for attempt in range(args.crashes):
        left = set(os.listdir(job.ck)) if os.path.isdir(job.ck) else set()
        left = {n for n in left if n.startswith(".tmp-")}
        proc = job.start(["-np", "2", "--max-restarts", "0"], 10 ** 6, 1)
        wait_for_step(job.state, 2, newest_step(job.ck) + 3
                      if left else 3, proc)
        # A checkpoint saved since: the half-written ones are gone.
        stale += len(left & set(os.listdir(job.ck)))
        time.sleep(rng.uniform(0.0, 0.3))
        rec = record(job.state, 0)
        os.kill(rec["pid"], signal.SIGKILL)
        job.finish()
        if any(n.startswith(".tmp-") for n in os.listdir(job.ck)):
            mid_write += 1
        # The newest checkpoint loads: one more step from it, alone.
        r = run([args.one_exe, "train"] + args.data +
                ["--batch-size", str(BATCH), "--resume", job.ck,
                 "--steps", str(newest_step(job.ck) + 1), "--threads", "1",
                 "--quiet"])
        if r.returncode == 0:
            loadable += 1
        else:
            print(f"  resume failed: {r.stderr.strip()}", flush=True)
    checks.report("crash", loadable == args.crashes and stale == 0,
                  f"{args.crashes} kills during snapshots every step "
                  f"({mid_write} left a half-written one, {stale} of those "
                  f"still there after the next snapshot): newest "
                  f"checkpoint loadable after {loadable}")


def newest_step(ck):
    with open(os.path.join(ck, "latest")) as f:
        return int(f.read().strip().split("-")[1])


def expect(checks, name, cmd, code_ok, text, **kw):
    r = run(cmd, **kw)
    lines = [l for l in (r.stderr + r.stdout).splitlines()
             if text in l]
    ok = r.returncode != 0 and lines and code_ok(r.returncode)
    checks.report(f"error {name}", bool(ok),
                  f"exit {r.returncode}: " + (lines[0] if lines else
                                              (r.stderr.strip()[-300:])))


def check_errors(args, checks, onnx_path):
    d = os.path.join(args.work, "errors")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca",
              "btl", "self,vader"]
    expect(checks, "world size", mpirun + ["-np", "5", args.exe, "train"] +
           args.data + ["--batch-size", str(BATCH), "--steps", "1"],
           lambda c: True, "has layouts for 2 to 4 ranks")
    expect(checks, "fewer than the layouts",
           [args.dist_launch, "-np", "1"] + MPI_ARGS +
           ["--", args.exe, "train"] + args.data +
           ["--batch-size", str(BATCH), "--steps", "1"],
           lambda c: True, "fewer than the smallest layout")
    # A job that fails on its own is not restarted.
    expect(checks, "job failure",
           [args.dist_launch, "-np", "2"] + MPI_ARGS +
           ["--", args.exe, "train", "--data", "idx=/nonexistent.npy",
            "--data", args.data[3], "--batch-size", str(BATCH),
            "--steps", "1"],
           lambda c: True, "no rank was lost: not restarting")
    # Restarts exhausted: every restart loses a rank again.
    job = Job(args, args.work, "exhausted")
    proc = job.start(["-np", "3", "--max-restarts", "0"], 10 ** 6, 5)
    recs = wait_for_step(job.state, 3, 2, proc)
    os.kill(recs[1]["pid"], signal.SIGKILL)
    code, lines = job.finish()
    gave_up = [l for l in lines if "--max-restarts 0 exhausted" in l]
    checks.report("error max-restarts", code != 0 and len(gave_up) == 1,
                  f"exit {code}: " + (gave_up[0] if gave_up else
                                      " | ".join(lines)))
    # dist-launch's own command line.
    expect(checks, "launch timeout",
           [args.dist_launch, "-np", "2", "--timeout", "0", "--",
            args.exe, "train"], lambda c: True,
           "--timeout expects a positive number of seconds, got '0'")
    expect(checks, "launch without program",
           [args.dist_launch, "-np", "2"], lambda c: True,
           "no program to run")
    expect(checks, "launch hostfile",
           [args.dist_launch, "--hostfile", os.path.join(d, "nohosts"),
            "--", args.exe, "train"], lambda c: True,
           "--hostfile: cannot read")
    # A checkpoint of another model.
    other = os.path.join(d, "other.onnxtext")
    with open(other, "w") as f:
        f.write(OTHER_MODEL)
    odir = os.path.join(d, "other")
    r = run([args.dist_opt, other, "--train", "--loss=mse", "-o", odir,
             "--name", "other"])
    assert r.returncode == 0, r.stderr
    x, y = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    np.save(x, np.ones((4, 3), np.float32))
    np.save(y, np.ones((4, 2), np.float32))
    ck = os.path.join(d, "ck")
    r = run([os.path.join(odir, "other"), "train", "--data", f"x={x}",
             "--data", f"label={y}", "--steps", "2", "--checkpoint-dir", ck,
             "--checkpoint-every", "1", "--quiet"])
    assert r.returncode == 0, r.stderr
    expect(checks, "checkpoint of another model",
           [args.dist_launch, "-np", "2"] + MPI_ARGS +
           ["--", args.exe, "train"] + args.data +
           ["--batch-size", str(BATCH), "--steps", "3", "--resume", ck],
           lambda c: True, "is of model 'other', not 'gpt'")
    expect(checks, "elastic range",
           [args.dist_opt, onnx_path, "--train", "--loss=cross_entropy",
            "--elastic=3:2", "-o", os.path.join(d, "bad")],
           lambda c: True, "--elastic: expected MIN:MAX")
    expect(checks, "elastic with --mesh",
           [args.dist_opt, onnx_path, "--train", "--loss=cross_entropy",
            "--elastic=2:4", "--mesh", "tp=2", "-o", os.path.join(d, "bad")],
           lambda c: True, "--mesh with other axes and --plan")
    expect(checks, "elastic stages with ZeRO",
           [args.dist_opt, onnx_path, "--train", "--loss=cross_entropy",
            "--elastic=2:4", "--mesh", "pp=2", "--zero", "1", "-o",
            os.path.join(d, "bad")],
           lambda c: not os.path.exists(os.path.join(d, "bad", "gpt.dp2")),
           "ZeRO with pipeline stages is not supported yet")
    # The largest layout is compiled last: a failure writes no set.
    bad = os.path.join(d, "bad")
    expect(checks, "uneven batch",
           [args.dist_opt, onnx_path, "--train", "--loss=cross_entropy",
            "--elastic=4:5", "-o", bad],
           lambda c: not os.path.exists(os.path.join(bad, "gpt")) and
           not os.path.exists(os.path.join(bad, "gpt.params")),
           "the layout for 5 ranks did not compile")


# A model of another shape, for "checkpoint of another model".
OTHER_MODEL = """<
  ir_version: 8,
  opset_import: ["" : 17]
>
other (float[4, 3] x) => (float[4, 2] y) <float[3, 2] w = {1, 2, 3, 4, 5, 6}> {
  y = MatMul(x, w)
}
"""


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n")[0])
    p.add_argument("--dist-opt", default=train_check.DEFAULT_DIST_OPT)
    p.add_argument("--dist-launch", default=None)
    p.add_argument("--work", required=True)
    p.add_argument("--steps", type=int, default=400,
                   help="steps of the kill, stop, grow and pipeline jobs "
                   "(a few ms each: enough that a kill aimed at the first "
                   "half lands before the end)")
    p.add_argument("--every", type=int, default=5,
                   help="--snapshot-every of the jobs (K)")
    p.add_argument("--tol", type=float, default=1e-5)
    p.add_argument("--param-tol", type=float, default=5e-5,
                   help="bound on final parameters (AdamW divides each "
                   "gradient by its running RMS: see data-parallel.test)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--crashes", type=int, default=4)
    p.add_argument("--check", nargs="+",
                   default=["kill", "stop", "grow", "etcd", "uneven",
                            "pipeline", "crash", "errors"],
                   choices=["kill", "stop", "grow", "etcd", "uneven",
                            "pipeline", "crash", "errors"])
    args = p.parse_args(argv)
    if args.dist_launch is None:
        args.dist_launch = os.path.join(os.path.dirname(args.dist_opt),
                                        "dist-launch")
    os.makedirs(args.work, exist_ok=True)
    rng = random.Random(args.seed)

    spec = train_check.make_spec("gpt")
    spec.batch = BATCH
    rs = np.random.RandomState(1)
    idx = rs.randint(0, 128, size=(BATCH * 8, 16)).astype(np.int64)
    lab = rs.randint(0, 128, size=(BATCH * 8, 16)).astype(np.int64)
    spec.x, spec.y = idx, lab
    x_path = os.path.join(args.work, "idx.npy")
    y_path = os.path.join(args.work, "label.npy")
    np.save(x_path, idx)
    np.save(y_path, lab)
    args.data = ["--data", f"idx={x_path}", "--data", f"label={y_path}"]
    onnx_path = os.path.join(args.work, "gpt.onnx")
    train_check.export_onnx(spec, onnx_path)
    hp = train_check.hyperparameters("adamw", train_check.parse_args([]))
    flags = train_check.compile_args("adamw", hp, train_check.parse_args([]))
    one = os.path.join(args.work, "one")
    el = os.path.join(args.work, "elastic")
    for out, extra in ((one, []), (el, ["--elastic=2:4", "--zero", "1"])):
        r = run([args.dist_opt, onnx_path] + flags + extra +
                ["-o", out, "--name", "gpt"])
        if r.returncode:
            sys.exit(f"dist-opt failed: {r.stderr}")
    print("compiled: " + "; ".join(
        l for l in r.stdout.splitlines() if l.startswith("elastic")),
        flush=True)
    args.exe = os.path.join(el, "gpt")
    args.one_exe = os.path.join(one, "gpt")
    try:
        ref = reference(args, args.steps)
    except RuntimeError as e:
        sys.exit(str(e))

    checks = Checks()
    for name in args.check:
        try:
            if name in ("kill", "stop"):
                at = kill_step(args, rng)
                victim = rng.randint(0, 3)
                signum = signal.SIGKILL if name == "kill" else signal.SIGSTOP
                timeout = None if name == "kill" else 3
                with_one_retry(checks, name, lambda c: check_loss(
                    args, c, ref, name, signum, victim, at, timeout))
            elif name == "grow":
                with_one_retry(checks, name,
                               lambda c: check_grow(args, c, ref))
            elif name == "etcd":
                check_etcd(args, checks, ref)
            elif name == "uneven":
                check_uneven(args, checks, flags)
            elif name == "pipeline":
                check_pipeline(args, checks, ref, onnx_path, flags, rng)
            elif name == "crash":
                check_crash(args, checks)
            elif name == "errors":
                check_errors(args, checks, onnx_path)
        except Exception as e:  # report and go on
            checks.report(name, False, f"error: {e}")
    print(f"{checks.passed} passed, {checks.failed} failed", flush=True)
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
