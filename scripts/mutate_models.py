#!/usr/bin/python3
# ===- scripts/mutate_models.py - importer robustness on mutated models ---===#
# SPDX-License-Identifier: Apache-2.0
#
# Feeds dist-opt deterministic mutations of valid models (bit flips, byte
# overwrites, truncations, splices, random bytes) and checks the contract for
# bad input: exit code 0, or exit code 1 with exactly one stderr line that
# starts with "error: "; never a signal, another exit code or a hang.
#
#   mutate_models.py --dist-opt PATH --count N MODEL [MODEL ...]
import argparse
import os
import random
import subprocess
import sys
import tempfile


def mutations(data, rng, count):
    """Yields (label, bytes) pairs."""
    for i in range(count):
        kind = i % 5
        buf = bytearray(data)
        if kind == 0 and buf:
            for _ in range(rng.randint(1, 8)):
                pos = rng.randrange(len(buf))
                buf[pos] ^= 1 << rng.randrange(8)
            yield "bitflip", bytes(buf)
        elif kind == 1 and buf:
            pos = rng.randrange(len(buf))
            n = rng.randint(1, 16)
            buf[pos:pos + n] = bytes(rng.randrange(256) for _ in range(n))
            yield "overwrite", bytes(buf)
        elif kind == 2:
            yield "truncate", bytes(buf[:rng.randrange(len(buf) + 1)])
        elif kind == 3 and buf:
            a = rng.randrange(len(buf))
            b = rng.randrange(len(buf))
            yield "splice", bytes(buf[:a] + buf[b:])
        else:
            yield "random", bytes(rng.randrange(256)
                                  for _ in range(rng.randint(0, 512)))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dist-opt", required=True)
    parser.add_argument("--count", type=int, default=100,
                        help="mutations per model")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            ext = os.path.splitext(model)[1]
            with open(model, "rb") as f:
                data = f.read()
            for n, (label, blob) in enumerate(mutations(data, rng,
                                                        args.count)):
                path = os.path.join(tmp, "m%d%s" % (n, ext))
                with open(path, "wb") as f:
                    f.write(blob)
                cmd = [args.dist_opt, path, "-o", os.devnull,
                       "--params-file=" + os.path.join(tmp, "p.params")]
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True,
                                       errors="replace", timeout=args.timeout)
                except subprocess.TimeoutExpired:
                    failed += 1
                    print("FAIL %s #%d (%s): timeout" % (model, n, label))
                    continue
                lines = r.stderr.splitlines()
                ok = r.returncode == 0 or (
                    r.returncode == 1 and len(lines) == 1 and
                    lines[0].startswith("error: "))
                if ok:
                    passed += 1
                else:
                    failed += 1
                    keep = os.path.join(tempfile.gettempdir(),
                                        "dist-mutant-%d-%d%s" % (
                                            os.getpid(), n, ext))
                    with open(keep, "wb") as f:
                        f.write(blob)
                    print("FAIL %s #%d (%s): exit %d, %d stderr lines: %s "
                          "(input kept in %s)" % (
                              model, n, label, r.returncode, len(lines),
                              " | ".join(lines[:3]), keep))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
