"""The tests' one launcher (simmer_test.run) retries a launch only when OpenMPI's own MPI_Init
failed (LAUNCH_FLAKE, a PMIx failure under load seen in a full run), once, and fails as before on
any other failure. A fake program stands in for mpirun: it counts its launches in a file."""
import os
import stat

import pytest

import simmer_test as st


def fake(tmp, fails, message):
    """A program that exits 1 with `message` on stderr on its first `fails` launches, then 0; its
    launches counted in tmp/count."""
    path = os.path.join(tmp, "fake")
    with open(path, "w") as f:
        f.write(f"""#!/bin/sh
n=$(cat {tmp}/count 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {tmp}/count
if [ $n -le {fails} ]; then echo '{message}' >&2; exit 1; fi
echo ran
""")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def launches(tmp):
    with open(os.path.join(tmp, "count")) as f:
        return int(f.read())


def test_launcher_runs_once_more_a_launch_that_died_in_mpi_init(tmp):
    p = st.run(fake(tmp, 1, "*** " + st.LAUNCH_FLAKE), None, [])
    assert p.stdout.strip() == "ran" and launches(tmp) == 2


def test_launcher_runs_once_more_only(tmp):
    with pytest.raises(AssertionError, match="exited 1"):
        st.run(fake(tmp, 2, "*** " + st.LAUNCH_FLAKE), None, [])
    assert launches(tmp) == 2


def test_launcher_does_not_retry_any_other_failure(tmp):
    with pytest.raises(AssertionError, match="exited 1"):
        st.run(fake(tmp, 1, "simmer_mpi: error: data.csv:7: expected 4 fields"), None, [])
    assert launches(tmp) == 1


def test_launcher_does_not_retry_an_expected_failure(tmp):
    p = st.run(fake(tmp, 1, "*** " + st.LAUNCH_FLAKE), None, [], expect=1)
    assert p.returncode == 1 and launches(tmp) == 1
