#!/usr/bin/env python3
"""Pastes the tables of one bench/tables.sh run into the documents that show them.

    bench/paste_tables.py OUT_DIR [--root=DIR] [--dry-run]
    bench/paste_tables.py --check [--root=DIR]

A document shows a measured table between two markers, named after the table in tables.sh:

    <!-- measured: ort_modern -->
    ... replaced on every paste ...
    <!-- /measured: ort_modern -->

The opening marker may narrow what is pasted to one paragraph of the bench's output, for a short
quote of a long report (README.md does this): `<!-- measured: pipeline from "best two-stage" -->`
pastes the lines from the first one containing that text to the next blank line.

Every pasted block starts with the run's date, commit, mode, load and method, so a number is never
shown without the code and the conditions that produced it. Only full-mode runs are pasted (quick
mode is a smoke check whose numbers are not for the documents); a table whose bench failed is left
as it was and named in the error. --check verifies that every table tables.sh lists has at least
one marker pair, that markers pair up, and that no marker names a table tables.sh does not list.
Documents searched: README.md, bench/README.md and docs/*.md under --root (default: this
repository).
"""
import argparse
import pathlib
import re
import subprocess
import sys

OPEN = re.compile(r'^<!-- measured: ([a-z0-9_]+)(?: from "([^"]+)")? -->\s*$')
CLOSE = re.compile(r'^<!-- /measured: ([a-z0-9_]+) -->\s*$')


class PasteError(Exception):
    pass


def documents(root):
    docs = [root / "README.md", root / "bench" / "README.md"]
    docs += sorted((root / "docs").glob("*.md"))
    return [d for d in docs if d.is_file()]


def blocks(path):
    """(name, quote, open line index, close line index) for each marker pair of one document."""
    lines = path.read_text().splitlines()
    found, current = [], None
    for i, line in enumerate(lines):
        if m := OPEN.match(line):
            if current:
                raise PasteError(f"{path}:{i + 1}: measured block '{m[1]}' opens inside '{current[0]}' "
                                 f"(line {current[2] + 1}); close that one first")
            current = (m[1], m[2], i)
        elif m := CLOSE.match(line):
            if not current or current[0] != m[1]:
                raise PasteError(f"{path}:{i + 1}: '/measured: {m[1]}' closes no open '{m[1]}' block")
            found.append((*current, i))
            current = None
    if current:
        raise PasteError(f"{path}:{current[2] + 1}: measured block '{current[0]}' is never closed "
                         f"(add '<!-- /measured: {current[0]} -->')")
    return found


def table_names(root):
    out = subprocess.run(["bash", str(root / "bench" / "tables.sh"), "--list"], capture_output=True,
                         text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines()[1:] if line.strip()]


def check(root):
    names = set(table_names(root))
    shown = {}
    for doc in documents(root):
        for name, _, start, _ in blocks(doc):
            if name not in names:
                raise PasteError(f"{doc}:{start + 1}: no table named '{name}' in bench/tables.sh --list")
            shown.setdefault(name, []).append(doc)
    missing = sorted(names - shown.keys())
    if missing:
        raise PasteError("no document shows table(s) " + ", ".join(missing) +
                         ": add a '<!-- measured: NAME -->' block where each belongs")
    return shown


def parse_table(path):
    """The header facts and the body of one table file tables.sh wrote."""
    lines = path.read_text().splitlines()
    measured = next((l for l in lines if l.startswith("Measured ")), None)
    method = next((l for l in lines if l.startswith("Method: ")), None)
    if not measured or not method:
        raise PasteError(f"{path}: not a tables.sh table file (no 'Measured' or 'Method' line)")
    if " quick mode," in measured:
        raise PasteError(f"{path}: a --quick run; its numbers are a smoke check, not for the documents "
                         "(run bench/tables.sh --full)")
    failed = any(l.startswith("**FAILED") for l in lines)
    body_start = lines.index(method) + 1
    while body_start < len(lines) and (not lines[body_start].strip() or lines[body_start].startswith("**")):
        body_start += 1
    return measured, method, failed, lines[body_start:]


def quote(body, text, name):
    """The paragraph of the bench's output that starts at the first line containing text."""
    plain = [l for l in body if not l.startswith("```")]
    start = next((i for i, l in enumerate(plain) if text in l), None)
    if start is None:
        raise PasteError(f"table '{name}': no line contains \"{text}\" (the marker's quote); "
                         "the bench's output changed: update the marker")
    end = next((i for i in range(start, len(plain)) if not plain[i].strip()), len(plain))
    para = plain[start:end]
    return para if para[0].lstrip().startswith("|") else ["```", *para, "```"]


def without_machine_paths(lines, root):
    """The benches print where they ran; the documents say it relative to the repository."""
    here = str(root.resolve())
    out = []
    for line in lines:
        line = line.replace(here + "/", "").replace(here, ".")
        out.append(re.sub(r"/tmp/tmp\.[A-Za-z0-9]+", "$TMPDIR", line))
    return out


def render(name, quote_text, table, command, root):
    measured, method, _, body = table
    head = [f"Made by `{command}` (table `{name}`). {measured} {method}", ""]
    return without_machine_paths(head + (quote(body, quote_text, name) if quote_text else body), root)


def paste(out_dir, root, dry_run):
    index = (out_dir / "index.md").read_text() if (out_dir / "index.md").is_file() else ""
    cmd = re.search(r"^Command: `([^`]+)`", index, re.M)
    if not cmd:
        raise PasteError(f"{out_dir}: no index.md with a 'Command:' line (not a bench/tables.sh output)")
    # Where the run wrote its files says nothing about the numbers, and names a machine's paths.
    command = re.sub(r" --(out|build)=\S+", "", cmd[1])
    check(root)
    tables, failed = {}, []
    for path in sorted(out_dir.glob("*.md")):
        if path.name == "index.md":
            continue
        parsed = parse_table(path)
        if parsed[2]:
            failed.append(path.stem)
        else:
            tables[path.stem] = parsed
    changed = []
    for doc in documents(root):
        lines = doc.read_text().splitlines()
        replaced = False
        for name, quote_text, start, end in reversed(blocks(doc)):
            if name in tables:
                lines[start + 1:end] = render(name, quote_text, tables[name], command, root)
                replaced = True
        if replaced:
            changed.append(doc)
            if not dry_run:
                doc.write_text("\n".join(lines) + "\n")
    return sorted(tables), failed, changed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", nargs="?", type=pathlib.Path)
    ap.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    try:
        if args.check:
            shown = check(args.root)
            print(f"paste_tables: {len(shown)} tables, each shown in "
                  + ", ".join(f"{n} ({len(d)})" for n, d in sorted(shown.items())))
            return 0
        if not args.out_dir or not args.out_dir.is_dir():
            raise PasteError("give the output directory of a bench/tables.sh --full run")
        pasted, failed, changed = paste(args.out_dir, args.root, args.dry_run)
        print(f"paste_tables: pasted {len(pasted)} tables ({', '.join(pasted)}) into "
              + (", ".join(str(c.relative_to(args.root)) for c in changed) or "nothing")
              + (" (dry run: nothing written)" if args.dry_run else ""))
        if failed:
            raise PasteError("bench failed, its blocks left as they were: " + ", ".join(failed))
        return 0
    except (PasteError, OSError, subprocess.CalledProcessError) as e:
        print(f"paste_tables: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
