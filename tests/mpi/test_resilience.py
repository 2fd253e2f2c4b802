#!/usr/bin/python3
"""Checkpoint/resume, stop signals, stability limit and divergence of simmer_mpi (run by CTest
with Debian's /usr/bin/python3).

usage: test_resilience.py SIMMER_MPI PROJECT_ROOT CASE
cases: kill        SIGKILL the whole job mid-run, resume with another rank count: the archive is
                   bit-identical to an uninterrupted run
       signal      SIGUSR1 to the ranks: exit code 3 after a checkpoint; resume; identical
       refuse      --resume with a changed key is refused naming it; a damaged checkpoint too
       unstable    a huge time step is refused before simmering (exit 4), naming the limit
       diverge     with stability_check = warn, a huge time step is caught as divergence: the
                   trajectories stop, keep their samples, and the run reports step, h and T
       autompg_s   the paper's Auto-MPG S case as specified: report what the stability check says
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402  (tests/simmer_test.py: ENV, fail, archive comparison, ...)

SIMMER, ROOT, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
ENV = st.ENV
fail = st.fail
same_archives = st.compare_archives
LONG = ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"),
        "--data.path", os.path.join(ROOT, "data/iris.csv"),
        "--adam.epochs", "60", "--simmer.steps", "12000", "--simmer.every", "500",
        "--ensemble.window", "2000", "--ensemble.fraction", "0", "--ensemble.stride", "5",
        "--ensemble.store_every", "2", "--run.trajectories", "4", "--run.gather_interval", "500",
        "--run.checkpoint_interval", "1000", "--run.sync_every", "100"]



def run(ranks, args, check=True):
    cmd = ["mpirun", "--oversubscribe", "-n", str(ranks), SIMMER] + args
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=900)
    if check and p.returncode != 0:
        fail(f"{' '.join(cmd)} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def checkpoint_step(path):
    """The step recorded in a checkpoint (header: magic 8, format 4, size 8, checksum 8; then
    version string, config string, step)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return -1
    pos = 28
    for _ in range(2):
        n = int.from_bytes(data[pos:pos + 8], "little")
        pos += 8 + n
    return int.from_bytes(data[pos:pos + 8], "little", signed=True)



