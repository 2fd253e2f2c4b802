#!/usr/bin/python3
"""The documentation a user reads (a pytest function, one CTest test: tests/conftest.py says how to
run it by hand).

tests: links  every relative link of every Markdown file resolves (files and #anchors), and the
              README is a front page (at most 300 lines, no issue numbers); every failure is
              listed before the test fails
       no_outside_references  no tracked text file (documents, jobs, code, tests, scripts) names a
              file outside the repository ("SIMMERING.md", "../shared/", "shared/docs/": the
              method is docs/METHOD.md); every hit is listed as file:line
       checkpoint_format  ARCHITECTURE.md quotes the checkpoint format the code writes
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

ROOT = os.path.abspath(st.ROOT) if st.ROOT else ""
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)  # no headings inside code blocks
    return {slug(m.group(1)) for m in re.finditer(r"^#+ +(.+)$", text, flags=re.M)}


def markdown_files():
    out = subprocess.run(["git", "ls-files", "*.md", "**/*.md"], cwd=ROOT, capture_output=True, text=True).stdout
    files = sorted(set(out.split()))
    # Files this change adds and git does not track yet (a test run before the commit).
    for d in ("", "docs", "jobs", "analysis"):
        for name in os.listdir(os.path.join(ROOT, d)):
            rel = os.path.join(d, name) if d else name
            if name.endswith(".md") and rel not in files:
                files.append(rel)
    return files


def broken_links(failures):
    """Appends to `failures` every relative link that does not resolve; returns how many were checked."""
    checked = 0
    for rel in markdown_files():
        path = os.path.join(ROOT, rel)
        with open(path, encoding="utf-8") as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z]+://", target) or target.startswith("mailto:"):
                continue
            checked += 1
            where, _, anchor = target.partition("#")
            file = os.path.normpath(os.path.join(os.path.dirname(path), where)) if where else path
            if not os.path.exists(file):
                failures.append(f"{rel}: link '{target}' names {os.path.relpath(file, ROOT)}, which does not exist")
            elif anchor and file.endswith(".md") and anchor not in anchors(file):
                failures.append(f"{rel}: link '{target}': {os.path.relpath(file, ROOT)} has no heading #{anchor}")
    return checked


def test_links():
    failures = []
    checked = broken_links(failures)
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    lines = readme.count("\n")
    if lines > 300:
        failures.append(f"README.md has {lines} lines; a front page has at most 300")
    for m in re.finditer(r"\b[Ii]ssue \d+", readme):
        failures.append(f"README.md mentions '{m.group(0)}': user documents do not speak of the tracker")

    for failure in failures:
        print("FAIL:", failure)
    if failures:
        st.fail(f"{len(failures)} check(s) failed:\n  " + "\n  ".join(failures))
    print(f"docs: {checked} relative links in {len(markdown_files())} Markdown files resolve; README {lines} lines")


# What names a file outside the repository: the team's shared folder (../shared), whose method
# specification the repository now states itself in docs/METHOD.md.
OUTSIDE = ("SIMMERING.md", "../shared/", "shared/docs/")
# Recorded data, kept byte for byte (the paper's job files as they were, test archives): not prose.
RECORDED = ("tests/data/paper_jobs/", "tests/data/archives/")
# (file, pattern) -> why the reference is needed (e.g. a script that reads ../shared at run time).
# Empty: every reference has been replaced by one inside the repository.
ALLOWED = {}


def repository_files():
    """Tracked files, and files a change adds that git does not track yet (not the ignored ones)."""
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         capture_output=True, text=True, check=True).stdout
    return sorted(set(name for name in out.split("\0") if name))


def test_no_outside_references():
    this = os.path.relpath(os.path.abspath(__file__), ROOT)
    hits, scanned = [], 0
    for rel in repository_files():
        path = os.path.join(ROOT, rel)
        if rel == this or rel.startswith(RECORDED) or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue  # binary
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # not text
        scanned += 1
        for number, line in enumerate(text.splitlines(), 1):
            for pattern in OUTSIDE:
                if pattern in line and (rel, pattern) not in ALLOWED:
                    hits.append(f"{rel}:{number}: '{pattern}': {line.strip()[:100]}")

    for hit in hits:
        print("FAIL:", hit)
    if hits:
        st.fail(f"{len(hits)} reference(s) to files outside the repository (the method is docs/METHOD.md; "
                f"describe the content or name a file in the repository):\n  " + "\n  ".join(hits))
    print(f"docs: {scanned} text files name no file outside the repository")


def test_checkpoint_format():
    """ARCHITECTURE.md quotes the checkpoint format the code writes (io::kCheckpointFormat)."""
    with open(os.path.join(ROOT, "include/simmer/io/checkpoint_file.hpp"), encoding="utf-8") as f:
        code = re.search(r"kCheckpointFormat = (\d+);", f.read())
    with open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8") as f:
        quoted = re.findall(r"`io::kCheckpointFormat`, (\d+)", f.read())
    if code is None or not quoted:
        st.fail("no checkpoint format found in include/simmer/io/checkpoint_file.hpp or ARCHITECTURE.md "
                "('`io::kCheckpointFormat`, N')")
    wrong = [q for q in quoted if q != code.group(1)]
    if wrong:
        st.fail(f"ARCHITECTURE.md quotes checkpoint format {', '.join(wrong)}; the code writes {code.group(1)}")
    print(f"docs: ARCHITECTURE.md quotes checkpoint format {code.group(1)}, as the code writes")
