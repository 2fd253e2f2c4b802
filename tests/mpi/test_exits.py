#!/usr/bin/python3
"""Exits that never mislead: where the program used to say "fine" and was not (pytest functions,
one CTest test each: tests/conftest.py says how to run them by hand).

tests:
  refusals       inputs that were accepted without a word are refused naming their key (a rung so
                 hot it blows up at its first step, exchange_every beyond the steps, mass_warmup
                 without adapt), a resume on more ranks per trajectory names the key the user gave,
                 and a stopped sequential ladder's summary counts steps within the rung
  too_hot_auto   with simmer.time_step = auto, a rung no step can integrate (1e308: N_f T is not
                 a number) is refused before Adam (exit 2, no archive); a rung too hot for the
                 step the run chose after Adam (1e300, h sqrt(T) ~ 1e148) is refused before
                 simmering (exit 4) naming simmer.ladder and the hottest T allowed, with no
                 checkpoint left and no --resume advice, and a --resume says it was refused (it
                 used to spend Adam and a rung, blame the loss's curvature and suggest --resume)
  lock_race      a resume while the run still writes the archive, its lock file deleted, is
                 refused (the archive's own guard), and the first run is not disturbed by it
  mpirun_signal  SIGUSR1 sent to mpirun (not the ranks) stops the run with exit 3, SIGTERM with 1
                 (mpirun ends too), a checkpoint both times: what docs/RELIABILITY.md says
  mpirun_signal_loaded  SIGTERM to mpirun with odls_base_sigkill_timeout = 5 while four busy
                 loops load the 2 cores, with no collective poll before the end of the run and
                 blocks of 600 000 steps (a minute under the load), 10 times (two streams of five
                 jobs side by side): every time the ranks say they received SIGTERM and
                 checkpointed (SIMMER_TEST_SIGKILL_TIMEOUT sets the grace); prints how long after
                 the signal each stop checkpoint was
  max_hours      run.max_hours stops a run past its wall-time cap as a stop signal does (exit 3,
                 a checkpoint, the stop line names the key) on 2 ranks, and a --resume with the
                 cap lifted finishes an archive that verifies
  merge_overlap  two runs with the same run.seed (a rerun: another run id, the same trajectories)
                 are refused by merge, naming both files, the seed and the trajectories that would
                 be counted twice; runs with other seeds still merge. Merges of merges: a merged
                 archive merged with one of its inputs, or with a merge sharing an input, is
                 refused naming the shared run; (a+b)+c, a+(b+c) and c+a+b hold the same
                 trajectories (by /origin), the same run id, merged_from and run_seeds, the same
                 parameters per trajectory and the same ensemble mean (Chan's formula, 1e-12)
  inputs_output  an input that is the output's checkpoint, lock or temporary file (by file
                 identity) is refused before anything is written, the input left as it was
  blown_up       trajectories that blow up (a non-finite state, an rms 1000x its start scale, a
                 loss 1e6x its start) are judged diverged, never stationary; the run exits 5 and
                 its last line says so; the archive's status says so
  empty_ensemble every trajectory diverged before the window (Iris at h = 20): the run exits 5
                 saying the ensemble has no members (not "nan vs 0.1014, the same", not a pointer to
                 predict); export (ensemble, samples, inference-data) and predict refuse the archive
                 with exit 2 naming why, writing nothing; predict --candidate deep_ensemble works
  zeroed_chunk   a stored chunk of /posterior/params zeroed with its Fletcher-32 checksum (0 for
                 zeros), in a float64 and a float32 archive: verify finds it by the draws' content
                 digest (/checksums/draws: it said "all checksums good"), one of a dataset
                 written whole by its content_fnv1a64 attribute, one of /trace by
                 /checksums/trace, ones of /initial and /baseline by /checksums/rows (also in a
                 merged archive), one of a ladder's tracked rows by /checksums/tracked; a
                 deleted content_fnv1a64 attribute by /checksums/content_digested; zeroed
                 as a run
                 ends, the run's final read-back finds it (exit 1, checkpoint kept); a merged
                 archive carries its inputs' digests and verifies
  zero_temperature  a window at T = 0 says that its thermometer ratios are undefined, and a window
                 shorter than simmer.configurational_every says it took no sample (both lines
                 used to vanish without a word); summary prints T = 1e-300's ratios in a few
                 digits (it printed 297)
  truncated      the archive truncated in place during a run: the run stops with an error saying
                 so (the output watch sees the file shrink; the final read-back of every checksum
                 catches what the watch missed, and then suggests no resume, which would be
                 refused as stale) and keeps its checkpoint
  verify_damage  verify finds a changed choice (/ensemble@candidate, /selection@selected_name, a
                 rung's candidate), a changed rung score, a renamed rung group, a changed
                 /diagnostics attribute, a deleted checksummed copy of /metrics' attributes and a
                 file with only simmer_version (exit 1); summary begins with a DAMAGED line per
                 problem it finds (a damaged /trace chunk, a damaged score: exit 1) and marks a
                 damaged score instead of printing it; a foreign HDF5 file is refused (exit 2)
"""
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SIMMER, ANALYZE, ROOT = st.SIMMER_MPI, st.SIMMER_ANALYZE, st.ROOT
fail = st.fail
# mpirun's grace for its ranks after it receives SIGTERM (docs/RELIABILITY.md).
GRACE = {"OMPI_MCA_odls_base_sigkill_timeout": "5"}
GRACE_LOADED = os.environ.get("SIMMER_TEST_SIGKILL_TIMEOUT", "5")
BUSY = int(os.environ.get("SIMMER_TEST_BUSY", "4"))
SINE = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50", "--simmer.steps", "200",
        "--simmer.every", "50", "--ensemble.window", "100", "--ensemble.store_every", "25", "--run.trajectories", "2"]


