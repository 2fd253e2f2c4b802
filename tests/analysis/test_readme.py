#!/usr/bin/python3
"""The README's shell commands, run as a reader runs them (issue 36; a pytest function, one CTest
test: tests/conftest.py says how to run it by hand).

tests: commands  every ```sh block of README.md runs, command by command and in order, verbatim
                 in a fresh copy of the checkout's tracked files (no runs/ directory; build/ a link
                 to the build under test), and every command exits 0. A block is left out only
                 when the line before it says so, with a reason:
                 <!-- readme test: not run (REASON) --> (one that builds, or a synopsis with
                 placeholders).
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

ROOT = st.ROOT
MARK = re.compile(r"<!-- readme test: not run \((.+)\) -->")


def sh_blocks(text):
    """(first line number, lines, reason it is not run or None) of every ```sh block."""
    out, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            before = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
            mark = MARK.search(before)
            body = []
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                body.append(lines[j])
                j += 1
            out.append((i + 2, body, mark.group(1) if mark else None))
            i = j
        i += 1
    return out


def commands(body):
    """The block's commands: its lines, with backslash continuations joined."""
    out, current = [], ""
    for line in body:
        current += line
        if current.endswith("\\"):
            current = current[:-1]
            continue
        if current.strip():
            out.append(current)
        current = ""
    return out


def fresh_copy(dest):
    """The tracked files of the checkout under `dest`, with build/ linking to the build under test."""
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True, check=True).stdout
    for rel in files.decode().split("\0"):
        if not rel or not os.path.isfile(os.path.join(ROOT, rel)):
            continue
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), os.path.join(dest, rel))
    build = os.path.dirname(os.path.dirname(os.path.abspath(st.SIMMER_MPI)))
    os.symlink(build, os.path.join(dest, "build"))


def test_commands(tmp):
    blocks = sh_blocks(open(os.path.join(ROOT, "README.md")).read())
    if len(blocks) < 4:
        st.fail(f"README.md has only {len(blocks)} ```sh blocks")
    work = os.path.join(tmp, "checkout")
    fresh_copy(work)
    ran = 0
    for line, body, reason in blocks:
        if reason:
            print(f"README.md:{line}: not run ({reason})")
            continue
        for command in commands(body):
            p = subprocess.run(["bash", "-c", command], cwd=work, env=st.ENV, capture_output=True, text=True,
                               timeout=600)
            if p.returncode != 0:
                st.fail(f"README.md:{line}: '{command}' exited {p.returncode} in a fresh copy of the checkout:\n"
                        f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
            ran += 1
            print(f"README.md:{line}: ran '{command[:80]}'")
    if ran < 5:
        st.fail(f"only {ran} README commands ran")
