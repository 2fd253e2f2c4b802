// simmer_mpi's whole run (include/simmer/launch/run_main.hpp): every rank parses and validates,
// rank 0 checks the output and the inputs, the resources are estimated, then parallel::run.
#include "simmer/launch/run_main.hpp"

#include <mpi.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <new>
#include <optional>
#include <sstream>
#include <thread>

#include "simmer/cli/config.hpp"
#include "simmer/cli/inputs.hpp"
#include "simmer/cli/problem.hpp"
#include "simmer/cli/resume.hpp"
#include "simmer/core/error.hpp"
#include "simmer/core/runtime.hpp"
#include "simmer/io/archive_reader.hpp"
#include "simmer/io/checkpoint_file.hpp"
#include "simmer/io/checkpoint_state.hpp"
#include "simmer/io/output_lock.hpp"
#include "simmer/parallel/collectives.hpp"
#include "simmer/parallel/driver.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/budget.hpp"
#include "simmer/run/problem.hpp"

namespace simmer::launch {

namespace {

/// --resume: reads the archive and its checkpoint; cli::resume_invocation decides whether they
/// belong together and what configuration the run continues with. Returns the checkpoint.
io::RunCheckpoint resume_invocation(int argc, char** argv, cli::Invocation& inv) {
  const std::string archive = inv.resume_path;
  if (!std::filesystem::exists(archive)) throw Error("--resume: archive '" + archive + "' does not exist");
  const std::string ckpt = archive + ".ckpt";
  // The archive first, read-only: a file that is not a simmer archive is refused untouched.
  std::string archive_run_id, archive_config, archive_status;
  std::int64_t archive_generation = 0;
  try {
    io::silence_hdf5_errors();
    const io::ArchiveReader reader(archive);
    namespace layout = run::layout;
    if (!reader.exists(layout::kConfig) || !reader.exists(layout::kPosteriorParams))
      throw Error("it has no /config or /posterior");
    if (reader.has_attribute(layout::kRoot, layout::kRunId))
      archive_run_id = reader.attribute_text(layout::kRoot, layout::kRunId);
    if (reader.has_attribute(layout::kRoot, layout::kStatus))
      archive_status = reader.attribute_text(layout::kRoot, layout::kStatus);
    if (reader.has_attribute(layout::kRoot, layout::kCheckpointGeneration)) {
      archive_generation = reader.attribute_integer(layout::kRoot, layout::kCheckpointGeneration);
    }
    archive_config = reader.read_strings(layout::kConfig).at(0);
  } catch (const std::exception& e) {
    throw Error("--resume: '" + archive + "' is not a simmer archive that can be resumed (" + e.what() + ")");
  }
  if (archive_status.rfind("refused", 0) == 0) {
    throw Error("--resume: '" + archive + "' was " + archive_status +
                " (before simmering); a resume keeps the keys that were refused: start the run again with "
                "other values (its first lines said which)");
  }
  if (!std::filesystem::exists(ckpt)) {
    throw Error("--resume: '" + archive + "' has no checkpoint '" + ckpt +
                "' (a finished run removes it; a run killed before its first checkpoint has none)");
  }
  io::RunCheckpoint checkpoint = io::load_checkpoint(ckpt);
  if (checkpoint.version != parallel::simmer_version()) {
    throw Error("--resume: '" + ckpt + "' was written by simmer " + checkpoint.version + ", this is simmer " +
                parallel::simmer_version() + "; finish it with that version");
  }
  cli::ArchiveSide archive_side{archive, archive_run_id, archive_status, archive_generation, archive_config};
  cli::CheckpointSide checkpoint_side{ckpt, checkpoint.run_id, checkpoint.generation, checkpoint.step,
                                      checkpoint.config_ini};
  inv = cli::resume_invocation(archive_side, checkpoint_side, argc, argv);
  return checkpoint;
}

/// What a user can do after a run failed: how full the output's file system is, and which
/// checkpoint can be resumed (into a copy elsewhere when the disk is full); none after the
/// archive failed its read-back at the end (`damaged_at_end`).
std::string after_failure(const cli::Invocation& inv, bool damaged_at_end) {
  namespace fs = std::filesystem;
  const std::string& out = inv.config.run.output;
  const fs::path dir = fs::path(out).has_parent_path() ? fs::path(out).parent_path() : fs::path(".");
  std::string text;
  const std::int64_t free = run::free_bytes(dir.string());
  if (free >= 0 && free < (64 << 20)) {
    text += "the output's file system ('" + dir.string() + "') has " + run::human_bytes(free) +
            " free: it is probably full\n";
  }
  std::error_code ec;
  if (damaged_at_end) {
    // The archive was marked finished before the read-back found the damage: a resume would be
    // refused as stale, and would not rewrite what the run wrote before its last checkpoint.
    text += "the checkpoint '" + out +
            ".ckpt' is kept as the run's state before its end, but cannot resume this archive, which is marked "
            "finished: the run must start again (with --overwrite)\n";
  } else if (fs::exists(out + ".ckpt", ec)) {
    text += "the last checkpoint '" + out + ".ckpt' is intact: resume with\n  simmer_mpi --resume " + out +
            "\nor, to continue on another file system, copy both files there first:\n  cp " + out + " " + out +
            ".ckpt NEWDIR/ && simmer_mpi --resume NEWDIR/" + fs::path(out).filename().string() + "\n";
  } else if (!fs::exists(out, ec)) {
    text +=
        "no checkpoint was written before the failure, and the partly created archive was removed: the run "
        "must start again\n";
  } else {
    text += "no checkpoint was written before the failure: the run must start again\n";
  }
  return text;
}

/// Collective. Refuses (false, after one message) a run whose estimated peak memory on some
/// node exceeds run.memory_limit (auto: the node's available memory or its cgroup limit).
bool check_node_memory(const cli::Invocation& inv, const run::Problem& problem, int rank, int size) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_rank = 0, node_size = 1, hosts_root = rank == 0 ? 1 : 0;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  MPI_Allreduce(MPI_IN_PLACE, &hosts_root, 1, MPI_INT, MPI_MAX, node);
  MPI_Comm_free(&node);
  return parallel::collective_try(MPI_COMM_WORLD, [&] {
    if (node_rank != 0) return;
    const std::string& text = inv.config.run.memory_limit;
    std::int64_t limit = cli::parse_memory_limit(text);
    if (limit == 0) return;  // off
    std::string source = "run.memory_limit";
    if (limit < 0) {
      const run::NodeMemory m = run::node_memory();
      if (m.bytes < 0) return;  // nothing to compare with on this system
      // 10% headroom: the estimate is within a few percent of the measured peak (docs/RESULTS.md), and
      // the node's other processes and page cache need room too.
      limit = m.bytes / 10 * 9;
      source = "90% of " + run::human_bytes(m.bytes) + " " + m.source;
    }
    const run::ResourceEstimate e = run::estimate_resources(problem, size);
    const std::int64_t need = run::node_peak_bytes(e, node_size, hosts_root != 0);
    if (rank == 0 && inv.estimate_only) {
      std::cout << "memory: about " << run::human_bytes(need) << " on this node (" << node_size << " rank(s)) of "
                << run::human_bytes(limit) << " (" << source << ")\n"
                << std::flush;
    }
    cli::with_keys([&] { run::check_memory(e, need, node_size, limit, source, text); });
  });
}

}  // namespace