def test_refusals(tmp):
    """Each refused before any work, exit 2, the message naming the key the user set."""
    out = os.path.join(tmp, "r.h5")
    held_out = ["--data.validation_fraction", "0.2"]  # a ladder chooses its rung on validation data
    for what, extra, needles in (
            ("a rung too hot", ["--simmer.ladder", "1,1e308"], ("simmer.ladder", "too hot", "hottest T")),
            ("exchange_every beyond the steps", ["--simmer.ladder", "0.5,1", "--simmer.ladder_mode", "parallel",
                                                 "--simmer.exchange_every", "500"],
             ("simmer.exchange_every", "no exchange round")),
            ("mass_warmup without adapt", ["--simmer.mass_warmup", "50"], ("simmer.mass_warmup", "adapt"))):
        p = st.run(SIMMER, 2, SINE + held_out + extra + ["--output", out], expect=2)
        text = p.stdout + p.stderr
        for needle in needles:
            if needle not in text:
                fail(f"{what}: the refusal does not say '{needle}':\n{text}")
        if os.path.exists(out):
            fail(f"{what}: refused, but an archive was written")
    # A stopped run resumed with two ranks per trajectory: its gradient was summed in one block.
    stopped = os.path.join(tmp, "stopped.h5")
    p = st.run(SIMMER, 2, SINE + ["--run.checkpoint_interval", "50", "--run.sync_every", "50", "--output", stopped],
               expect=3, env={"SIMMER_TEST_SIGNAL_AT": "100"})
    p = st.run(SIMMER, 2, ["--resume", stopped, "--run.ranks_per_trajectory", "2"], expect=2)
    text = p.stdout + p.stderr
    for needle in ("run.ranks_per_trajectory", "--resume", "began with"):
        if needle not in text:
            fail(f"a resume on two ranks per trajectory: the refusal does not say '{needle}':\n{text}")
    # A sequential ladder stopped in its second rung: steps counted within the rung.
    ladder = os.path.join(tmp, "ladder.h5")
    st.run(SIMMER, 2, SINE + held_out + ["--simmer.ladder", "0.5,1", "--run.checkpoint_interval", "50", "--run.sync_every", "50",
                              "--output", ladder], expect=3, env={"SIMMER_TEST_SIGNAL_AT": "300"})
    p = st.run(ANALYZE, None, ["summary", ladder])
    if "stopped at step 100 of 200 of rung 2 of 2" not in p.stdout or "step 175 of 200 of rung 1 of 2" not in p.stdout:
        fail(f"summary of a ladder stopped in its second rung does not count the step within the rung:\n{p.stdout}")
    print("refusals: a rung too hot, exchange_every beyond the steps and mass_warmup without adapt refused naming "
          "the key; a resume on two ranks per trajectory names run.ranks_per_trajectory; a stopped ladder's "
          "summary counts steps within its rung")


def test_too_hot_auto(tmp):
    import h5py
    out = os.path.join(tmp, "hot.h5")
    auto = SINE + ["--data.validation_fraction", "0.2", "--simmer.time_step", "auto",
                   "--simmer.thermostat", "massive_nose_hoover_langevin"]
    p = st.run(SIMMER, 2, auto + ["--simmer.ladder", "1,1e308", "--output", out], expect=2)
    if "simmer.ladder" not in p.stderr or "not a finite number" not in p.stderr or os.path.exists(out):
        fail(f"a rung no step can integrate: not refused up front naming simmer.ladder:\n{p.stderr}")
    p = st.run(SIMMER, 2, auto + ["--simmer.ladder", "1,1e300", "--output", out], expect=4)
    text = p.stdout + p.stderr
    for needle in ("option 'simmer.ladder' = '1,1e+300'", "too hot for the automatic step", "hottest T this step allows",
                   "refused before simmering"):
        if needle not in text:
            fail(f"a rung too hot for the automatic step: the refusal does not say '{needle}':\n{text[-3000:]}")
    if "--resume" in text or "curvature here is not finite" in text or os.path.exists(out + ".ckpt"):
        fail(f"the too-hot refusal suggests a resume, blames the curvature or leaves a checkpoint:\n{text[-3000:]}")
    with h5py.File(out, "r") as f:
        if st.text(f.attrs["status"]) != "refused: a temperature too hot for the time step":
            fail(f"the refused archive's status: {st.text(f.attrs['status'])!r}")
    p = st.run(SIMMER, 1, ["--resume", out], expect=2)
    if "was refused" not in p.stderr:
        fail(f"--resume of a refused run does not say it was refused:\n{p.stderr}")
    print("too_hot_auto: 1e308 refused before Adam (exit 2), 1e300 before simmering (exit 4) naming the key and "
          "the hottest T allowed, no checkpoint, no --resume advice; a --resume says it was refused")


def test_lock_race(tmp):
    """The run's lock file deleted under it, then a resume of its archive: before the archive had a
    guard of its own, the resume took a new lock and ran beside the first run for seconds."""
    out = os.path.join(tmp, "run.h5")
    # Wide layers, so the run's checkpoints (where it looks at its lock file) are seconds apart and
    # the resume starts while the first run still goes: about 2.5 s per 1000 steps here.
    args = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50",
            "--model.architecture", "1-512-512-1", "--simmer.steps", "12000", "--simmer.every", "1000",
            "--ensemble.window", "2000", "--ensemble.store_every", "500", "--run.trajectories", "2",
            "--run.checkpoint_interval", "3000", "--run.gather_interval", "3000", "--run.checkpoint_budget", "1",
            "--output", out]
    first = st.start(SIMMER, 2, args)
    st.wait_for(first, lambda: os.path.exists(out + ".ckpt") and st.checkpoint_step(out + ".ckpt") >= 3000, 300,
                "a checkpoint at step 3000")
    os.remove(out + ".lock")
    alive = first.poll() is None
    second = st.start(SIMMER, 1, ["--resume", out])
    try:
        text = second.communicate(timeout=120)[0]
    except subprocess.TimeoutExpired:
        st.kill_session(second)
        st.kill_session(first)
        fail("a resume beside the running run, its lock file deleted, was still running after 120 s")
    st.kill_session(first)
    if not alive:
        fail("the first run ended before the resume was tried: the race was not set up (a faster machine?)")
    if second.returncode != 2 or "open in another process" not in text:
        fail(f"a resume beside the running run, its lock file deleted: exit {second.returncode} (expected 2), "
             f"it ran beside the first run:\n{text[-2000:]}")
    print("lock_race: a resume while the run writes its archive, the lock file deleted, is refused (exit 2): "
          "'open in another process'")


