#!/usr/bin/env python3
"""Tests of bench/paste_tables.py: what it replaces, what it refuses, and that this repository's
documents show every table bench/tables.sh regenerates."""
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = HERE / "paste_tables.py"
REPO = HERE.parent


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def table_file(name, mode="full", failed=False, body="```\nline one\n\nbest rows\n  a 1\n  b 2\n\ntail\n```"):
    return textwrap.dedent(f"""\
        ## {name}: the bench

        Goes to: somewhere.

        Measured 2026-11-25 03:10 UTC, commit abc1234, {mode} mode, 12 s; load average (uptime) before 0.01, after 0.50.
        Method: 5 reps.
        """) + ("**FAILED (exit 1)**: the output below says why.\n" if failed else "") + "\n" + body + "\n"


class PasteTables(unittest.TestCase):
    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp())
        self.root = self.tmp / "repo"
        (self.root / "bench").mkdir(parents=True)
        (self.root / "docs").mkdir()
        # A tables.sh that lists two tables, as the real one's --list prints them.
        (self.root / "bench" / "tables.sh").write_text(
            "echo 'table quick_s full_s in_full where'\necho 'alpha 1 1 yes x'\necho 'beta 1 1 yes y'\n")
        self.readme = self.root / "README.md"
        self.readme.write_text("# Title\n\nkeep me\n<!-- measured: alpha from \"best rows\" -->\nold\n"
                               "<!-- /measured: alpha -->\nkeep me too\n")
        self.bench = self.root / "bench" / "README.md"
        self.bench.write_text("intro\n<!-- measured: alpha -->\nold alpha\n<!-- /measured: alpha -->\n"
                              "middle\n<!-- measured: beta -->\nold beta\n<!-- /measured: beta -->\nend\n")
        self.out = self.tmp / "run"
        self.out.mkdir()
        (self.out / "index.md").write_text("# Measured tables\n\nCommand: `bench/tables.sh --full --out=/tmp/x`.\n")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, name, **kw):
        (self.out / f"{name}.md").write_text(table_file(name, **kw))

    def test_replaces_only_the_blocks_and_is_idempotent(self):
        self.write("alpha")
        self.write("beta")
        r = run(self.out, f"--root={self.root}")
        self.assertEqual(r.returncode, 0, r.stderr)
        head = ("Made by `bench/tables.sh --full` (table `alpha`). Measured 2026-11-25 03:10 UTC, commit "
                "abc1234, full mode, 12 s; load average (uptime) before 0.01, after 0.50. Method: 5 reps.")
        self.assertEqual(self.readme.read_text(),
                         f"# Title\n\nkeep me\n<!-- measured: alpha from \"best rows\" -->\n{head}\n\n"
                         "```\nbest rows\n  a 1\n  b 2\n```\n<!-- /measured: alpha -->\nkeep me too\n")
        bench = self.bench.read_text()
        self.assertIn(f"intro\n<!-- measured: alpha -->\n{head}\n\n```\nline one\n\nbest rows\n", bench)
        self.assertIn("tail\n```\n<!-- /measured: alpha -->\nmiddle\n<!-- measured: beta -->\n", bench)
        self.assertTrue(bench.endswith("<!-- /measured: beta -->\nend\n"))
        self.assertNotIn("old", bench)
        before = (self.readme.read_text(), bench)
        self.assertEqual(run(self.out, f"--root={self.root}").returncode, 0)
        self.assertEqual((self.readme.read_text(), self.bench.read_text()), before)

    def test_paths_of_the_machine_become_relative(self):
        body = f"```\nbest rows\nresults in {self.root}/bench-tables/x, fixtures {self.root}/tests/a.npy, tree /tmp/tmp.AbC123/sys\n```"
        (self.out / "alpha.md").write_text(table_file("alpha", body=body))
        self.write("beta")
        self.assertEqual(run(self.out, f"--root={self.root}").returncode, 0)
        bench = self.bench.read_text()
        self.assertIn("results in bench-tables/x, fixtures tests/a.npy, tree $TMPDIR/sys", bench)
        self.assertNotIn(str(self.root), bench)

    def test_refuses_quick_runs_and_writes_nothing(self):
        self.write("alpha", mode="quick")
        before = self.bench.read_text()
        r = run(self.out, f"--root={self.root}")
        self.assertEqual(r.returncode, 2)
        self.assertIn("a --quick run", r.stderr)
        self.assertEqual(self.bench.read_text(), before)

    def test_failed_bench_leaves_its_block_and_fails(self):
        self.write("alpha")
        self.write("beta", failed=True)
        r = run(self.out, f"--root={self.root}")
        self.assertEqual(r.returncode, 2)
        self.assertIn("bench failed, its blocks left as they were: beta", r.stderr)
        self.assertIn("old beta", self.bench.read_text())
        self.assertNotIn("old alpha", self.bench.read_text())

    def test_unclosed_block_is_an_error_naming_the_line(self):
        self.bench.write_text("a\n<!-- measured: beta -->\nold\n")
        r = run("--check", f"--root={self.root}")
        self.assertEqual(r.returncode, 2)
        self.assertIn("README.md:2: measured block 'beta' is never closed", r.stderr)

    def test_check_names_tables_no_document_shows(self):
        self.bench.write_text("nothing\n")
        r = run("--check", f"--root={self.root}")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no document shows table(s) beta", r.stderr)

    def test_check_refuses_unknown_table_names(self):
        (self.root / "docs" / "x.md").write_text("<!-- measured: gamma -->\n<!-- /measured: gamma -->\n")
        r = run("--check", f"--root={self.root}")
        self.assertEqual(r.returncode, 2)
        self.assertIn("x.md:1: no table named 'gamma'", r.stderr)

    def test_quote_that_matches_nothing_is_an_error(self):
        self.readme.write_text("<!-- measured: alpha from \"no such line\" -->\n<!-- /measured: alpha -->\n")
        self.write("alpha")
        r = run(self.out, f"--root={self.root}")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no line contains \"no such line\"", r.stderr)

    def test_this_repository_shows_every_table(self):
        r = run("--check", f"--root={REPO}")
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
