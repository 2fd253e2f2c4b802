#!/usr/bin/python3
"""Every job file in jobs/ is a valid configuration whose data load (a pytest function, one CTest
test: tests/conftest.py says how to run it by hand).

tests: job_files  simmer_mpi --estimate on each job file exits 0 and prints its estimate (the
                  paper's cases, the ladder examples), with nothing written
"""
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SIMMER, ROOT = st.SIMMER_MPI, st.ROOT


def test_job_files(tmp):
    jobs = sorted(glob.glob(os.path.join(ROOT, "jobs", "*.ini")))
    if len(jobs) < 10:
        st.fail(f"only {len(jobs)} job files found in {ROOT}/jobs")
    for job in jobs:
        out = os.path.join(tmp, os.path.basename(job)[:-4] + ".h5")
        p = subprocess.run([SIMMER, "--config", job, "--estimate", "--output", out], env=st.ENV, cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0 or "estimate: archive" not in p.stdout:
            st.fail(f"{job}: --estimate exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        if os.path.exists(out):
            st.fail(f"{job}: --estimate wrote {out}")
    print(f"jobs: {len(jobs)} job files validate and load their data")