def test_mpirun_signal(tmp):
    """The exit code a user sees when the stop signal goes to mpirun itself (the README once said 1
    for SIGUSR1; it is 3)."""
    import signal
    import time
    args = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50",
            "--model.architecture", "1-512-512-1", "--simmer.steps", "12000", "--ensemble.window", "2000",
            "--ensemble.store_every", "500", "--run.trajectories", "2", "--run.checkpoint_interval", "3000"]
    for sig, expected in ((signal.SIGUSR1, 3), (signal.SIGTERM, 1)):
        out = os.path.join(tmp, f"{sig.name}.h5")
        # mpirun passes SIGTERM on to the ranks after odls_base_sigkill_timeout seconds and kills
        # them as long again later: 5 s instead of the default 1 for a rank on a loaded machine.
        proc = st.start(SIMMER, 2, args + ["--output", out], env=GRACE)
        st.wait_for(proc, lambda: os.path.exists(out), 120, "the archive")
        time.sleep(2)  # every rank has installed its handler long before
        proc.send_signal(sig)
        try:
            text = proc.communicate(timeout=120)[0]
        except subprocess.TimeoutExpired:
            st.kill_session(proc)
            fail(f"{sig.name} to mpirun: the job did not end within 120 s")
        if proc.returncode != expected or not os.path.exists(out + ".ckpt"):
            fail(f"{sig.name} to mpirun: exit {proc.returncode} (documented: {expected}), checkpoint "
                 f"{'kept' if os.path.exists(out + '.ckpt') else 'missing'}:\n{text[-2000:]}")
    print("mpirun_signal: SIGUSR1 to mpirun: exit 3; SIGTERM to mpirun: exit 1; a checkpoint both times")


@pytest.mark.serial("four busy loops and two jobs of its own fill the 2 cores for 55 s: a test beside "
                    "it would run at a third of its speed, and the grace it measures is set for this load")
def test_mpirun_signal_loaded(tmp):
    """SIGTERM to mpirun on a loaded machine leaves the ranks' stop checkpoint: mpirun passes it
    on to the ranks odls_base_sigkill_timeout seconds later and kills them as long again after
    that; each rank's chains stop before their next step and the ranks agree on the step at once.
    The collective poll is set never to come (run.sync_every past the run's end) and a block is
    600 000 steps, so a stop that waited for either fails. The stop itself (a gather and a
    checkpoint: some forty collective writes) took 0.27-0.47 s here under this load once, 0.55-1.29
    s on 2026-11-30; on a fuller CI machine a grace of 2 s lost one stop of three, hence 5 s.

    Ten rounds, as two streams of five side by side: most of a round is mpirun's own sleeps
    (twice the grace), so ten rounds one after another took 103 s. With the other stream's two
    ranks beside the four busy loops, a stop runs among six to eight busy processes on the 2
    cores, never fewer than the six of one stream alone: measured the same day, 55 s, the stops
    0.52-1.56 s after the signal (SIMMER_TEST_BUSY sets the number of busy loops)."""
    import concurrent.futures
    import re
    import signal
    args = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "20",
            "--simmer.steps", "3000000", "--ensemble.window", "2000", "--ensemble.store_every", "500",
            "--run.trajectories", "4", "--run.checkpoint_interval", "3000000", "--run.gather_interval", "600000",
            "--run.sync_every", "3000000"]
    # Two trajectories per rank: the signal lands in either's turn, and the one that stops must
    # not wait for the other's block.

    def one_round(i):
        """Round i: (checkpoint step, seconds from the signal to the stop checkpoint)."""
        out = os.path.join(tmp, f"loaded{i}.h5")
        proc = st.start(SIMMER, 2, args + ["--output", out], env={"OMPI_MCA_odls_base_sigkill_timeout": GRACE_LOADED})
        st.wait_for(proc, lambda: st.checkpoint_step(out + ".ckpt") >= 0, 120, f"round {i}'s checkpoint after Adam")
        proc.send_signal(signal.SIGTERM)
        try:
            text = proc.communicate(timeout=120)[0]
        except subprocess.TimeoutExpired:
            st.kill_session(proc)
            fail(f"round {i}: SIGTERM to mpirun: the job did not end within 120 s")
        if "received SIGTERM" not in text or st.checkpoint_step(out + ".ckpt") <= 0:
            fail(f"round {i}: SIGTERM to mpirun under load: exit {proc.returncode}, no stop checkpoint "
                 f"(checkpoint step {st.checkpoint_step(out + '.ckpt')}):\n{text[-2000:]}")
        took = re.search(r"received SIGTERM at step \d+: checkpointed to \S+ ([0-9.]+) s after the signal", text)
        if took is None:
            fail(f"round {i}: the stop line does not say how long the stop took:\n{text[-2000:]}")
        return st.checkpoint_step(out + ".ckpt"), float(took.group(1))

    def stream(first):
        # Every round runs even after one fails: the failures are reported together.
        results = []
        for i in range(first, 10, 2):
            try:
                results.append((i, one_round(i), None))
            except AssertionError as e:
                results.append((i, None, str(e)))
        return results

    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(BUSY)]
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            rounds = sorted(r for f in [pool.submit(stream, 0), pool.submit(stream, 1)] for r in f.result())
    finally:
        for b in busy:
            b.kill()
            b.wait()
    failed = [error for _, _, error in rounds if error]
    if failed:
        fail(f"{len(failed)} of 10 SIGTERMs to mpirun under load failed:\n" + "\n".join(failed))
    steps = [result[0] for _, result, _ in rounds]
    seconds = [result[1] for _, result, _ in rounds]
    print(f"mpirun_signal_loaded: 10 of 10 SIGTERMs to mpirun under {BUSY} busy loops and a second job ended with "
          f"the ranks' stop checkpoint (odls_base_sigkill_timeout = {GRACE_LOADED}, no collective poll), at steps "
          f"{steps}, {', '.join(f'{x:.2f}' for x in seconds)} s after the signal")


