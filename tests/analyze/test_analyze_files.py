#!/usr/bin/python3
"""End-to-end checks of simmer_analyze on archive files that are not whole and well (pytest
functions, one CTest test each, "analyze: <test>" like tests/analyze/test_analyze.py, whose
helpers and runs are shared through analyze_common.py; tests/conftest.py says how to run them by
hand).

tests: badfiles  missing, non-HDF5, truncated and non-simmer files: one line naming the file,
                 exit code 2, no HDF5 error stack
       verify    every dataset of a run's and a merge's archive has the Fletcher-32 filter and
                 verify says 'all checksums good' (exit 0); bytes flipped inside the raw data of
                 two chunks on disk (found with h5py's get_chunk_info): verify names both datasets
                 and chunks (exit 1), h5py and export refuse to read them; an archive without
                 checksums is reported 'no checksum' per dataset (exit 0); truncated: exit 1;
                 missing or not HDF5: exit 2
       verify_corpus  32 damaged copies of a finished archive (its tail zeroed, truncated, a block
                 zeroed, seeded byte flips in the metadata): verify on each, in its own process,
                 exits 0, 1 or 2 with a message, never by a signal (a zeroed tail made HDF5 crash
                 with SIGSEGV inside H5Literate: verify now checks in a child process and reports
                 such a crash as damage)
       incomplete a run killed with SIGKILL (the whole session) after a checkpoint: summary says
                 'incomplete', that the run was killed, the step its checkpoint resumes from (the
                 step the resume then reports) and how to resume, with the members gathered so
                 far; a live lock holder is reported as a run still going; an archive with no
                 status attribute is incomplete too; verify passes on the killed archive; predict
                 and export refuse it (exit 2) unless --allow-incomplete; after
                 the resume the summary says 'complete'
"""
import os
import re
import shutil
import socket
import struct
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# tests/analyze/analyze_common.py: the small runs, launchers and the module-scoped Iris run.
from analyze_common import IRIS_SMALL, ROOT, SIMMER, SINE_SMALL, analyze, fail, opts, simmer, st  # noqa: E402
from analyze_common import iris_run  # noqa: E402,F401  (fixture)


