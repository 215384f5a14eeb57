#!/usr/bin/python3
#===- expect_error.py - Run a command that must fail with one error ------===#
# SPDX-License-Identifier: Apache-2.0
#
# expect_error.py CODE COMMAND [ARG...]
#
# Runs COMMAND and checks that it exits with CODE (it must not be killed by a
# signal), prints nothing on stdout and exactly one line on stderr, and that
# the line starts with "error: ". Prints that line so that FileCheck can
# check the message; on any mismatch, says what was wrong and exits with 1.
#
#===----------------------------------------------------------------------===#
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: expect_error.py CODE COMMAND [ARG...]")
    want = int(sys.argv[1])
    proc = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    problems = []
    if proc.returncode != want:
        problems.append("exit code %d, expected %d" % (proc.returncode, want))
    if out:
        problems.append("stdout is not empty")
    lines = err.splitlines()
    if len(lines) != 1 or not err.endswith("\n"):
        problems.append("stderr has %d lines, expected 1" % len(lines))
    elif not lines[0].startswith("error: "):
        problems.append("stderr does not start with 'error: '")
    if problems:
        sys.stdout.write("expect_error.py: %s\n--- stdout:\n%s--- stderr:\n%s"
                         % ("; ".join(problems), out, err))
        sys.exit(1)
    sys.stdout.write(err)


if __name__ == "__main__":
    main()