def test_max_hours(tmp):
    out = os.path.join(tmp, "capped.h5")
    # 0.36 ms: past the cap at the first check (Adam's last epoch here).
    p = st.run(SIMMER, 2, SINE + ["--run.max_hours", "1e-7", "--output", out], expect=3)
    if "reached run.max_hours = 1e-07" not in p.stdout or not os.path.exists(out + ".ckpt"):
        fail(f"a run past run.max_hours: no stop line naming the key, or no checkpoint:\n{p.stdout[-2000:]}")
    done = st.run(SIMMER, 2, ["--resume", out, "--run.max_hours", "0"])
    if os.path.exists(out + ".ckpt"):
        fail(f"the resumed run left its checkpoint:\n{done.stdout[-2000:]}")
    st.run(ANALYZE, None, ["verify", out])
    print("max_hours: exit 3 with a checkpoint at the cap, the stop line names run.max_hours; the resume finished")


def test_merge_overlap(tmp):
    a, rerun, b = (os.path.join(tmp, n) for n in ("a.h5", "rerun.h5", "b.h5"))
    st.run(SIMMER, 2, SINE + ["--run.seed", "5", "--output", a])
    st.run(SIMMER, 1, st.opts(SINE, "--run.trajectories", "3") + ["--run.seed", "5", "--output", rerun])
    st.run(SIMMER, 2, SINE + ["--run.seed", "6", "--output", b])
    p = st.run(ANALYZE, None, ["merge", a, rerun, "-o", os.path.join(tmp, "twice.h5")], expect=2)
    for needle in ("a.h5", "rerun.h5", "run.seed 5", "trajectories 0..1"):
        if needle not in p.stderr:
            fail(f"merge of a rerun: the refusal does not name '{needle}':\n{p.stderr}")
    if os.path.exists(os.path.join(tmp, "twice.h5")):
        fail("merge of a rerun wrote an output")
    ab = os.path.join(tmp, "ab.h5")
    st.run(ANALYZE, None, ["merge", a, b, "-o", ab])
    merges_of_merges(tmp, a, b, ab)
    print("merge_overlap: a rerun with the same seed refused naming both files, the seed and trajectories 0..1; "
          "other seeds merge; merges of merges refused when they share a run, and associative otherwise")


def merges_of_merges(tmp, a, b, ab):
    import h5py
    import numpy as np
    c, bc = os.path.join(tmp, "c.h5"), os.path.join(tmp, "bc.h5")
    st.run(SIMMER, 2, SINE + ["--run.seed", "7", "--output", c])
    st.run(ANALYZE, None, ["merge", b, c, "-o", bc])
    for pair in ((ab, b), (b, ab), (ab, bc)):
        out = os.path.join(tmp, "twice.h5")
        p = st.run(ANALYZE, None, ["merge", *pair, "-o", out], expect=2)
        if "same run (run id" not in p.stderr or "trajectories 0..1" not in p.stderr or os.path.exists(out):
            fail(f"merge {pair}: a run merged twice was not refused naming it:\n{p.stderr}")
    outs = {name: os.path.join(tmp, name + ".h5") for name in ("ab_c", "a_bc", "cab")}
    st.run(ANALYZE, None, ["merge", ab, c, "-o", outs["ab_c"]])
    st.run(ANALYZE, None, ["merge", a, bc, "-o", outs["a_bc"]])
    st.run(ANALYZE, None, ["merge", c, a, b, "-o", outs["cab"]])
    seen = {}
    for name, path in outs.items():
        with h5py.File(path, "r") as f:
            origin = list(zip(f["origin/run_seed"][()], f["origin/trajectory"][()]))
            order = sorted(range(len(origin)), key=lambda i: origin[i])
            seen[name] = {
                "origin": sorted(origin), "run_id": st.text(f.attrs["run_id"]),
                "merged_from": st.text(f.attrs["merged_from"]), "run_seeds": st.text(f["config"].attrs["run_seeds"]),
                "params": f["posterior/params"][()][order], "mean": f["ensemble/test/mean"][()],
                "members": int(f["ensemble/test"].attrs["members"])}
    ref = seen["ab_c"]
    if ref["origin"] != sorted((s, t) for s in (5, 6, 7) for t in (0, 1)) or ref["run_seeds"] != "5,6,7":
        fail(f"(a+b)+c: /origin {ref['origin']}, run_seeds {ref['run_seeds']}: not seeds 5, 6, 7 x trajectories 0, 1")
    for name in ("a_bc", "cab"):
        got = seen[name]
        for key in ("origin", "run_id", "merged_from", "run_seeds", "members"):
            if got[key] != ref[key]:
                fail(f"merge {name} vs (a+b)+c: {key} differs: {got[key]!r} vs {ref[key]!r}")
        if not np.array_equal(got["params"], ref["params"], equal_nan=True):
            fail(f"merge {name} vs (a+b)+c: a trajectory's parameters differ")
        if not np.allclose(got["mean"], ref["mean"], rtol=1e-12, atol=1e-14):
            fail(f"merge {name} vs (a+b)+c: the ensemble mean differs")
    # Archives from before run ids (none recorded): their merge lists two empty run ids, and
    # merging it again must read both (a split that dropped the trailing empty one threw).
    old = []
    for src in (a, b):
        dst = src[:-3] + "_old.h5"
        shutil.copy(src, dst)
        with h5py.File(dst, "r+") as f:
            del f.attrs["run_id"]
        old.append(dst)
    old_ab = os.path.join(tmp, "old_ab.h5")
    st.run(ANALYZE, None, ["merge", *old, "-o", old_ab])
    st.run(ANALYZE, None, ["merge", old_ab, c, "-o", os.path.join(tmp, "old_ab_c.h5")])