# --- badfiles ---------------------------------------------------------------------------------
def _bad_files(tmp, sine):
    """The broken files, each with what its refusal must say, and a points file: (cases, pts)."""
    missing = os.path.join(tmp, "missing.h5")
    text = os.path.join(tmp, "text.h5")
    with open(text, "w") as fh:
        fh.write("not an archive\n")
    half = os.path.join(tmp, "half.h5")
    with open(sine, "rb") as fh:
        data = fh.read()
    with open(half, "wb") as fh:
        fh.write(data[:len(data) // 2])
    empty = os.path.join(tmp, "empty.h5")
    h5py.File(empty, "w").close()
    other = os.path.join(tmp, "other.h5")
    with h5py.File(other, "w") as f:
        f["config"] = np.array([b"[data]\nsource = sine\n"])
        f.attrs["simmer_version"] = "0.1.0"
    # A per-chain dataset whose shape is not the layout table's (run::layout::chain_datasets).
    reshaped = os.path.join(tmp, "reshaped.h5")
    shutil.copy(sine, reshaped)
    with h5py.File(reshaped, "a") as f:
        rows = f["trace/train_loss"][()]
        del f["trace/train_loss"]
        f["trace/train_loss"] = rows[:, :-1]
    pts = os.path.join(tmp, "pts.csv")
    with open(pts, "w") as fh:
        fh.write("x\n0.5\n")
    cases = [(missing, "no such file"), (text, "not an HDF5 file"), (half, "truncated"),
             (empty, "not a simmer archive"), (other, "not a simmer archive"),
             (reshaped, "/trace/train_loss has dims")]
    return cases, pts


def _usage_errors(tmp, sine):
    # --help for the tool and each subcommand; usage errors exit 2.
    for args in (["--help"], ["summary", "--help"], ["predict", "--digits", "17", "--help"], ["merge", "--help"],
                 ["export", "--help"], ["verify", "--help"]):
        p = analyze(args)
        if "Usage: simmer_analyze" not in p.stdout:
            fail(f"{args}: no usage text")
    for args in ([], ["frobnicate"], ["summary"], ["predict", "--digits", "17", sine], ["summary", sine, "--nope"],
                 ["merge", sine, "-o", os.path.join(tmp, "x.h5")]):
        p = analyze(args, expect=2)
        if len(p.stderr.strip().splitlines()) != 1:
            fail(f"{args}: usage error is not one line:\n{p.stderr}")


def test_badfiles(tmp):
    sine = os.path.join(tmp, "sine.h5")
    simmer(1, opts(SINE_SMALL, "--run.trajectories", "1", "--output", sine))
    cases, pts = _bad_files(tmp, sine)
    n = 0
    for path, needle in cases:
        for args in (["summary", path], ["predict", "--digits", "17", path, "--points", pts], ["export", path, "--what", "trace"],
                     ["merge", path, sine, "-o", os.path.join(tmp, "m.h5")]):
            for ranks in ((None, 2) if args[0] == "predict" else (None,)):
                p = analyze(args, ranks=ranks, expect=2)
                err = p.stderr.strip()
                lines = [l for l in err.splitlines() if l.strip()]
                if ranks is not None:  # mpirun adds its own banner about the exit code
                    lines = [l for l in lines if "simmer_analyze" in l]
                if len(lines) != 1 or not lines[0].startswith("simmer_analyze: error: "):
                    fail(f"{args} (ranks {ranks}): not one error line:\n{err}")
                if os.path.basename(path) not in err or needle not in err:
                    fail(f"{args}: message does not name the file and '{needle}':\n{err}")
                if "HDF5-DIAG" in err or "#000" in err:
                    fail(f"{args}: an HDF5 error stack leaked:\n{err}")
                n += 1
    if os.path.exists(os.path.join(tmp, "m.h5")):
        fail("a failed merge left an output")
    _usage_errors(tmp, sine)
    print(f"badfiles: {n} refusals with one line each, exit code 2")


# --- verify -----------------------------------------------------------------------------------
def _verify_all_good(tmp, iris):
    """A run's, a sine run's and a merge's archives: every dataset checksummed, all good."""
    sine = os.path.join(tmp, "sine.h5")
    simmer(2, opts(SINE_SMALL, "--ensemble.track", "0,1", "--output", sine))
    iris2, merged = os.path.join(tmp, "iris2.h5"), os.path.join(tmp, "merged.h5")
    simmer(2, opts(IRIS_SMALL, "--run.seed", "2", "--output", iris2))
    analyze(["merge", iris, iris2, "-o", merged])
    for path in (iris, sine, merged):
        # Every write path (creation, rows, report, merge) stores every dataset with a checksum.
        with h5py.File(path, "r") as f:
            names = []
            f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
            plain = [n for n in names if f[n].size > 0 and not f[n].fletcher32]
        if plain:
            fail(f"{path}: datasets without the Fletcher-32 filter: {plain}")
        p = analyze(["verify", path])
        lines = p.stdout.strip().splitlines()
        if len(lines) != 1 or not re.fullmatch(rf"{len(names)} datasets, [0-9.]+ [kM]?B, all checksums good",
                                               lines[0]):
            fail(f"verify of a whole archive ({len(names)} datasets) did not say so in one line:\n{p.stdout}")


def _verify_damaged_chunks(tmp, iris):
    # Flip bytes inside the raw data of two chunks, where HDF5 says they lie in the file.
    damaged = os.path.join(tmp, "damaged.h5")
    shutil.copy(iris, damaged)
    with h5py.File(damaged, "r") as f:
        post = f["posterior/params"].id.get_chunk_info(1)  # the second chunk in the file's index
        loss = f["trace/train_loss"].id.get_chunk_info(2)  # chain 2's trace
    with open(damaged, "r+b") as fh:
        for info in (post, loss):
            at = info.byte_offset + info.size // 2
            fh.seek(at)
            raw = bytearray(fh.read(3))
            fh.seek(at)
            fh.write(bytes(b ^ 0x5A for b in raw))
    p = analyze(["verify", damaged], expect=1)
    text = p.stdout
    where = lambda info: "chunk [" + ", ".join(str(i) for i in info.chunk_offset) + "]"
    for needle in ("DAMAGED     /posterior/params", where(post), f"at byte {post.byte_offset}",
                   "DAMAGED     /trace/train_loss", where(loss), "Fletcher32",
                   "2 DAMAGED (/posterior/params, /trace/train_loss)"):
        if needle not in text:
            fail(f"verify of the damaged archive lacks '{needle}':\n{text}")
    if len([l for l in text.splitlines() if l.startswith("DAMAGED")]) != 2:
        fail(f"verify reports other datasets as damaged:\n{text}")
    if "1 of " not in text:
        fail(f"verify does not say one chunk of each failed:\n{text}")
    with h5py.File(damaged, "r") as f:
        c, d = post.chunk_offset[0], post.chunk_offset[1]
        try:
            f["posterior/params"][c, d]
            fail("h5py read a chunk whose checksum is wrong")
        except OSError:
            pass
        f["posterior/params"][(c + 1) % f["posterior/params"].shape[0]]  # other chunks read
    p = analyze(["export", damaged, "--what", "samples", "--params"], expect=2)
    if "/posterior/params" not in p.stderr or "Fletcher32" not in p.stderr or "verify" not in p.stderr:
        fail(f"export of a damaged dataset does not name it, the checksum and verify:\n{p.stderr}")


def _verify_flipped_attribute(tmp, iris):
    # A byte flipped inside a /metrics attribute (attributes have no checksum): found by
    # comparing them with their checksummed copy; summary warns.
    flipped = os.path.join(tmp, "flipped.h5")
    shutil.copy(iris, flipped)
    with h5py.File(flipped, "r") as f:
        value = float(f["metrics"].attrs["ensemble_test_nll"])
    raw = open(flipped, "rb").read()
    pattern = struct.pack("<d", value)
    if raw.count(pattern) != 1:
        fail(f"the test expected the value of /metrics@ensemble_test_nll once in the file, found {raw.count(pattern)}")
    at = raw.index(pattern)
    with open(flipped, "r+b") as fh:
        fh.seek(at + 5)
        fh.write(bytes([raw[at + 5] ^ 0x10]))
    p = analyze(["verify", flipped], expect=1)
    if "DAMAGED     /metrics@ensemble_test_nll" not in p.stdout or "checksummed copy" not in p.stdout:
        fail(f"verify did not find the flipped /metrics attribute:\n{p.stdout}")
    p = analyze(["summary", flipped], expect=1)
    if not p.stdout.startswith("DAMAGED") or "WARNING" not in p.stdout or "ensemble_test_nll" not in p.stdout:
        fail(f"summary did not begin with the flipped /metrics attribute and warn of it (exit 1):\n{p.stdout}")


def _verify_without_checksums(tmp, iris):
    """Returns the names of the datasets of the archive written without checksums."""
    # An archive written without checksums (as before them): 'no checksum', not damage.
    plain = os.path.join(tmp, "plain.h5")
    with h5py.File(iris, "r") as f, h5py.File(plain, "w") as g:
        g.attrs["simmer_version"] = f.attrs["simmer_version"]  # a simmer archive, as verify requires
        # (before checksums there was no checksummed copy of /metrics either, nor a list of the
        # datasets with a content digest)
        def copy(n, o):  # (returns None: visititems stops at the first value returned)
            if isinstance(o, h5py.Dataset) and not n.split("/")[-1].startswith("attribute_") \
                    and not n.startswith("checksums/content_digested"):
                g.create_dataset(n, data=o[()])
        f.visititems(copy)
        names = []
        g.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    p = analyze(["verify", plain])
    lines = p.stdout.strip().splitlines()
    if len([l for l in lines if l.startswith("no checksum /")]) != len(names) or "none has a checksum" not in lines[-1]:
        fail(f"an archive without checksums is not reported 'no checksum' per dataset:\n{p.stdout}")
    return names


def _verify_errors(tmp, iris):
    # Truncated: damage (exit 1); missing or not HDF5: an error (exit 2), one line.
    half = os.path.join(tmp, "half.h5")
    with open(iris, "rb") as fh:
        data = fh.read()
    with open(half, "wb") as fh:
        fh.write(data[:len(data) // 2])
    p = analyze(["verify", half], expect=1)
    if "DAMAGED" not in p.stdout or "half.h5" not in p.stdout:
        fail(f"a truncated archive is not reported damaged:\n{p.stdout}")
    text_file = os.path.join(tmp, "text.h5")
    with open(text_file, "w") as fh:
        fh.write("not an archive\n")
    for path, needle in ((os.path.join(tmp, "missing.h5"), "no such file"), (text_file, "not an HDF5 file")):
        p = analyze(["verify", path], expect=2)
        if needle not in p.stderr or len(p.stderr.strip().splitlines()) != 1:
            fail(f"verify {path}: expected one line saying '{needle}':\n{p.stderr}")
    p = analyze(["verify", "--help"])
    if "Exit code" not in p.stdout:
        fail("verify --help does not document its exit codes")


def test_verify(tmp, iris_run):
    iris = iris_run
    _verify_all_good(tmp, iris)
    _verify_damaged_chunks(tmp, iris)
    _verify_flipped_attribute(tmp, iris)
    names = _verify_without_checksums(tmp, iris)
    _verify_errors(tmp, iris)
    print(f"verify: run, merge and sine archives all checksummed and good; two flipped chunks named "
          f"(exit 1); {len(names)} datasets without checksum reported as such (exit 0)")


# --- incomplete -------------------------------------------------------------------------------
def test_verify_corpus(tmp, iris_run):
    import random
    good = open(iris_run, "rb").read()
    n = len(good)
    rng = random.Random(20261128)
    corpus = {}
    for frac in (0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9):
        k = int(n * frac)
        corpus[f"tail_zeroed_{frac}"] = good[:n - k] + bytes(k)
        corpus[f"truncated_{frac}"] = good[:n - k]
    for i in range(8):
        start = rng.randrange(0, n - 4096)
        corpus[f"block_zeroed_{i}"] = good[:start] + bytes(4096) + good[start + 4096:]
    for i in range(8):
        data = bytearray(good)
        for _ in range(16):
            at = rng.randrange(0, max(n // 10, 1))  # mostly HDF5's metadata: superblock, headers, B-trees
            data[at] ^= 1 << rng.randrange(8)
        corpus[f"metadata_flips_{i}"] = bytes(data)
    crashed, silent = [], []
    for name, data in corpus.items():
        path = os.path.join(tmp, name + ".h5")
        with open(path, "wb") as fh:
            fh.write(data)
        p = subprocess.run([st.SIMMER_ANALYZE, "verify", path], env=st.ENV, capture_output=True, text=True, timeout=300)
        if p.returncode not in (0, 1, 2):
            crashed.append(f"{name}: exit {p.returncode}: {(p.stdout + p.stderr)[-300:]}")
        elif not (p.stdout + p.stderr).strip():
            silent.append(name)
    if crashed or silent:
        fail(f"verify crashed on {len(crashed)} and said nothing on {len(silent)} of {len(corpus)} damaged files:\n  "
             + "\n  ".join(crashed + silent))
    print(f"verify_corpus: {len(corpus)} damaged archives, each an exit code 0, 1 or 2 with a message")


def _killed_run(tmp):
    """An Iris run killed (SIGKILL, the whole session) after its checkpoint at step 1500:
    (the archive's path, the members gathered so far)."""
    killed = os.path.join(tmp, "killed.h5")
    run = ["--config", os.path.join(ROOT, "jobs/iris_abinitio.ini"),
           "--data.path", os.path.join(ROOT, "data/iris.csv"), "--run.trajectories", "4",
           "--simmer.steps", "6000", "--ensemble.window", "5000", "--ensemble.count", "200",
           "--run.checkpoint_interval", "500", "--run.checkpoint_budget", "1", "--output", killed]
    proc = st.start(SIMMER, 2, run)
    try:
        # A few simmering checkpoints and gathers in (an event, not a sleep: a slow machine waits longer).
        st.wait_for(proc, lambda: st.checkpoint_step(killed + ".ckpt") >= 1500, 120, "the checkpoint at step 1500")
    finally:
        st.kill_session(proc)  # mpirun and the ranks, as a scheduler would
    with h5py.File(killed, "r") as f:
        if f.attrs.get("status") not in (b"running", "running"):
            fail(f"a killed run's archive says status {f.attrs.get('status')!r}, expected 'running'")
        members = int(f["ensemble/test"].attrs["members"])
    return killed, members


def _summary_of_killed(killed, members):
    """summary and verify of the killed run's archive; returns the step its checkpoint resumes from."""
    text = analyze(["summary", killed]).stdout
    m = re.search(r"the run stopped at step (\d+) of \d+ \(its last checkpoint\): resume with mpirun \.\.\. "
                  r"simmer_mpi --resume (\S+)", text)
    if "status: INCOMPLETE" not in text or "the run was killed" not in text or m is None \
            or m.group(2) != killed:
        fail(f"summary of a killed run does not say it is incomplete, killed, and how to resume:\n{text}")
    if "status '?'" in text or f"{members} members gathered so far" not in text:
        fail(f"summary of a killed run does not give the {members} members gathered so far:\n{text}")
    step = int(m.group(1))
    if "n/a until the run ends" not in text or "trajectory health" not in text:
        fail(f"summary of a killed run: metrics not marked n/a, or no health table:\n{text}")
    p = analyze(["verify", killed])
    if "all checksums good" not in p.stdout:
        fail(f"verify of a killed run's archive:\n{p.stdout}")
    return step


def _refused_unless_allowed(tmp, killed):
    # predict and export refuse the unfinished run (exit 2, naming its status and what it
    # holds) unless --allow-incomplete, which says how much of the plan it uses.
    pts = os.path.join(tmp, "killed_points.csv")
    with open(pts, "w") as fh:
        fh.write("sepal_width,petal_width\n3.0,0.2\n")
    with h5py.File(killed, "r") as f:
        chains, draws = f["posterior/params"].shape[:2]
    for args, planned in ((["predict", "--digits", "17", killed, "--points", pts], f"of {chains * draws} planned stored networks"),
                          (["export", killed, "--what", "ensemble"], f"of {4 * 200} planned"),
                          (["export", killed, "--what", "trace"], f"of {chains * draws} planned stored draws")):
        p = analyze(args, expect=2)
        if "status 'running'" not in p.stderr or "--allow-incomplete" not in p.stderr or planned not in p.stderr \
                or p.stdout:
            fail(f"{args[0]} on a killed run's archive: not refused naming its status and members:\n{p.stderr}")
        p = analyze(args + ["--allow-incomplete"])
        if "using them" not in p.stderr or planned not in p.stderr or not p.stdout:
            fail(f"{args[0]} --allow-incomplete: no output, or it does not say what it uses:\n{p.stderr}")
    # Its InferenceData: the draws never written are no draws, not divergent ones.
    nc = os.path.join(tmp, "killed.nc")
    analyze(["export", killed, "--what", "inference-data", "--allow-incomplete", "--out", nc])
    with h5py.File(nc, "r") as f:
        step, diverging = f["sample_stats/step"][()], f["sample_stats/diverging"][()]
    if not (step < 0).any():
        fail("the killed run's export has no unwritten draw: the check below tests nothing")
    if diverging[step < 0].any():
        fail(f"--allow-incomplete inference-data marks {int(diverging[step < 0].sum())} unwritten draws diverging")


def _lock_and_no_status(tmp, killed, step):
    # The lock naming a live process on this host (this test): a run still going, no advice to
    # resume it. An archive with no status at all (a run that never set one) is incomplete too.
    lock = killed + ".lock"
    with open(lock) as fh:
        dead = fh.read()
    with open(lock, "w") as fh:
        fh.write(f"host {socket.gethostname()}, pid {os.getpid()}\n")
    text = analyze(["summary", killed]).stdout
    if "still going" not in text or f"pid {os.getpid()} holds its lock" not in text or "--resume" in text \
            or f"its last checkpoint is at step {step}" not in text:
        fail(f"summary does not report a run holding its lock as still going:\n{text}")
    with open(lock, "w") as fh:
        fh.write(dead)
    nostatus = os.path.join(tmp, "nostatus.h5")
    shutil.copy(killed, nostatus)
    with h5py.File(nostatus, "r+") as f:
        del f.attrs["status"]
    text = analyze(["summary", nostatus]).stdout
    if "status: INCOMPLETE" not in text or "there is no checkpoint" not in text:
        fail(f"an archive without status (and no checkpoint next to it) is not reported so:\n{text}")


def test_incomplete(tmp):
    killed, members = _killed_run(tmp)
    step = _summary_of_killed(killed, members)
    _refused_unless_allowed(tmp, killed)
    _lock_and_no_status(tmp, killed, step)

    # The resume starts where the summary said, and the archive is then complete.
    out = st.run(SIMMER, 2, ["--resume", killed], expect=None, timeout=300)
    if out.returncode != 0 or f"resuming at step {step} of 6000" not in out.stdout:
        fail(f"the resume did not start at step {step} (exit {out.returncode}):\n{out.stdout[-2000:]}{out.stderr}")
    text = analyze(["summary", killed]).stdout
    if "status 'complete'" not in text or "INCOMPLETE" in text:
        fail(f"the resumed archive is not reported complete:\n{text}")
    analyze(["verify", killed])
    print(f"incomplete: a killed run is reported incomplete with the step ({step}) its checkpoint resumes "
          f"from and {members} members gathered; the resume starts there and ends complete")


def test_outputs_guarded(tmp, iris_run):
    """Every simmer_analyze output refuses a path that would destroy something (exit 2, the input
    byte-identical, nothing written): an input by any name (itself, ../, a hard link, a symlink),
    the points file, a checkpoint, a lock, a temporary file, a live archive, an HDF5 file for a
    table; merge -o OUT with an input named OUT.partial; and a good output appears only whole."""
    import hashlib
    archive = os.path.join(tmp, "run.h5")
    shutil.copy(iris_run, archive)
    points = os.path.join(tmp, "points.csv")
    with h5py.File(archive, "r") as f:
        features = st.strings(f["data/feature_names"])
        x = f["data/test/x"][()][:3]
    with open(points, "w") as fh:
        fh.write(",".join(features) + "\n" + "".join(",".join(repr(float(v)) for v in row) + "\n" for row in x))
    os.link(archive, os.path.join(tmp, "hard.h5"))
    os.symlink(archive, os.path.join(tmp, "soft.h5"))
    open(os.path.join(tmp, "live.h5.lock"), "w").close()
    other = os.path.join(tmp, "other.h5")
    shutil.copy(archive, other)

    def digest(path):
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()

    before = {p: digest(p) for p in (archive, points, other)}
    sub = os.path.join(tmp, "sub")
    os.makedirs(sub)
    cases = [
        (["export", archive, "--what", "trace", "--out", archive], "it is the input"),
        (["export", archive, "--what", "trace", "--out", os.path.join(sub, "..", "run.h5")], "it is the input"),
        (["export", archive, "--what", "samples", "--out", os.path.join(tmp, "hard.h5")], "it is the input"),
        (["export", archive, "--what", "metrics", "--out", os.path.join(tmp, "soft.h5")], "it is the input"),
        (["export", archive, "--what", "inference-data", "--out", archive], "it is the input"),
        (["export", archive, "--what", "inference-data", "--out", archive + ".ckpt"], "simmer's own"),
        (["export", archive, "--what", "trace", "--out", os.path.join(tmp, "x.lock")], "simmer's own"),
        (["predict", archive, "--points", points, "--out", points], "it is the input"),
        (["predict", archive, "--points", points, "--out", archive], "it is the input"),
        (["compare", archive, "--out", archive], "it is the input"),
        (["export", archive, "--what", "trace", "--out", os.path.join(tmp, "live.h5")], "a run is writing it"),
        (["export", archive, "--what", "trace", "--out", other], "HDF5 file"),
    ]
    for args, needle in cases:
        p = analyze(args, expect=2)
        if needle not in p.stderr or "nothing was written" not in p.stderr:
            fail(f"{' '.join(args[:3])} --out {args[-1]}: expected a refusal with '{needle}', got: {p.stderr.strip()}")
    # merge: an input named OUT.partial is refused before anything is written or deleted.
    partial_input = os.path.join(tmp, "merged.h5.partial")
    shutil.copy(archive, partial_input)
    p = analyze(["merge", archive, partial_input, "-o", os.path.join(tmp, "merged.h5")], expect=2)
    if "temporary file" not in p.stderr or not os.path.exists(partial_input):
        fail(f"merge -o merged.h5 with the input merged.h5.partial: {p.stderr.strip()}")
    for path, d in before.items():
        if digest(path) != d:
            fail(f"{path} changed under a refused output")
    leftovers = [n for n in os.listdir(tmp) if n.endswith(".partial") and n != "merged.h5.partial"]
    if leftovers:
        fail(f"temporary files left behind: {leftovers}")
    # A good output: written whole under its name, no temporary file left.
    good = os.path.join(tmp, "trace.csv")
    analyze(["export", archive, "--what", "trace", "--out", good])
    if not os.path.getsize(good) or os.path.exists(good + ".partial"):
        fail("export --out trace.csv did not leave exactly the finished table")
    print(f"outputs guarded: {len(cases) + 1} refusals, inputs unchanged")
