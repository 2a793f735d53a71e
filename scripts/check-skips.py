#!/usr/bin/env python3
"""Fails when a test suite skipped a test that tests/optional-skips.txt does not allow.

  scripts/check-skips.py SUITE LOG...

LOG is what ctest printed (its "The following tests did not run:" list: skipped, disabled or not
run for any reason) or what a GoogleTest binary printed ("[  SKIPPED ] Suite.Test" lines). Every
test found is listed; the exit status is 1 when one of them has no line in the allow-list for
SUITE, 0 otherwise.
"""
import fnmatch
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
ALLOW_LIST = ROOT / "tests" / "optional-skips.txt"

# A parameterised test's line carries "  # GetParam() = ..." between its name and the reason.
CTEST_ENTRY = re.compile(r"^\s*\d+ - (\S+)(?:\s+#.*)? \(([^()]+)\)\s*$")
# "[  SKIPPED ] Suite.Test (0 ms)", "[  SKIPPED ] Inst/Suite.Test/2, where GetParam() = ..."; not the
# summary "[  SKIPPED ] 3 tests, listed below:".
GTEST_SKIPPED = re.compile(r"^\[  SKIPPED \] ([A-Za-z_0-9/]+\.[A-Za-z_0-9/\"-]+)(?:[ ,].*)?$")


def allow_list():
    """(suites, pattern, reason) per non-comment line."""
    entries = []
    for number, line in enumerate(ALLOW_LIST.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            sys.exit(f"check-skips: {ALLOW_LIST}:{number}: want 'SUITES TEST REASON', got '{line}'")
        entries.append((parts[0].split(","), parts[1], parts[2]))
    return entries


def skipped_tests(text):
    found = {}
    in_ctest_list = False
    for line in text.splitlines():
        if line.startswith("The following tests did not run:"):
            in_ctest_list = True
            continue
        if in_ctest_list:
            match = CTEST_ENTRY.match(line)
            if match:
                found[match.group(1)] = match.group(2)
                continue
            in_ctest_list = False
        match = GTEST_SKIPPED.match(line)
        if match:
            found.setdefault(match.group(1), "Skipped")
    return found


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    suite = sys.argv[1]
    found = {}
    for log in sys.argv[2:]:
        found.update(skipped_tests(pathlib.Path(log).read_text(errors="replace")))
    entries = allow_list()
    unexplained = []
    for test, how in sorted(found.items()):
        reason = next((r for suites, pattern, r in entries
                       if (suite in suites or "*" in suites) and fnmatch.fnmatchcase(test, pattern)),
                      None)
        if reason is None:
            unexplained.append(test)
            print(f"=== {suite}: NOT RUN ({how}), not allowed: {test}")
        else:
            print(f"=== {suite}: not run ({how}), allowed: {test} — {reason}")
    if unexplained:
        print(f"check-skips: {len(unexplained)} test(s) of suite '{suite}' did not run and are not in "
              f"{ALLOW_LIST.relative_to(ROOT)}: {' '.join(unexplained)} (make them run here, or add "
              f"a line 'SUITES TEST REASON' if they cannot run on this machine by design)",
              file=sys.stderr)
        return 1
    print(f"=== {suite}: {len(found)} test(s) not run, all allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