def test_inputs_output(tmp):
    out = os.path.join(tmp, "run.h5")
    data = os.path.join(ROOT, "data", "auto-mpg.csv")
    for suffix in (".ckpt", ".lock", ".ckpt.tmp"):
        victim = out + suffix
        shutil.copy(data, victim)
        before = open(victim, "rb").read()
        args = ["--config", os.path.join(ROOT, "jobs/autompg_s_retrofit.ini"), "--data.path", victim,
                "--simmer.steps", "100", "--ensemble.window", "50", "--adam.epochs", "10", "--output", out]
        p = st.run(SIMMER, 1, args, expect=2)
        if "data.path" not in p.stdout + p.stderr or suffix.lstrip(".") not in p.stdout + p.stderr:
            fail(f"an input that is the output's {suffix} file: not refused naming data.path and it:\n"
                 f"{p.stdout[-2000:]}{p.stderr[-2000:]}")
        if not os.path.exists(victim) or open(victim, "rb").read() != before or os.path.exists(out):
            fail(f"an input that is the output's {suffix} file was changed or an archive written")
        os.remove(victim)
    print("inputs_output: data that is the output's checkpoint, lock or temporary file refused, left unchanged")


def test_blown_up(tmp):
    """Iris at h = 2 (limit ~0.77) with the stability check only warning: trajectories blow up."""
    import h5py
    import numpy as np
    out = os.path.join(tmp, "blown.h5")
    p = st.run(SIMMER, 2, ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"), "--data.path",
                           os.path.join(ROOT, "data/iris.csv"), "--simmer.time_step", "2",
                           "--simmer.stability_check", "warn", "--run.trajectories", "4", "--output", out], expect=None)
    with h5py.File(out, "r") as f:
        d = f["diagnostics"]
        verdicts = st.strings(d["verdict"])
        rms_end, rms_start = d["rms_end"][()], d["rms_start"][()]
        loss, start = d["mean_member_loss"][()], d["start_loss"][()]
        status = st.text(f.attrs["status"])
    exploded = ~np.isfinite(rms_end) | ~np.isfinite(loss) | (rms_end > 1000 * rms_start) | (loss > 1e6 * start)
    if not exploded.any():
        fail(f"the test's run did not blow up (rms {rms_end}, loss {loss}): it tests nothing")
    wrong = [(c, v) for c, v in enumerate(verdicts) if exploded[c] and v != "diverged"]
    if wrong:
        fail(f"blown-up trajectories not judged diverged: {wrong} (rms {rms_end}, mean loss {loss})")
    last = p.stdout.strip().splitlines()[-1]
    if p.returncode != 5 or "diverged" not in last or "exit status 5" not in last:
        fail(f"a run with diverged trajectories exits {p.returncode} (expected 5) with last line:\n{last}")
    if status != "complete, with diverged trajectories":
        fail(f"its archive says status '{status}'")
    print(f"blown_up: {int(exploded.sum())} exploded trajectories judged diverged ({verdicts}); exit status 5, "
          "said in the last line")


def test_empty_ensemble(tmp):
    out = os.path.join(tmp, "empty.h5")
    p = st.run(SIMMER, 2, ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"), "--data.path",
                           os.path.join(ROOT, "data/iris.csv"), "--simmer.time_step", "20",
                           "--simmer.stability_check", "warn", "--run.trajectories", "2", "--output", out], expect=5)
    text = p.stdout
    for needle in ("result: no members: every trajectory diverged before the window",
                   "none reached the window, so the run's ensemble has no members", "the ensemble has no members"):
        if needle not in text:
            fail(f"a run whose every trajectory diverged before the window does not say '{needle}':\n{text[-3000:]}")
    for wrong in ("the same", "their members before that are in the ensemble", f"predict {out} --points"):
        if wrong in text:
            fail(f"a run with no members says '{wrong}':\n{text[-3000:]}")
    points = os.path.join(tmp, "points.csv")
    with open(points, "w") as f:
        f.write("sepal_width,petal_width\n3.0,1.2\n")
    for what, args in (("export ensemble", ["export", out, "--what", "ensemble", "--out", points + ".out"]),
                       ("export samples", ["export", out, "--what", "samples", "--out", points + ".out"]),
                       ("export inference-data", ["export", out, "--what", "inference-data", "--out",
                                                  points + ".out"]),
                       ("predict", ["predict", out, "--points", points, "--out", points + ".out"])):
        q = st.run(ANALYZE, None, args, expect=2)
        if "0 members" not in q.stderr or "diverged before the window" not in q.stderr:
            fail(f"{what} of an archive with no members: the refusal does not say why:\n{q.stderr}")
        if os.path.exists(points + ".out") or os.path.exists(points + ".out.partial"):
            fail(f"{what} of an archive with no members wrote a file")
    q = st.run(ANALYZE, None, ["predict", out, "--candidate", "deep_ensemble", "--points", points])
    if len(q.stdout.strip().splitlines()) != 2:
        fail(f"predict --candidate deep_ensemble on the archive without members:\n{q.stdout}")
    print("empty_ensemble: exit 5 saying the ensemble has no members; export and predict refuse it naming why; "
          "the deep ensemble still predicts")


