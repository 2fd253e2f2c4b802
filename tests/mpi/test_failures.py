#!/usr/bin/python3
"""Failures inside a run end the job at once, cleanly and resumably (pytest functions, one CTest
test each, named "failures: NAME": tests/conftest.py says how to run them by hand). Every run
here has a 60 s timeout: a hang fails the test.

tests: abort      an HDF5 write fails on one rank alone (rank 0, then rank 1; injected with
                  SIMMER_TEST_FAIL_WRITE) while the other rank enters the collective transfer:
                  exit 1 within seconds naming the dataset; the last checkpoint is intact and
                  resuming it (on 3 ranks) gives an archive bit-identical to an uninterrupted run
       diskfull   the output on a small tmpfs this test mounts (skipped where mounting is not
                  permitted): a disk full at creation, and a checkpoint that no longer fits, end
                  the job within seconds saying the disk is full; no partial .ckpt.tmp is left,
                  and the archive and checkpoint copied to a roomier file system resume to the
                  uninterrupted run's bits
       race       two runs started at once on one output: one finishes, the other is refused
                  (exit 2) naming the output; the archive is whole
       early_kill SIGKILL of the whole job right after its first checkpoint appears: the
                  resumed archive still holds lambda_max and time_step_limit
       watch      the archive deleted, the archive replaced by another file, and the lock file
                  deleted while a run writes: the run stops within seconds (exit 1) naming what
                  happened, and keeps its checkpoint (it used to exit 0 and delete it)
       create     an HDF5 write failing on rank 0, then rank 1, while the archive is created:
                  exit 1 naming the dataset, the partial file removed (and rank 0's lock when it
                  failed itself), and the next run on the same output completes
abort and diskfull compare with the uninterrupted run's archive (the `reference` fixture).
"""
import os
import shutil
import subprocess
import sys
import time

import h5py
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SIMMER, ROOT = st.SIMMER_MPI, st.ROOT
fail = st.fail
RUN = ["--config", os.path.join(ROOT, "jobs/iris_abinitio.ini"), "--data.path", os.path.join(ROOT, "data/iris.csv"),
       "--run.trajectories", "4", "--simmer.steps", "3000", "--ensemble.window", "1000", "--ensemble.count", "200",
       "--run.checkpoint_interval", "200", "--run.checkpoint_budget", "1"]


def mpirun(ranks, args, env=None, timeout=60):
    """simmer_mpi with `env` added, any exit code, a hang failing after `timeout` s:
    (result, its whole output, seconds taken)."""
    start = time.time()
    p = st.run(SIMMER, ranks, args, expect=None, timeout=timeout, env=env)
    return p, p.stdout + p.stderr, time.time() - start


def ok(ranks, args, env=None):
    p, text, _ = mpirun(ranks, args, env, timeout=300)
    if p.returncode != 0:
        fail(f"{args} exited {p.returncode}:\n{text[-3000:]}")
    return text


# The uninterrupted run's archive (RUN on 2 ranks; read only), shared by abort and diskfull.
reference = st.shared_archive(lambda path: ok(2, RUN + ["--output", path]), "reference.h5")


def check_resumable(archive, reference, where):
    """The checkpoint left by a failed run is intact: resuming it (in a copy at `where`) gives
    the uninterrupted run's archive."""
    if os.path.exists(archive + ".ckpt.tmp"):
        fail(f"a partial checkpoint '{archive}.ckpt.tmp' was left")
    if not os.path.exists(archive + ".ckpt"):
        fail(f"no checkpoint '{archive}.ckpt' to resume")
    os.makedirs(where, exist_ok=True)
    copy = os.path.join(where, os.path.basename(archive))
    shutil.copy(archive, copy)
    shutil.copy(archive + ".ckpt", copy + ".ckpt")
    text = ok(3, ["--resume", copy])
    if "resuming at step" not in text:
        fail(f"the resume did not say where it starts:\n{text[-2000:]}")
    st.compare_archives(reference, copy)


