#!/usr/bin/python3
#===- scripts/check_plan_html.py - Render plan.html in headless Chromium ---===#
# SPDX-License-Identifier: Apache-2.0
#
"""Checks that a plan.html written by `dist-opt --plan-html` renders.

Opens the page in headless Chromium (Debian's `chromium`) with a fresh
profile, dumps the DOM after the page settled, and checks that:
  - Chromium exited with status 0 within 60 s,
  - the DOM has <svg id="placement"> with at least one <rect class="layer">
    and <svg id="timeline"> with at least one <rect class="bar">,
  - no element loads anything over the network (src/href to http:, https:
    or //),
  - Chromium logged no console message. It logs every console message at
    INFO level ("INFO:CONSOLE"), whatever its level, and the page has no
    scripts, so any message (an uncaught exception, console.error, a
    blocked resource) fails the check.

Usage:
  /usr/bin/python3 scripts/check_plan_html.py out/plan.html

Prints one line, `plan.html renders: N placement boxes, M timeline bars`
and exits with 0, or `error: ...` and exits with 1.
"""

import argparse
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_util import one_line  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
TIMEOUT_S = 60


class Fail(Exception):
    """A check failed; the message is the one-line reason."""


class DomCounter(html.parser.HTMLParser):
    """Counts the layer boxes and timeline bars in the dumped DOM and
    collects attributes that would load something over the network."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.svgs = {}  # id -> {"rects": n, "marked": n}
        self.stack = []  # ids of the open <svg> elements ("" without one)
        self.remote = []

    def handle_starttag(self, tag, attrs):
        self._element(tag, attrs, closed=False)

    def handle_startendtag(self, tag, attrs):
        self._element(tag, attrs, closed=True)

    def handle_endtag(self, tag):
        if tag == "svg" and self.stack:
            self.stack.pop()

    def _element(self, tag, attrs, closed):
        attrs = dict(attrs)
        for name in ("src", "href", "xlink:href"):
            value = (attrs.get(name) or "").strip().lower()
            if value.startswith(("http:", "https:", "//")):
                self.remote.append(f"<{tag} {name}=\"{attrs[name]}\">")
        if tag == "svg":
            svg_id = attrs.get("id") or ""
            self.svgs.setdefault(svg_id, {"rects": 0, "marked": 0})
            if not closed:
                self.stack.append(svg_id)
            return
        if tag != "rect" or not self.stack:
            return
        counts = self.svgs[self.stack[0]]
        counts["rects"] += 1
        wanted = {"placement": "layer", "timeline": "bar"}.get(self.stack[0])
        if wanted and wanted in (attrs.get("class") or "").split():
            counts["marked"] += 1


def render(page):
    """Runs Chromium on `page`; returns (dumped DOM, stderr)."""
    if not os.path.exists(CHROMIUM):
        raise Fail(f"{CHROMIUM} is missing (apt-get install chromium)")
    profile = tempfile.mkdtemp(prefix="check-plan-html-")
    cmd = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=2000",
           "--no-first-run", f"--user-data-dir={profile}", "--dump-dom",
           "file://" + os.path.abspath(page)]
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True,
                              errors="replace", timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Fail(f"chromium did not finish within {TIMEOUT_S} s")
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-3:])
        raise Fail(f"chromium exited with status {proc.returncode}: "
                   f"{one_line(tail)}")
    return proc.stdout, proc.stderr


def console_errors(stderr):
    """Console messages Chromium logged (see the module docstring)."""
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line or "Uncaught" in line]


def check(page):
    """Checks `page`; returns the success line or raises Fail."""
    if not os.path.isfile(page):
        raise Fail(f"{page}: no such file")
    dom, stderr = render(page)
    messages = console_errors(stderr)
    if messages:
        more = f" (and {len(messages) - 1} more)" if len(messages) > 1 else ""
        # Drop Chromium's "[pid:tid:time:INFO:CONSOLE:1] " prefix.
        first = messages[0].split("] ", 1)[-1]
        raise Fail(f"console message: {one_line(first)}{more}")

    counter = DomCounter()
    counter.feed(dom)
    counter.close()
    if counter.remote:
        raise Fail(f"the page loads from the network: {counter.remote[0]}")
    counts = {}
    for svg_id, what in (("placement", "layer"), ("timeline", "bar")):
        svg = counter.svgs.get(svg_id)
        if svg is None:
            raise Fail(f"no <svg id=\"{svg_id}\"> in the rendered page")
        if svg["rects"] == 0 or svg["marked"] == 0:
            raise Fail(f"<svg id=\"{svg_id}\"> has no <rect class=\"{what}\">")
        counts[svg_id] = svg["marked"]
    return (f"plan.html renders: {counts['placement']} placement boxes, "
            f"{counts['timeline']} timeline bars")


def main():
    parser = argparse.ArgumentParser(
        description="Check that a plan.html renders in headless Chromium.")
    parser.add_argument("page", help="the plan.html to check")
    args = parser.parse_args()
    try:
        print(check(args.page))
    except Fail as e:
        print(f"error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