def test_zero_temperature(tmp):
    out = os.path.join(tmp, "cold.h5")
    p = st.run(SIMMER, 2, st.opts(SINE, "--simmer.every", "50") + ["--simmer.T_initial", "0", "--simmer.T_target", "0",
                                                                  "--simmer.dT", "0", "--output", out])
    if "T = 0, so T_kin/T and T_conf/T are undefined" not in p.stdout:
        fail(f"a window at T = 0 says nothing of its thermometers:\n{p.stdout[-2000:]}")
    short = os.path.join(tmp, "short.h5")
    q = st.run(SIMMER, 2, SINE + ["--simmer.configurational_every", "150", "--output", short])
    if "no sample: simmer.configurational_every = 150 is longer than the window (ensemble.window = 100" not in q.stdout:
        fail(f"a window shorter than simmer.configurational_every says nothing of its thermometers:\n{q.stdout[-2000:]}")
    # T = 1e-300: the ratios are about 1e298; summary printed them with %.3f, 297 digits each.
    tiny = os.path.join(tmp, "tiny.h5")
    st.run(SIMMER, 2, SINE + ["--simmer.T_initial", "1e-300", "--simmer.T_target", "1e-300", "--simmer.dT", "0",
                              "--output", tiny])
    text = st.run(ANALYZE, None, ["summary", tiny]).stdout
    import re
    if re.search(r"\d{30,}", text) or "e+29" not in text:
        fail(f"summary at T = 1e-300 prints its ratios in hundreds of digits (or not at all):\n{text[-3000:]}")
    print("zero_temperature: the thermometer line says T = 0 makes the ratios undefined, and that a window of 100 "
          "steps took no sample every 150; summary at T = 1e-300 prints its ratios as e+29x")


def test_truncated(tmp):
    """The archive truncated in place while the run writes it: the run must not call it done."""
    out = os.path.join(tmp, "run.h5")
    args = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50", "--simmer.steps", "20000",
            "--simmer.every", "1000", "--ensemble.window", "2000", "--ensemble.store_every", "100",
            "--run.trajectories", "2", "--run.checkpoint_interval", "500", "--run.gather_interval", "500",
            "--run.checkpoint_budget", "1", "--output", out]
    proc = st.start(SIMMER, 2, args)
    st.wait_for(proc, lambda: os.path.exists(out + ".ckpt") and st.checkpoint_step(out + ".ckpt") >= 1000, 120,
                "a checkpoint at step 1000")
    os.truncate(out, 1000)
    try:
        text, _ = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        st.kill_session(proc)
        fail("the run with a truncated archive did not end within 300 s")
    if proc.returncode == 0 or not os.path.exists(out + ".ckpt"):
        fail(f"a run whose archive was truncated exited {proc.returncode} and "
             f"{'kept' if os.path.exists(out + '.ckpt') else 'deleted'} its checkpoint:\n{text[-2000:]}")
    if "shrank" not in text and "failed its final check" not in text:
        fail(f"the run does not say its archive was truncated:\n{text[-2000:]}")
    # Damaged after the run's last look at it: only the final read-back of every checksum sees it.
    out2 = os.path.join(tmp, "late.h5")
    p = st.run(SIMMER, 2, SINE + ["--output", out2], env={"SIMMER_TEST_DAMAGE_ARCHIVE": "1"}, expect=None)
    said = p.stdout + p.stderr
    if p.returncode != 1 or not os.path.exists(out2 + ".ckpt") or "failed its final check" not in said:
        fail(f"an archive damaged at the end: exit {p.returncode}, checkpoint "
             f"{'kept' if os.path.exists(out2 + '.ckpt') else 'deleted'}:\n{said[-2000:]}")
    # It is marked finished: a resume would be refused as stale, so none is suggested.
    if "--resume" in said or "cannot resume this archive" not in said:
        fail(f"an archive damaged at the end: the advice suggests a resume that cannot work:\n{said[-2000:]}")
    print(f"truncated: the run stopped (exit {proc.returncode}) saying the archive shrank, and kept its checkpoint; "
          "an archive damaged after the last gather fails the final check (exit 1), checkpoint kept, no resume "
          "suggested")