def failing_write(out, spec, rank, what):
    """RUN into `out` on 2 ranks with SIMMER_TEST_FAIL_WRITE=`spec` ("DATASET:N:RANK", failing on
    `rank`): fails unless the job ends with exit 1 naming the rank and the dataset; returns
    (its output, seconds taken)."""
    p, text, seconds = mpirun(2, RUN + ["--output", out], {"SIMMER_TEST_FAIL_WRITE": spec})
    dataset = spec.split(":")[0]
    if p.returncode != 1 or f"error on rank {rank}" not in text or dataset not in text:
        fail(f"a write failing on rank {rank}{what} did not end the job with exit 1 naming the dataset "
             f"(exit {p.returncode}):\n{text[-3000:]}")
    return text, seconds


def test_abort(tmp, reference):
    for rank in (0, 1):
        out = os.path.join(tmp, f"fail{rank}.h5")
        text, seconds = failing_write(out, f"/posterior/params:3:{rank}", rank, "")
        if seconds > 30:
            fail(f"the job took {seconds:.0f} s to end after the failure")
        if rank == 0 and "--resume" not in text:
            fail(f"rank 0's report does not say how to resume:\n{text[-2000:]}")
        check_resumable(out, reference, os.path.join(tmp, f"elsewhere{rank}"))
        print(f"abort: a write failing on rank {rank} alone ended the job in {seconds:.1f} s (exit 1); "
              "resumed from its checkpoint: identical to the uninterrupted run")


def test_diskfull(tmp, request):
    small = os.path.join(tmp, "small")
    os.makedirs(small)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", small], capture_output=True, text=True)
    if m.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({m.stderr.strip()})")
    try:
        reference = request.getfixturevalue("reference")  # after the mount: no reference run when skipped
        # The free-space check before the run would refuse these outputs: pretend there is room.
        room = {"SIMMER_TEST_FREE_BYTES": "100000000"}
        for fill, expect_ckpt in ((6_800_000, False), (2_000_000, True)):
            for name in os.listdir(small):
                os.remove(os.path.join(small, name))
            with open(os.path.join(small, "fill"), "wb") as f:
                f.write(b"\0" * fill)
            out = os.path.join(small, "d.h5")
            p, text, seconds = mpirun(2, RUN + ["--output", out], room)
            if p.returncode != 1 or "probably full" not in text:
                fail(f"a full disk did not end the job with exit 1 saying so (exit {p.returncode}):\n{text[-3000:]}")
            if seconds > 30:
                fail(f"the job took {seconds:.0f} s to end on a full disk")
            if expect_ckpt:
                if "No space left on device" not in text:
                    fail(f"the failed checkpoint does not give the system's reason:\n{text[-2000:]}")
                check_resumable(out, reference, os.path.join(tmp, "roomy"))
            elif "no checkpoint was written" not in text:
                fail(f"a run that failed before any checkpoint does not say so:\n{text[-2000:]}")
            print(f"diskfull: {8_388_608 - fill} bytes free: exit 1 after {seconds:.1f} s"
                  + (", the checkpoint resumed elsewhere to identical bits" if expect_ckpt else ""))
    finally:
        subprocess.run(["umount", "-l", small])


def test_race(tmp):
    out = os.path.join(tmp, "cc.h5")
    procs = [st.start(SIMMER, 2, RUN + ["--output", out]) for _ in range(2)]
    results = []
    for proc in procs:
        try:
            results.append((proc.communicate(timeout=120)[0], proc.returncode))
        except subprocess.TimeoutExpired:
            fail("a run on a contested output hung")
    codes = sorted(code for _, code in results)
    if codes != [0, 2]:
        fail(f"two runs on one output exited {codes}, expected one 0 and one 2:\n"
             + "\n----\n".join(text[-1500:] for text, _ in results))
    loser = next(text for text, code in results if code == 2)
    if out not in loser or not ("in use by another run" in loser or "exists" in loser):
        fail(f"the refused run does not name the output and why:\n{loser[-2000:]}")
    with h5py.File(out, "r") as f:
        if f.attrs["status"] != "complete" and f.attrs["status"] != b"complete":
            fail(f"the winner's archive says status {f.attrs['status']}")
        f["posterior/params"][()]  # reads back whole (a second writer would damage it)
    print("race: two runs on one output: one finished, the other was refused (exit 2); archive whole")