with tempfile.TemporaryDirectory() as tmp:
    ref = os.path.join(tmp, "reference.h5")
    if CASE in ("kill", "signal"):
        run(2, LONG + ["--output", ref])
        out = os.path.join(tmp, "interrupted.h5")
        proc = subprocess.Popen(["mpirun", "-n", "2", SIMMER] + LONG + ["--output", out], env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        deadline = time.time() + 120
        while checkpoint_step(out + ".ckpt") < 3000:
            if proc.poll() is not None or time.time() > deadline:
                fail(f"the run ended or stalled before its checkpoint at step 3000:\n{proc.stdout.read()}")
            time.sleep(0.05)
        if CASE == "kill":
            os.killpg(proc.pid, signal.SIGKILL)  # mpirun and every rank, no chance to clean up
            proc.wait()
        else:
            # What SLURM's scancel --signal=USR1 --full (or srun) delivers: the signal to the ranks.
            # Only this test's ranks (its own session), never other simmer_mpi runs on the machine.
            subprocess.run(["pkill", "-USR1", "-s", str(proc.pid), "-x", "simmer_mpi"])
            text = proc.communicate(timeout=120)[0]
            if proc.returncode != 3:
                fail(f"stopped run exited {proc.returncode}, expected 3:\n{text[-2000:]}")
            if "received SIGUSR1" not in text or "--resume" not in text:
                fail(f"no stop message naming the signal and --resume:\n{text[-2000:]}")
        step = checkpoint_step(out + ".ckpt")
        p = run(3, ["--resume", out])
        if f"resuming at step {step}" not in p.stdout:
            fail(f"resume did not start at the checkpoint's step {step}:\n{p.stdout[-2000:]}")
        same_archives(ref, out)
        print(f"{CASE}: stopped after step {step}, resumed on 3 ranks, archive identical to the "
              "uninterrupted 2-rank run")
    elif CASE == "refuse":
        out = os.path.join(tmp, "run.h5")
        short = LONG[:]
        short[short.index("--simmer.steps") + 1] = "3000"
        run(2, short + ["--output", out])
        p = run(2, ["--resume", out, "--simmer.time_step", "0.001"], check=False)
        text = p.stdout + p.stderr
        if p.returncode == 0 or "simmer.time_step" not in text or "0.002" not in text:
            fail(f"a changed key was not refused with its name and values:\n{text}")
        with open(out + ".ckpt", "r+b") as f:  # flip one payload byte
            f.seek(200)
            b = f.read(1)
            f.seek(200)
            f.write(bytes([b[0] ^ 0xFF]))
        p = run(2, ["--resume", out], check=False)
        if p.returncode == 0 or "damaged" not in p.stdout + p.stderr:
            fail(f"a damaged checkpoint was not refused:\n{p.stdout + p.stderr}")
        p = run(2, ["--resume", os.path.join(tmp, "nothing.h5")], check=False)
        if p.returncode == 0 or "nothing.h5" not in p.stdout + p.stderr:
            fail("resuming a missing archive did not name it")
        print("refuse: changed config, damaged checkpoint and missing archive are refused")
    elif CASE == "unstable":
        out = os.path.join(tmp, "unstable.h5")
        p = run(2, LONG + ["--simmer.time_step", "2.0", "--output", out], check=False)
        text = p.stdout + p.stderr
        if p.returncode != 4:
            fail(f"exit code {p.returncode}, expected 4:\n{text[-2000:]}")
        if "simmer.time_step" not in text or "limit" not in text:
            fail(f"the refusal does not name the key and the limit:\n{text[-2000:]}")
        with h5py.File(out, "r") as f:
            if not f.attrs["time_step_limit"] < 2.0:
                fail("archive does not record the limit")
        print("unstable: h = 2 refused before simmering, with the stability limit")
    elif CASE == "diverge":
        out = os.path.join(tmp, "diverge.h5")
        short = LONG[:]
        short[short.index("--simmer.steps") + 1] = "3000"
        p = run(2, short + ["--simmer.time_step", "2.0", "--simmer.stability_check", "warn",
                            "--output", out], check=False)
        text = p.stdout + p.stderr
        if p.returncode != 0:
            fail(f"a diverged run should finish (other trajectories go on), exit {p.returncode}:\n{text[-3000:]}")
        if "diverged at step" not in text or "h = 2" not in text or "time_step" not in text:
            fail(f"no divergence report naming step, h and a smaller time step:\n{text[-3000:]}")
        with h5py.File(out, "r") as f:
            d = f["sample_stats/diverged_at_step"][()]
            if not (d >= 0).any():
                fail(f"/sample_stats/diverged_at_step is {d}")
            if f.attrs["status"] != b"complete, with diverged trajectories":
                fail(f"status attribute is {f.attrs['status']}")
        print(f"diverge: trajectories stopped at steps {d.tolist()}, run completed")
    elif CASE == "autompg_s":
        out = os.path.join(tmp, "autompg_s.h5")
        p = run(1, ["--config", os.path.join(ROOT, "jobs/autompg_s_retrofit.ini"),
                    "--data.path", os.path.join(ROOT, "data/auto-mpg.csv"), "--output", out],
                check=False)
        text = p.stdout + p.stderr
        line = [l for l in text.splitlines() if l.startswith("stability:")]
        if not line:
            fail(f"no stability line:\n{text[-2000:]}")
        # Either refused (the spec's expectation at lambda ~ 8e7) or stable on this Adam end point:
        # report which; the outcome must be consistent with the printed limit.
        with h5py.File(out, "r") as f:
            limit = float(f.attrs["time_step_limit"])
        if limit < 0.001 and p.returncode != 4:
            fail(f"limit {limit} < h = 0.001 but the run was not refused (exit {p.returncode})")
        if limit >= 0.001 and p.returncode != 0:
            fail(f"limit {limit} >= h but the run failed (exit {p.returncode}):\n{text[-2000:]}")
        print(f"autompg_s: {line[0]} -> exit {p.returncode}")
    else:
        sys.exit(f"unknown case {CASE}")
print("1 passed, 0 failed")