def test_verify_damage(tmp):
    """One byte's worth of damage where a choice or a score lives, which no checksum used to cover."""
    import h5py
    import numpy as np
    good = os.path.join(tmp, "ladder.h5")
    st.run(SIMMER, 2, ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"), "--data.path",
                       os.path.join(ROOT, "data/iris.csv"), "--adam.epochs", "40", "--simmer.steps", "200",
                       "--ensemble.window", "100", "--ensemble.store_every", "25", "--run.trajectories", "2",
                       "--simmer.temperature_unit", "posterior", "--data.validation_fraction", "0.2",
                       "--simmer.ladder", "0.5,1", "--output", good])
    if "all checksums good" not in st.run(ANALYZE, None, ["verify", good]).stdout:
        fail("the undamaged ladder archive does not verify")
    with h5py.File(good, "r") as f:
        chosen = st.text(f["ensemble"].attrs["candidate"])
    other = "rung_1" if chosen != "rung_1" else "rung_0"

    def damage(name, edit, needle):
        path = os.path.join(tmp, name + ".h5")
        shutil.copy(good, path)
        with h5py.File(path, "r+") as f:
            edit(f)
        p = st.run(ANALYZE, None, ["verify", path], expect=1)
        if "DAMAGED" not in p.stdout or needle not in p.stdout:
            fail(f"verify does not find {name} (expected '{needle}'):\n{p.stdout}")
        return path

    damage("ensemble_candidate", lambda f: f["ensemble"].attrs.__setitem__("candidate", np.bytes_(other)),
           "/ensemble@candidate")
    damage("selected_name", lambda f: f["selection"].attrs.__setitem__("selected_name", np.bytes_("rung_3")),
           "/selection@selected_name")
    damage("rung_candidate", lambda f: f["ladder/rung_1"].attrs.__setitem__("candidate", np.bytes_("rung_3")),
           "/ladder/rung_1@candidate")
    damage("rung_score", lambda f: f["ladder/rung_0"].attrs.__setitem__(
        "observed_loss_rise", f["ladder/rung_0"].attrs["observed_loss_rise"] * 2), "/ladder/rung_0@observed_loss_rise")
    damage("group_name", lambda f: f.move("ladder/rung_1", "ladder/rung_3"), "rung_")
    # A damaged score: summary shows DAMAGED where it would print the number.
    path = os.path.join(tmp, "metric.h5")
    shutil.copy(good, path)
    with h5py.File(path, "r+") as f:
        true_nll = float(f["metrics"].attrs["ensemble_test_nll"])
        f["metrics"].attrs["ensemble_test_nll"] = 123.456
    text = st.run(ANALYZE, None, ["summary", path], expect=1).stdout
    nll = [line for line in text.splitlines() if "NLL" in line and "DAMAGED" in line]
    table = "\n".join(line for line in text.splitlines() if not line.startswith("DAMAGED"))
    if not nll or "123.4" in table or "123.5" in table or not text.startswith("DAMAGED"):
        fail(f"summary prints a damaged score instead of marking it (true {true_nll}):\n{nll}")
    # The verdicts' attributes, and checksummed copies deleted with the attributes they guard.
    with h5py.File(good, "r") as f:
        key = sorted(k for k in f["diagnostics"].attrs if k not in ("DIMENSION_LIST", "REFERENCE_LIST"))[0]
    damage("diagnostics", lambda f: f["diagnostics"].attrs.__setitem__(key, np.bytes_("x")), f"/diagnostics@{key}")

    def drop_copy(f):
        del f["metrics/attribute_names"]
        del f["metrics/attribute_values"]
    damage("mirror_deleted", drop_copy, "/metrics: the checksummed copy of its attributes")
    # A file with nothing but the version attribute is not an archive that verifies.
    bare = os.path.join(tmp, "bare.h5")
    with h5py.File(bare, "w") as f:
        f.attrs["simmer_version"] = np.bytes_("0.1.0")
    p = st.run(ANALYZE, None, ["verify", bare], expect=1)
    if "/config is missing" not in p.stdout:
        fail(f"verify of a file with only simmer_version:\n{p.stdout}")
    # A damaged dataset summary reads: DAMAGED before anything is explained, exit 1.
    path = os.path.join(tmp, "trace.h5")
    shutil.copy(good, path)
    with h5py.File(path, "r") as f:
        info = f["trace/step"].id.get_chunk_info(0)
    with open(path, "r+b") as f:
        f.seek(info.byte_offset)
        f.write(b"\xff" * 16)
    p = st.run(ANALYZE, None, ["summary", path], expect=1)
    if not p.stdout.startswith("DAMAGED") or "/trace/step" not in p.stdout.splitlines()[1]:
        fail(f"summary of an archive with a damaged /trace/step does not begin with it:\n{p.stdout[:1500]}")
    # Not a simmer archive: refused, not 'all checksums good'.
    foreign = os.path.join(tmp, "foreign.h5")
    with h5py.File(foreign, "w") as f:
        f["x"] = np.arange(3.0)
    p = st.run(ANALYZE, None, ["verify", foreign], expect=2)
    if "not a simmer archive" not in p.stderr:
        fail(f"verify of a foreign HDF5 file:\n{p.stdout}{p.stderr}")
    print("verify_damage: a changed /ensemble@candidate, /selection@selected_name, rung candidate, rung score, "
          "rung group name, /diagnostics attribute and a deleted checksummed copy each found DAMAGED (exit 1); a "
          "file with only simmer_version is damaged; summary begins with DAMAGED lines (exit 1) and marks a damaged "
          "score; a foreign file refused")


def zero_first_chunk(path, dataset):
    """Zeroes the first stored chunk of `dataset` in the file at `path`, its Fletcher-32 checksum
    with it (whose value for zeros is 0)."""
    import h5py
    with h5py.File(path, "r") as f:
        info = f[dataset].id.get_chunk_info(0)
    with open(path, "r+b") as f:
        f.seek(info.byte_offset)
        f.write(bytes(info.size))


