"""pytest's fixtures for the Python end-to-end tests (Debian's /usr/bin/python3 -m pytest: h5py,
numpy, scipy, xarray). CTest runs one test function per test (tests/CMakeLists.txt,
simmer_pytest: the test files are the one list of cases); the programs under test come from the
environment CTest sets:
  SIMMER_MPI       the simmer_mpi executable
  SIMMER_ANALYZE   the simmer_analyze executable
  SIMMER_ROOT      the project's root (data/, jobs/)
By hand: SIMMER_MPI=build/src/simmer_mpi SIMMER_ANALYZE=build/src/simmer_analyze SIMMER_ROOT=. \\
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 /usr/bin/python3 -m pytest tests/mpi/test_x.py -k case
"""
import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simmer_test as st  # noqa: E402

# A run whose every selected test was skipped exits with this code (CTest's SKIP_RETURN_CODE):
# a skip names its reason and is never reported as a pass.
SKIPPED_EXIT = 77


def _program(variable):
    value = os.environ.get(variable)
    if not value:
        pytest.fail(f"{variable} is not set: the path of the program under test (see tests/conftest.py)")
    return value


@pytest.fixture(scope="session")
def simmer_mpi():
    """The simmer_mpi executable under test."""
    return _program("SIMMER_MPI")


@pytest.fixture(scope="session")
def simmer_analyze():
    """The simmer_analyze executable under test."""
    return _program("SIMMER_ANALYZE")


@pytest.fixture(scope="session")
def root():
    """The project's root directory (data/, jobs/)."""
    return _program("SIMMER_ROOT")


@pytest.fixture
def tmp():
    """A fresh directory (a str path), removed after the test."""
    with tempfile.TemporaryDirectory() as d:
        yield d


@pytest.fixture(scope="session")
def sanitized():
    """Whether the programs are the sanitizer build (tests may shorten their runs)."""
    return st.SANITIZED


def pytest_collection_modifyitems(config, items):
    """A test that runs alone says why (tests/pytest.ini, `serial`)."""
    for item in items:
        mark = item.get_closest_marker("serial")
        if mark is not None and not (mark.args and isinstance(mark.args[0], str) and mark.args[0].strip()):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.serial needs a reason (what it would disturb)")


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus != 0:
        return
    stats = reporter.stats
    if stats.get("skipped") and not stats.get("passed"):
        session.exitstatus = SKIPPED_EXIT
