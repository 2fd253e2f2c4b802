"""Every Catch2 test case runs under CTest, exactly once, and an entry that runs nothing fails.

catch_discover_tests cuts a test name at ';' (two CTest entries, neither matching a real test)
and Catch2 reads '[' as a tag: such an entry used to print "No tests ran", exit 0 and count as
passed. This lists every test case of each Catch2 binary, lists CTest's entries (ctest
--show-only=json-v1) and requires:
- one entry named PREFIX + NAME for each test case, running that binary;
- no entry under PREFIX without a test case of that name;
- each entry's command with --warn NoTests (an entry that matches no test case fails), and the
  binary failing when its filter matches nothing;
- every test case running at least one assertion: Catch2 2.x takes one --warn per run, so the
  runner (tests/catch_runner.cpp) adds NoAssertions to every run itself, and its hidden test case
  without an assertion must fail when run.

Environment: SIMMER_CTEST (the ctest executable), SIMMER_BUILD_DIR, and SIMMER_CATCH_BINARIES,
"PREFIX=PATH" pairs separated by '|' (tests/CMakeLists.txt sets them).
"""
import json
import os
import subprocess
import sys



def catch_binaries():
    pairs = [p for p in os.environ.get("SIMMER_CATCH_BINARIES", "").split("|") if p]
    return [tuple(p.split("=", 1)) for p in pairs]


def ctest_tests():
    """CTest's entries as `ctest --show-only=json-v1` lists them (name, command, properties)."""
    out = subprocess.run([os.environ["SIMMER_CTEST"], "--show-only=json-v1"], cwd=os.environ["SIMMER_BUILD_DIR"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["tests"]


def ctest_entries():
    return {t["name"]: t.get("command", []) for t in ctest_tests()}


def listed_test_cases(binary):
    # Catch2 2.x exits with the number of test cases listed.
    out = subprocess.run([binary, "--list-test-names-only"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def problems_of(prefix, binary, entries):
    """What is wrong with the registration of `binary`'s test cases under `prefix` (empty: nothing)."""
    names = listed_test_cases(binary)
    assert names, f"{binary} lists no test cases"
    mine = {n: cmd for n, cmd in entries.items() if n.startswith(prefix)}
    problems = []
    for name in names:
        for bad in (";", "["):
            if bad in name:
                problems.append(f"test case {name!r} has {bad!r} in its name (CTest or Catch2 misreads it)")
        cmd = mine.get(prefix + name)
        if cmd is None:
            problems.append(f"test case {name!r} has no CTest entry {prefix + name!r}")
            continue
        if not cmd or os.path.realpath(cmd[0]) != os.path.realpath(binary):
            problems.append(f"entry {prefix + name!r} runs {cmd[:1]}, not {binary}")
        if not any(cmd[i] == "--warn" and cmd[i + 1] == "NoTests" for i in range(len(cmd) - 1)):
            problems.append(f"entry {prefix + name!r} runs without --warn NoTests")
    listed = {prefix + n for n in names}
    for entry in mine:
        if entry not in listed:
            problems.append(f"CTest entry {entry!r} matches no test case of {binary}")
    # The runner passes Catch2's exit code on (tests/catch_runner.cpp): a filter that matches
    # nothing, under --warn NoTests as every entry runs, must fail.
    empty = subprocess.run([binary, "--warn", "NoTests", "no test case has this name"], capture_output=True, text=True)
    if empty.returncode == 0:
        problems.append(f"{binary} --warn NoTests with a filter matching no test case exits 0: an entry that runs "
                        f"nothing would pass")
    # The runner fails a test case that runs no assertion, on every run (tests/catch_runner.cpp):
    # its hidden case without one, run by its tag, must fail.
    bare = subprocess.run([binary, "[runner]"], capture_output=True, text=True)
    if bare.returncode == 0 or "runner: a test case without an assertion fails" not in bare.stdout:
        problems.append(f"{binary} '[runner]' (a test case without an assertion) exited {bare.returncode}: an "
                        f"entry whose test case runs no assertion would pass\n{bare.stdout[-2000:]}")
    return problems


def test_every_catch2_test_case_is_one_ctest_entry_that_can_fail():
    binaries = catch_binaries()
    assert binaries, "SIMMER_CATCH_BINARIES names no Catch2 binary"
    entries = ctest_entries()
    problems = [p for prefix, binary in binaries for p in problems_of(prefix, binary, entries)]
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)


def test_a_pytest_test_runs_alone_exactly_when_it_is_marked_serial():
    """cmake/SimmerPytest.cmake makes a pytest test RUN_SERIAL when it carries
    @pytest.mark.serial("why") (tests/pytest.ini), and no other: CTest's entries and pytest's
    own collection of the marked tests must agree (a broken collection left every test parallel)."""
    serial, files = set(), set()
    for test in ctest_tests():
        command = test.get("command", [])
        node = next((c for c in command if "::" in c), None)
        if node is None or "pytest" not in command:
            continue
        path, test_id = node.split("::", 1)
        files.add(path)
        if any(p["name"] == "RUN_SERIAL" and p["value"] for p in test.get("properties", [])):
            serial.add((path, test_id))
    assert files, "CTest lists no pytest test"
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                "-m", "serial"] + sorted(files), capture_output=True, text=True)
    assert collected.returncode in (0, 5), f"collecting the serial tests failed:\n{collected.stdout}{collected.stderr}"
    marked = set()
    for line in collected.stdout.splitlines():
        if "::" not in line:
            continue
        relative, test_id = line.strip().split("::", 1)
        path = [f for f in files if f == relative or f.endswith("/" + relative)]
        assert len(path) == 1, f"{line!r}: not one file of CTest's ({path})"
        marked.add((path[0], test_id))
    assert marked, "no test is marked serial (exits: mpirun_signal_loaded, with its four busy loops, is)"
    assert serial == marked, (f"RUN_SERIAL but not marked: {sorted(serial - marked)}; "
                              f"marked but not RUN_SERIAL: {sorted(marked - serial)}")
