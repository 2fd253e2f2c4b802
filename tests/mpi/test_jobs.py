#!/usr/bin/python3
"""Every job file in jobs/ is a valid configuration whose data load (a pytest function, one CTest
test: tests/conftest.py says how to run it by hand).

tests: job_files     simmer_mpi --estimate on each job file exits 0 and prints its estimate (the
                     paper's cases, the ladder examples), with nothing written
       paper_config  each job file's effective configuration (simmer_mpi --print-config: every
                     key, defaults included) is, key by key, the one recorded in
                     tests/data/paper_jobs/ when the defaults were the paper's: a change of a
                     default cannot change what a paper job computes (the archive is a function
                     of this configuration and the code). A key added to the table later must be
                     added to each recorded file with the value that keeps the paper's computation.
       paper_archive  two paper jobs (sine retrofit; the Iris ladder), shortened, write the same
                     archive field by field (st.archive_differences; provenance and the
                     configuration file's own fingerprint aside) from the job file as from its
                     recorded configuration
"""
import glob
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SIMMER, ROOT = st.SIMMER_MPI, st.ROOT


PAPER_JOBS = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(ROOT, "tests", "data", "paper_jobs", "*.ini")))


def ini_values(text):
    """{'section.key': value} of an effective INI (every key written once, no comments but the header)."""
    values, section = {}, ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line[1:-1]
            continue
        key, _, value = line.partition("=")
        values[f"{section}.{key.strip()}"] = value.strip()
    return values


@pytest.mark.parametrize("job", PAPER_JOBS, ids=lambda job: f"config_{job}")
def test_paper_config(job):
    recorded = ini_values(open(os.path.join(ROOT, "tests", "data", "paper_jobs", job + ".ini")).read())
    p = subprocess.run([SIMMER, "--config", os.path.join("jobs", job + ".ini"), "--print-config"], env=st.ENV,
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        st.fail(f"jobs/{job}.ini: --print-config exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    now = ini_values(p.stdout)
    if len(recorded) < 80:
        st.fail(f"tests/data/paper_jobs/{job}.ini holds only {len(recorded)} keys")
    problems = [f"{k}: recorded '{v}', now '{now.get(k, '(no such key)')}'" for k, v in recorded.items()
                if now.get(k) != v]
    problems += [f"{k} = '{v}': a key the recorded configuration lacks (add it there with the value that keeps "
                 f"the paper's computation)" for k, v in now.items() if k not in recorded]
    if problems:
        st.fail(f"jobs/{job}.ini computes something else than the paper's configuration recorded in "
                f"tests/data/paper_jobs/{job}.ini; set these keys in the job file:\n  " + "\n  ".join(problems))
    print(f"jobs/{job}.ini: {len(now)} keys as recorded")


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


# Shortened so each run takes a second or two; the same overrides for both runs of a pair.
PAPER_ARCHIVES = {
    "sine_retrofit": ["--adam.epochs", "100", "--simmer.steps", "400", "--simmer.every", "100",
                      "--ensemble.window", "200"],
    "iris_ladder": ["--adam.epochs", "40", "--simmer.steps", "200", "--ensemble.window", "100",
                    "--run.trajectories", "2", "--run.gather_interval", "200", "--run.checkpoint_interval", "200"],
}


@pytest.mark.parametrize("job", sorted(PAPER_ARCHIVES), ids=lambda job: f"archive_{job}")
def test_paper_archive(tmp, job):
    outs = []
    for source in (os.path.join("jobs", job + ".ini"), os.path.join("tests", "data", "paper_jobs", job + ".ini")):
        outs.append(os.path.join(tmp, f"{len(outs)}.h5"))
        st.run(SIMMER, 2, ["--config", source, "--output", outs[-1]] + PAPER_ARCHIVES[job], cwd=ROOT)
    # The one field that may differ: which configuration file the run read (its fingerprint).
    diffs = [d for d in st.archive_differences(outs[1], outs[0]) if not d.startswith("/config attribute input_files")]
    if diffs:
        st.fail(f"jobs/{job}.ini writes another archive than its recorded configuration:\n  " + "\n  ".join(diffs[:20]))
    print(f"jobs/{job}.ini: the same archive as its recorded configuration")
