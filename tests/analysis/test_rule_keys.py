#!/usr/bin/python3
"""Every configuration key the C++ sources name in a string (a rule's refusal, a hint in a message,
a library field's key) is a key of the table, as `simmer_mpi --help` lists them: a renamed or
removed key cannot leave a rule or a message naming the old one (a pytest function, one CTest
test: tests/conftest.py says how to run it by hand).

tests: rule_keys     every key named in a string of src/ and include/ is one --help lists (and
                     --help lists the whole table, at least 80 keys)
       catch2_names  no Catch2 test case's name holds ';' or '[': catch_discover_tests cuts a
                     name at ';' and Catch2 reads '[' as a tag, so such a case becomes CTest
                     entries that run no assertion and pass (issue 38: 12 cases never ran)
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SECTIONS = "data|model|adam|simmer|ensemble|run"
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
KEY = re.compile(r"(?<![\w/.-])(?:--)?((?:" + SECTIONS + r")\.[A-Za-z_][A-Za-z0-9_]*)(?![\w(/-])")
# Not keys: file names and paths that look like one.
NOT_KEYS = {"data.csv", "run.sh", "run.log"}


def test_rule_keys():
    simmer, root = st.SIMMER_MPI, st.ROOT
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    text = subprocess.run([simmer, "--help"], capture_output=True, text=True, env=env, check=True).stdout
    keys = set(re.findall(r"--((?:" + SECTIONS + r")\.[A-Za-z0-9_]+) ", text))
    if len(keys) < 80:
        st.fail(f"--help lists {len(keys)} keys; expected the whole table")
    unknown, named = [], 0
    for top in ("src", "include"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".cpp", ".hpp")):
                    continue
                path = os.path.join(dirpath, name)
                for number, line in enumerate(open(path, encoding="utf-8"), 1):
                    if line.lstrip().startswith("//"):
                        continue
                    for literal in STRING.findall(line):
                        for key in KEY.findall(literal):
                            if key in NOT_KEYS:
                                continue
                            named += 1
                            if key not in keys:
                                unknown.append(f"{os.path.relpath(path, root)}:{number}: '{key}'")
    if unknown:
        st.fail("strings in the sources name keys the table does not have:\n  " + "\n  ".join(unknown))
    print(f"rule keys: {named} key names in the sources' strings, every one a key of the table ({len(keys)} keys)")


def test_catch2_names():
    root = st.ROOT
    case = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')
    found, bad = 0, []
    for folder, _, files in os.walk(os.path.join(root, "tests")):
        for name in files:
            if not name.endswith((".cpp", ".hpp")):
                continue
            path = os.path.join(folder, name)
            for m in case.finditer(open(path, encoding="utf-8").read()):
                found += 1
                if ";" in m.group(1) or "[" in m.group(1):
                    bad.append(f"{os.path.relpath(path, root)}: '{m.group(1)}'")
    if found < 150:
        st.fail(f"only {found} Catch2 test cases found under tests/")
    if bad:
        st.fail("Catch2 test names with ';' or '[' (CTest would run no assertion of them):\n  " + "\n  ".join(bad))
    print(f"{found} Catch2 test case names, none with ';' or '['")
