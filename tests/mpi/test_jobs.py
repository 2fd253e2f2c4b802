#!/usr/bin/python3
"""Every job file in jobs/ is a valid configuration whose data load: simmer_mpi --estimate on each
exits 0 and prints its estimate (the paper's cases, the ladder examples), with nothing written.

usage: test_jobs.py SIMMER_MPI PROJECT_ROOT
"""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SIMMER, ROOT = sys.argv[1], sys.argv[2]
jobs = sorted(glob.glob(os.path.join(ROOT, "jobs", "*.ini")))
if len(jobs) < 10:
    st.fail(f"only {len(jobs)} job files found in {ROOT}/jobs")
with tempfile.TemporaryDirectory() as tmp:
    for job in jobs:
        out = os.path.join(tmp, os.path.basename(job)[:-4] + ".h5")
        p = subprocess.run([SIMMER, "--config", job, "--estimate", "--output", out], env=st.ENV, cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0 or "estimate: archive" not in p.stdout:
            st.fail(f"{job}: --estimate exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        if os.path.exists(out):
            st.fail(f"{job}: --estimate wrote {out}")
    print(f"jobs: {len(jobs)} job files validate and load their data")
print("1 passed, 0 failed")
