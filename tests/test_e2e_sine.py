#!/usr/bin/python3
"""simmer_sine at reduced length, end to end (a pytest function, one CTest test: tests/conftest.py
says how to run it by hand; the program's path is in the environment variable SIMMER_SINE).

tests: simmer_sine_reduced  exits 0, prints finite losses, and learns the sine: the ensemble's
                            test MSE is far below the targets' variance (~0.5 for sin(2 pi x) on
                            [-1, 1]) and near the noise (sd 0.1, variance 0.01). (It replaced a pass
                            regular expression, which ignored the exit code and accepted any number.)
"""
import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simmer_test as st  # noqa: E402


@pytest.fixture
def simmer_sine():
    """The simmer_sine executable (SIMMER_SINE, as CTest passes it)."""
    value = os.environ.get("SIMMER_SINE")
    if not value:
        pytest.fail("SIMMER_SINE is not set: the path of the simmer_sine executable (build/src/simmer_sine)")
    return value


def test_simmer_sine_reduced(simmer_sine):
    p = subprocess.run([simmer_sine, "--adam-epochs", "300", "--steps", "2000", "--window", "500"],
                       capture_output=True, text=True, timeout=300)
    print(p.stdout, p.stderr)
    if p.returncode != 0:
        st.fail(f"simmer_sine exited {p.returncode}")
    m = re.search(r"ensemble last SSE +([0-9.eE+-]+) +test MSE ([0-9.eE+-]+)", p.stdout)
    a = re.search(r"Adam +train SSE +([0-9.eE+-]+) +test MSE ([0-9.eE+-]+)", p.stdout)
    if not m or not a:
        st.fail("the output has no Adam and ensemble lines")
    values = [float(x) for x in (*a.groups(), *m.groups())]
    if not all(v == v and abs(v) < float("inf") for v in values):
        st.fail(f"a loss is not finite: {values}")
    ensemble_mse = values[3]
    if not ensemble_mse < 0.1:
        st.fail(f"the ensemble's test MSE {ensemble_mse} is not below 0.1: it did not learn the sine")
    print(f"e2e: exit 0, finite losses, ensemble test MSE {ensemble_mse} < 0.1")