int simmer_mpi_main(int argc, char** argv) {
  // From here a SIGTERM/SIGUSR1 only sets a flag: the chains stop at their next step and the
  // ranks at their next poll (and a run refused before it starts exits as refused). First of all,
  // so a signal sent right after launch (SLURM's preemption of a job that just started) cannot
  // kill a rank.
  parallel::install_signal_handlers();
  tune_allocator();
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // HDF5's own error stacks are not printed: a failure becomes one simmer::Error that names the
  // call, the object and HDF5's innermost cause (io/h5.cpp).
  io::silence_hdf5_errors();
  int code = 0;
  cli::Invocation inv;
  run::Problem problem;
  io::RunCheckpoint resume;
  std::optional<io::OutputLock> lock;  // rank 0: this run's output, for the run's lifetime
  // Every value is checked before any work starts; a bad one stops all ranks with one message.
  bool ok = parallel::collective_try(MPI_COMM_WORLD, [&] {
    inv = cli::parse_command_line(argc, argv);
    if (inv.help) return;
    if (inv.print_config) {
      (void)cli::validated(inv.config, size);  // a bad value is refused here as in a run
      return;
    }
    if (!inv.resume_path.empty()) resume = resume_invocation(argc, argv, inv);
    if (rank == 0 && !inv.estimate_only) cli::check_not_an_input(inv);
    inv.config = cli::validated(inv.config, size);
    if (rank == 0 && inv.resume_path.empty() && !inv.estimate_only) cli::check_output(inv);
    // One run per output: a second one (or a second --resume) is refused at once.
    if (rank == 0 && !inv.estimate_only) lock = io::OutputLock::acquire(inv.config.run.output);
    // A resume, or --overwrite, also makes sure no run still writes the archive (a run whose lock
    // file was deleted still guards it).
    if (lock && (!inv.resume_path.empty() || (inv.overwrite && std::filesystem::exists(inv.config.run.output)))) {
      lock->guard(inv.config.run.output, true);
    }
    // The prior's vector of the parameter count waits for the memory check below.
    problem = cli::build_problem(inv.config, cli::PriorVector::later);
    // The input files' fingerprints (rank 0 reads them; broadcast below); a resume refuses data
    // that changed since the run began.
    if (rank == 0 && !inv.estimate_only) {
      const cli::InputFingerprints now = cli::InputFingerprints::of(inv);
      problem.input_fingerprints = now.text();
      if (!inv.resume_path.empty()) {
        cli::InputFingerprints::parse(resume.inputs).check_resume(now, inv.resume_path + ".ckpt");
      }
    }
    // What loading the data dropped or noticed, once, before the estimate.
    if (rank == 0) {
      std::cout << cli::rows_line(problem) << "\n";
      if (!problem.rows_dropped_reasons.empty()) std::cout << "data: " << problem.rows_dropped_reasons << "\n";
      for (const std::string& w : problem.data_warnings) std::cerr << "simmer_mpi: warning: " << w << "\n";
      for (const std::string& n : problem.notes) std::cout << "simmer_mpi: note: " << n << "\n";
      std::cout << std::flush;
      std::cerr << std::flush;
    }
    // What the run will need, before any work; a run whose files cannot fit is refused.
    if (rank == 0) {
      const run::ResourceEstimate need = run::estimate_resources(problem, size);
      std::cout << run::describe(need) << std::flush;
      if (inv.resume_path.empty()) {
        namespace fs = std::filesystem;
        const fs::path out(inv.config.run.output);
        const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
        std::int64_t available = run::free_bytes(dir.string());
        // An archive this run replaces (--overwrite) frees its space.
        std::error_code ec;
        if (available >= 0 && inv.overwrite && fs::exists(out, ec)) {
          const auto old_size = fs::file_size(out, ec);
          if (!ec) available += static_cast<std::int64_t>(old_size);
        }
        if (const char* fake = std::getenv("SIMMER_TEST_FREE_BYTES")) available = std::atoll(fake);
        cli::with_keys([&] { run::check_room(need, inv.config.run.output, available); });
        if (inv.estimate_only) {
          if (available < 0) {
            std::cout << "the free space at '" << dir.string() << "' could not be read\n";
          } else {
            std::cout << "the output's file system has " << run::human_bytes(available)
                      << " free: enough for the archive and checkpoint\n";
          }
        }
      }
    }
  });
  // Memory: every node's leader checks what its ranks will need against what the node offers.
  if (ok && !inv.help && !inv.print_config) ok = check_node_memory(inv, problem, rank, size);
  // The prior's vector of the parameter count, once the check has passed (or was off): a failed
  // allocation is refused like the check's findings, on every rank at once.
  if (ok && !inv.help && !inv.print_config && !inv.estimate_only) {
    ok = parallel::collective_try(MPI_COMM_WORLD, [&] {
      try {
        problem.fill_prior_precision();
      } catch (const std::bad_alloc&) {
        throw Error("out of memory for the Gaussian prior's " + std::to_string(problem.parameters) +
                    " precisions: see the estimate printed above, and run.memory_limit");
      }
    });
  }
  if (!ok) {
    code = 2;
  } else if (inv.help) {
    if (rank == 0) std::cout << inv.help_text;
  } else if (inv.print_config) {
    if (rank == 0) std::cout << cli::to_ini(inv.config);
  } else if (inv.estimate_only) {
    // Printed above; nothing runs.
  } else {
    // Every rank writes the fingerprints into the archive (collective attributes): rank 0's.
    std::vector<unsigned char> bytes(problem.input_fingerprints.begin(), problem.input_fingerprints.end());
    parallel::broadcast_bytes(bytes, MPI_COMM_WORLD);
    problem.input_fingerprints.assign(bytes.begin(), bytes.end());
    // --overwrite: the old archive and whatever checkpoint it left are removed now, so the new
    // archive is created exclusively and no old checkpoint can be resumed into it.
    if (rank == 0 && inv.resume_path.empty()) {
      for (const std::string suffix : {"", ".ckpt", ".ckpt.tmp"}) std::remove((inv.config.run.output + suffix).c_str());
    }
    MPI_Barrier(MPI_COMM_WORLD);
    // Inside the run, ranks are in collectives: an error on one rank cannot be agreed on
    // without risking a hang, so it aborts the job (the archive keeps what was gathered, and
    // the last checkpoint can be resumed).
    try {
      code = parallel::run(problem, inv.command_line, MPI_COMM_WORLD, inv.resume_path.empty() ? nullptr : &resume,
                           lock ? &*lock : nullptr);
    } catch (const std::exception& e) {
      // Every ParallelFile handle was abandoned, not closed, on the way here (io::Handle): no
      // collective call stands between this rank and the abort of the whole job.
      // One write per rank (ranks' lines do not interleave), with what to do next. A rank that
      // only learnt of rank 0's failure leaves the report to rank 0.
      if (dynamic_cast<const PeerError*>(&e) == nullptr) {
        std::string text = "simmer_mpi: error on rank " + std::to_string(rank) + ": " + e.what() + "\n";
        if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
          text += "out of memory: see the estimate printed at the start, and run.memory_limit\n";
        }
        text += after_failure(inv, dynamic_cast<const parallel::DamagedAtEnd*>(&e) != nullptr);
        std::cerr << text << std::flush;
      } else {
        std::this_thread::sleep_for(std::chrono::seconds(2));  // rank 0 reports and aborts first
      }
      // Nothing left to resume or to guard (a failed creation removed its archive): the lock
      // file goes too, so the output directory is as it was before the run.
      std::error_code ec;
      const std::string& out = inv.config.run.output;
      if (lock && !std::filesystem::exists(out, ec) && !std::filesystem::exists(out + ".ckpt", ec)) lock->release();
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (lock) lock->release();
  // Everything this rank printed is out before MPI_Finalize, whose fence no rank passes before
  // all reach it: once one rank exits non-zero, mpirun kills those still running (after
  // odls_base_sigkill_timeout, 1 s by default), which could otherwise cut rank 0's last lines.
  std::cout << std::flush;
  std::cerr << std::flush;
  MPI_Finalize();
  return code;
}

}  // namespace simmer::launch