def test_zeroed_chunk(tmp):
    """A stored chunk of /posterior/params zeroed with its Fletcher-32 checksum (whose value for
    zeros is 0): HDF5 reads it back without an error; the draws' content digest does not."""
    import h5py
    out = os.path.join(tmp, "run.h5")
    st.run(SIMMER, 2, SINE + ["--output", out])
    if "all checksums good" not in st.run(ANALYZE, None, ["verify", out]).stdout:
        fail("the undamaged archive does not verify")
    for precision in ("float64", "float32"):
        path = os.path.join(tmp, f"zeroed_{precision}.h5")
        if precision == "float32":
            st.run(SIMMER, 2, SINE + ["--run.precision", "float32", "--output", path])
        else:
            shutil.copy(out, path)
        with h5py.File(path, "r") as f:
            before = f["posterior/params"][0, 0, :4].copy()
        zero_first_chunk(path, "posterior/params")
        with h5py.File(path, "r") as f:
            if f["posterior/params"][0, 0, :4].tolist() == before.tolist():
                fail(f"{precision}: the test did not zero the chunk it meant to")
        p = st.run(ANALYZE, None, ["verify", path], expect=1)
        if "do not read back as the run wrote them" not in p.stdout or "all checksums good" in p.stdout:
            fail(f"{precision}: a zeroed chunk of /posterior/params passes verify:\n{p.stdout}")
    # A dataset written whole (the pooled ensemble's mean: its content_fnv1a64 attribute), a
    # trajectory's trace (rows written gather by gather: /checksums/trace) and rows each
    # trajectory writes once (its start and its Adam network's predictions: /checksums/rows).
    for dataset, said in (("ensemble/test/mean", "does not match its digest"),
                          ("trace/train_loss", "trace rows do not read back"),
                          ("initial/params", "trajectory 0's rows do not read back"),
                          ("baseline/test/prediction", "trajectory 0's rows do not read back")):
        path = os.path.join(tmp, dataset.replace("/", "_") + ".h5")
        shutil.copy(out, path)
        zero_first_chunk(path, dataset)
        p = st.run(ANALYZE, None, ["verify", path], expect=1)
        if said not in p.stdout or "DAMAGED (/" + dataset.split("/")[0] not in p.stdout:
            fail(f"a zeroed chunk of /{dataset} passes verify:\n{p.stdout}")
    # A content digest attribute deleted (the dataset would be left to its Fletcher-32): the
    # archive's list of digested datasets (/checksums/content_digested) says it is gone.
    gone = os.path.join(tmp, "gone.h5")
    shutil.copy(out, gone)
    with h5py.File(gone, "r+") as f:
        del f["ensemble/test/mean"].attrs["content_fnv1a64"]
    p = st.run(ANALYZE, None, ["verify", gone], expect=1)
    if "/ensemble/test/mean: its content digest (content_fnv1a64) is gone" not in p.stdout:
        fail(f"a deleted content digest attribute passes verify:\n{p.stdout}")
    # The tracked test rows' member predictions (ensemble.track), on a sequential ladder whose
    # second rung's members follow the first's: each trajectory's rows under /checksums/tracked.
    tracked = os.path.join(tmp, "tracked.h5")
    st.run(SIMMER, 2, SINE + ["--data.validation_fraction", "0.2", "--simmer.ladder", "0.5,1", "--ensemble.track", "0,3",
                              "--output", tracked])
    if "all checksums good" not in st.run(ANALYZE, None, ["verify", tracked]).stdout:
        fail("a ladder's archive with tracked rows does not verify")
    with h5py.File(tracked, "r") as f:
        counts, members = f["checksums/tracked_count"][:].tolist(), f["ensemble/test/tracked"].shape[1]
        if counts != [members, members] or members != 200:
            fail(f"/checksums/tracked_count is {counts}, not the 100 members of each of 2 rungs per trajectory")
    zero_first_chunk(tracked, "ensemble/test/tracked")
    p = st.run(ANALYZE, None, ["verify", tracked], expect=1)
    if "members' rows do not read back" not in p.stdout or "DAMAGED (/ensemble" not in p.stdout:
        fail(f"a zeroed chunk of /ensemble/test/tracked passes verify:\n{p.stdout}")
    # Zeroed while the run ends, after its last gather: the run's final read-back finds it, keeps
    # the checkpoint and exits 1 (it exited 0 and deleted the checkpoint).
    late = os.path.join(tmp, "late.h5")
    p = st.run(SIMMER, 2, SINE + ["--output", late], env={"SIMMER_TEST_DAMAGE_ARCHIVE": "zero_chunk"}, expect=None)
    said = p.stdout + p.stderr
    if p.returncode != 1 or not os.path.exists(late + ".ckpt") or "failed its final check" not in said \
            or "posterior/params" not in said:
        fail(f"a chunk of the draws zeroed at the run's end: exit {p.returncode}, checkpoint "
             f"{'kept' if os.path.exists(late + '.ckpt') else 'deleted'}:\n{said[-2000:]}")
    merged = os.path.join(tmp, "merged.h5")
    other = os.path.join(tmp, "other.h5")
    st.run(SIMMER, 2, SINE + ["--run.seed", "9", "--output", other])
    st.run(ANALYZE, None, ["merge", out, other, "-o", merged])
    if "all checksums good" not in st.run(ANALYZE, None, ["verify", merged]).stdout:
        fail("a merged archive's draws do not match the digests it carries")
    with h5py.File(merged, "r") as f, h5py.File(out, "r") as a, h5py.File(other, "r") as b:
        for digest in ("checksums/rows/initial/params", "checksums/rows/baseline/test/prediction"):
            if digest not in f or f[digest][:].tolist() != a[digest][:].tolist() + b[digest][:].tolist():
                fail(f"the merged archive does not carry its inputs' /{digest}")
    zero_first_chunk(merged, "initial/velocity")
    if "trajectory 0's rows do not read back" not in st.run(ANALYZE, None, ["verify", merged], expect=1).stdout:
        fail("a zeroed chunk of a merged archive's /initial/velocity passes verify")
    print("zeroed_chunk: a chunk of /posterior/params zeroed with its checksum is found by verify (float64 and "
          "float32 archives), as are one of /ensemble/test/mean (its content digest), one of /trace/train_loss "
          "(/checksums/trace), ones of /initial/params and /baseline/test/prediction (/checksums/rows) and one of a "
          "ladder's /ensemble/test/tracked (/checksums/tracked), a deleted digest attribute by "
          "/checksums/content_digested, and, zeroed at a run's end, by the run's final read-back (exit 1, checkpoint kept); a merged archive carries its inputs' digests")
