#!/usr/bin/env python3
"""Every benchmark program refuses a bad option the way co_up does: one line on stderr,
"PROGRAM: error: ...", naming the option, and exit status 2, before it measures anything.

  bench/bad_options_test.py BINARY OPTION [BINARY OPTION ...]

OPTION is an integer option of that program; the test gives it a word, zero and nothing, and also
passes an option the program does not have.
"""
import os
import subprocess
import sys

problems = []


def expect_refused(binary, argument, names):
    program = os.path.basename(binary)
    run = subprocess.run([binary, argument], capture_output=True, text=True, timeout=60)
    lines = run.stderr.strip().splitlines()
    where = f"{program} {argument}"
    if run.returncode != 2:
        problems.append(f"{where}: exit status {run.returncode}, want 2 (stderr: {run.stderr.strip()[:200]!r})")
    elif len(lines) != 1:
        problems.append(f"{where}: {len(lines)} lines on stderr, want 1: {run.stderr.strip()[:300]!r}")
    elif not lines[0].startswith(program + ": error: ") or names not in lines[0]:
        problems.append(f"{where}: {lines[0]!r} does not start with '{program}: error: ' and name {names!r}")
    elif run.stdout.strip():
        problems.append(f"{where}: printed {run.stdout.strip()[:120]!r} before refusing")


def main(args):
    if len(args) < 2 or len(args) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    for binary, option in zip(args[0::2], args[1::2]):
        for value in ("abc", "0", ""):
            expect_refused(binary, f"--{option}={value}", f"--{option}")
        expect_refused(binary, "--no-such-option=1", "--no-such-option")
    for p in problems:
        print(p)
    print(f"{len(args) // 2} programs, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
