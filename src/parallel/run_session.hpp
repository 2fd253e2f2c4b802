#pragma once
/// \file
/// The run on one rank (parallel::run's state), shared by driver.cpp (creation, Adam, simmering,
/// gathers, checkpoints) and driver_finish.cpp (the end: reports, scores, the choice, /metrics).

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "simmer/ensemble/partial.hpp"
#include "simmer/io/checkpoint_state.hpp"
#include "simmer/io/output_lock.hpp"
#include "simmer/parallel/archive_writer.hpp"
#include "simmer/parallel/collectives.hpp"
#include "simmer/parallel/progress.hpp"
#include "simmer/run/chain.hpp"
#include "simmer/run/problem.hpp"
#include "simmer/run/replica_sets.hpp"

namespace simmer::parallel::detail {

/// One run of simmer_mpi on this rank: its trajectories (trajectory i on rank i mod size), rank
/// 0's pooled ensemble, the archive, progress and the CPU-time account.
class Run {
 public:
  Run(run::Problem& p, const std::string& command_line, MPI_Comm comm, io::OutputLock* lock)
      : p_(p),
        command_line_(command_line),
        comm_(comm),
        lock_(lock),
        progress_(p.run, rank_of(comm)),
        checkpoint_path_(p.run.output + ".ckpt") {
    rank_ = rank_of(comm);
    MPI_Comm_size(comm, &size_);
    // Groups of k ranks (run.ranks_per_trajectory): trajectory i on group i mod (size / k); every
    // rank of a group runs the group's chains in lockstep, sharing their gradients, and the
    // group's first rank (its leader) speaks for them: rows, partials, checkpoints, reports.
    const int k = static_cast<int>(p.run.ranks_per_trajectory);
    const int group = rank_ / k, groups = size_ / k;
    leader_ = rank_ % k == 0;
    if (k > 1) {
      MPI_Comm_split(comm, group, rank_, &group_comm_);
      gradients_ = std::make_unique<GroupGradients>(group_comm_);
    }
    for (std::int64_t i = group; i < p.run.trajectories; i += groups) {
      chains_.push_back(run::make_chain(p, i));
      if (gradients_) chains_.back()->share_gradients(gradients_.get());
      if (!leader_) {  // the leader prints the group's warnings
        chains_.back()->set_warning_sink([](const run::Chain::Warning&) {});
        continue;
      }
      // Each kind of warning is said once, for its first trajectory, with a note that the end of
      // the run counts them all: 36 trajectories diverging or slow to heat would otherwise print
      // 36 lines. Slow to heat, a warning only, is said by rank 0 alone (one line for any rank
      // count); a divergence, which a user may want to act on at once, by each rank it happens on.
      chains_.back()->set_warning_sink([this](const run::Chain::Warning& w) {
        const bool slow = w.kind == run::Chain::Warning::Kind::slow_to_heat;
        bool& said = slow ? slow_warned_ : diverged_warned_;
        if (said || (slow && rank_ != 0)) return;
        said = true;
        std::fprintf(stderr, "%s (further trajectories %s%s are counted at the end of the run)\n", w.text.c_str(),
                     slow ? "slow to heat" : "diverging", slow ? "" : " on this rank");
        std::fflush(stderr);
      });
    }
    if (rank_ == 0) {
      // One pooled ensemble per simmering stage; a stage's tracked members follow the earlier ones'.
      for (std::int64_t stage = 0; stage < p.stages(); ++stage) {
        pooled_.emplace_back(run::ensemble_shape(p), p.run.trajectories,
                             p.stage_first_step(stage) / p.run.steps * p.members_per_stage());
      }
    }
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  ~Run() {
    // Freeing a communicator is collective: not on the error path (MPI_Abort follows).
    if (group_comm_ != MPI_COMM_NULL && std::uncaught_exceptions() == 0) MPI_Comm_free(&group_comm_);
  }

  /// Creates the archive, runs Adam (retrofit), checks stability, simmers, finishes.
  int execute(const io::RunCheckpoint* resume);

 private:
  static int rank_of(MPI_Comm comm) {
    int r = 0;
    MPI_Comm_rank(comm, &r);
    return r;
  }
  void announce(bool resumed) const;
  int adam_phase();
  /// simmer.noise_sd = auto (collective): the deep ensemble's RMS residual on the validation rows
  /// (else the training rows) sets the noise sd, T_Bayes and the temperatures.
  void estimate_noise();
  /// The noise sd in force from here on: the problem's temperatures, the schedule, the replica
  /// sets and the archive's ladder attributes; with `say`, rank 0 prints it.
  void set_noise_sd(double sd, const std::string& source, bool say);
  void write_adam_rows();
  /// Every chain's rows owed to the archive; only the leader's are kept.
  std::vector<std::pair<std::int64_t, run::ChainRows>> take_rows();
  /// Collective when `poll`: the stop signal any rank received, or SIGALRM for a rank past
  /// run.max_hours (0: neither). With `furthest`, also
  /// the furthest step (or epoch) any rank's chains reached, the step every chain then goes to.
  [[nodiscard]] int stop_signal(bool poll, std::int64_t* furthest = nullptr);
  /// What the chains ask between steps: the signal's flag, or nothing when the ranks of a
  /// trajectory run in lockstep (run.ranks_per_trajectory > 1: their gradients are collective,
  /// so they stop only at the ranks' common poll, every run.sync_every steps).
  [[nodiscard]] run::Chain::StopCheck stop_check() const;
  /// This rank's chains from `from` toward `end` (steps or Adam epochs), in turns of `turn` while
  /// they check for a stop signal (one chain, or none checking: all at once), so a chain that
  /// stops leaves the others at most a turn ahead. `advance(chain, to, check)` moves one chain
  /// and says where it got (-1: the health check stopped it). Returns the furthest position.
  template <class Advance>
  std::int64_t take_turns(std::int64_t from, std::int64_t end, std::int64_t turn, run::Chain::StopCheck check,
                          const Advance& advance);
  void say_stopped(int signal, const std::string& where);
  bool stability_check();
  /// Collective, after Adam: false (the refusal said, the status set) when the hottest
  /// temperature is too hot for the step the run takes there (run::too_hot).
  bool temperature_check();
  void curvature_report(bool at_end);
  int simmer_phase();
  /// One replica-exchange round after step_ (collective): the losses to every rank, the same
  /// decisions everywhere, the accepted configurations moved between the ranks that hold them.
  void exchange();
  /// /ladder/exchange_* and /ladder/round_trips (collective), and the console's line on them.
  void write_exchange();
  void gather();
  void checkpoint();
  /// Collective: whether a checkpoint due by run.checkpoint_interval is written (rank 0's rule,
  /// run.checkpoint_budget: skipped while the checkpoints so far took more than that share of the
  /// wall time since this process began the run).
  [[nodiscard]] bool checkpoint_affordable();
  void restore(const io::RunCheckpoint& c);
  /// The run's end (report, archive, checkpoint removed); kExitDiverged when a trajectory diverged.
  int finish();
  /// Rank 0, after the archive is closed: "" when it reads back with `status` and every
  /// checksum good; else what is wrong.
  [[nodiscard]] std::string final_check(const std::string& status) const;
  /// Collective: stops the run (an error on rank 0, PeerError elsewhere) when rank 0 lost its
  /// lock or the archive at run.output is no longer the file it writes.
  void watch_output();
  [[nodiscard]] std::string ensemble_metric() const;
  /// The chains this rank speaks for: its own, or none on a group's non-leading ranks.
  [[nodiscard]] std::vector<run::Chain*> chains() const;

  run::Problem& p_;  ///< simmer.noise_sd = auto sets its noise sd and temperatures after Adam
  std::string command_line_;
  MPI_Comm comm_;
  io::OutputLock* lock_;                  ///< rank 0's lock on the output (nullptr elsewhere)
  std::optional<io::OutputWatch> watch_;  ///< rank 0: the archive file the run created
  int rank_ = 0;
  int size_ = 1;
  Progress progress_;
  double earlier_wall_seconds_ = 0.0;  ///< a resumed run: the wall time of its segments before this one
  /// The run's wall time so far, over every segment it ran in (/wall_seconds, each checkpoint's).
  [[nodiscard]] double wall_seconds() const { return earlier_wall_seconds_ + progress_.elapsed(); }
  std::string checkpoint_path_;
  std::string run_id_;  ///< recorded in the archive and every checkpoint
  std::vector<std::unique_ptr<run::Chain>> chains_;
  bool leader_ = true;                   ///< first rank of its group: speaks for its chains
  MPI_Comm group_comm_ = MPI_COMM_NULL;  ///< run.ranks_per_trajectory > 1: this rank's group
  std::unique_ptr<GroupGradients> gradients_;
  std::vector<ensemble::PooledEnsemble> pooled_;  ///< rank 0: per simmering stage
  train::Schedule schedule_ = p_.schedule();      ///< T of every simmering step (trajectory 0's)
  run::ReplicaSets replicas_{p_};                 ///< parallel rungs' replica exchange (same on every rank)
  std::optional<ArchiveWriter> archive_;
  std::int64_t step_ = 0;         ///< simmering steps completed
  std::int64_t generation_ = 0;   ///< the last checkpoint's number (io::RunCheckpoint::generation)
  std::int64_t adam_epoch_ = -1;  ///< during a retrofit's Adam phase its epochs completed, else -1
  double cpu_start_ = run::cpu_seconds();
  double comm_io_seconds_ = 0.0;  ///< gathers, aggregation, archive writes
  std::chrono::steady_clock::time_point wall_start_ = std::chrono::steady_clock::now();
  double checkpoint_wall_seconds_ = 0.0;  ///< rank 0: wall time in checkpoint() since wall_start_
  bool slow_warned_ = false;              ///< a "slow to heat" warning was printed on this rank
  bool diverged_warned_ = false;          ///< a divergence warning was printed on this rank
};

}  // namespace simmer::parallel::detail