def test_early_kill(tmp):
    out = os.path.join(tmp, "early.h5")
    proc = st.start(SIMMER, 2, RUN + ["--output", out])
    deadline = time.time() + 60
    while not os.path.exists(out + ".ckpt"):
        if proc.poll() is not None or time.time() > deadline:
            fail(f"no checkpoint appeared:\n{proc.stdout.read()}")
        time.sleep(0.01)
    st.kill_session(proc)
    ok(2, ["--resume", out])
    straight = os.path.join(tmp, "straight.h5")
    ok(2, RUN + ["--output", straight])
    with h5py.File(out, "r") as f, h5py.File(straight, "r") as g:
        missing = [k for k in ("lambda_max", "time_step_limit", "run_id") if k not in f.attrs]
        if missing:
            fail(f"root attributes lost by the early kill: {missing}")
        # Not only there: the values of the uninterrupted run (they used to be checked for presence only).
        for k in ("lambda_max", "time_step_limit"):
            if f.attrs[k] != g.attrs[k]:
                fail(f"the resumed run's {k} {f.attrs[k]} differs from the uninterrupted run's {g.attrs[k]}")
    print("early_kill: killed right after the first checkpoint; the resumed archive keeps lambda_max, "
          "time_step_limit and run_id")


def test_watch(tmp):
    slow = st.opts(RUN, "--simmer.steps", "200000", "--ensemble.window", "1000", "--run.gather_interval", "200")
    for what, needle in (("archive deleted", "was deleted while the run wrote it"),
                         ("archive replaced", "was replaced by another file"),
                         ("lock deleted", "lock file")):
        out = os.path.join(tmp, what.replace(" ", "_") + ".h5")
        proc = st.start(SIMMER, 2, slow + ["--output", out])
        st.wait_for(proc, lambda: st.checkpoint_step(out + ".ckpt") >= 200, 60, "the first simmering checkpoint")
        if what == "archive deleted":
            os.remove(out)
        elif what == "archive replaced":
            os.rename(out, out + ".moved")
            shutil.copy(out + ".moved", out)  # the same bytes, another file
        else:
            os.remove(out + ".lock")
        start = time.time()
        try:
            text = proc.communicate(timeout=60)[0]
        except subprocess.TimeoutExpired:
            st.kill_session(proc)
            fail(f"{what}: the run did not stop within 60 s")
        if proc.returncode != 1 or needle not in text:
            fail(f"{what}: exit {proc.returncode} (expected 1), message without '{needle}':\n{text[-3000:]}")
        if not os.path.exists(out + ".ckpt"):
            fail(f"{what}: the run removed its checkpoint")
        print(f"watch: {what}: stopped after {time.time() - start:.1f} s, exit 1, checkpoint kept")
    print("watch: a deleted or replaced archive and a deleted lock file stop the run, which keeps its checkpoint")


def test_create(tmp):
    # The archive is created collectively; a write failing on one rank in the middle of it
    # used to leave a file at the output that was no archive (nothing to resume, and in the
    # way of the next run without --overwrite).
    for rank in (0, 1):
        out = os.path.join(tmp, f"create{rank}.h5")
        text, seconds = failing_write(out, f"/data/train/x:1:{rank}", rank, " while the archive was created")
        left = sorted(n for n in os.listdir(tmp) if n.startswith(f"create{rank}.h5"))
        # Rank 0 holds the lock; it removes it when it is the rank that failed (a rank
        # failing elsewhere aborts rank 0 inside a collective call: the lock file, no
        # longer locked, stays and takes no part in the next run).
        allowed = [] if rank == 0 else [f"create{rank}.h5.lock"]
        if [n for n in left if n not in allowed]:
            fail(f"a failed creation on rank {rank} left {left} at the output")
        if rank == 0 and "the partly created archive was removed" not in text:
            fail(f"rank 0's report does not say the partial archive was removed:\n{text[-2000:]}")
        # The same output, without --overwrite, now runs.
        ok(2, st.opts(RUN, "--simmer.steps", "600", "--ensemble.window", "300", "--ensemble.count", "20",
                      "--output", out))
        with h5py.File(out, "r") as f:
            if f.attrs["status"] not in ("complete", b"complete"):
                fail(f"the run after the failed creation says status {f.attrs['status']}")
        print(f"create: a write failing on rank {rank} during creation: exit 1 after {seconds:.1f} s, "
              f"left {left or 'nothing'}; the next run on the output completed")
