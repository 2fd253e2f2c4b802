#include "simmer/parallel/driver.hpp"

#include "run_session.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <random>

#include "simmer/core/error.hpp"
#include "simmer/ensemble/partial.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/io/checkpoint_state.hpp"
#include "simmer/parallel/archive_writer.hpp"
#include "simmer/parallel/collectives.hpp"
#include "simmer/parallel/progress.hpp"
#include "simmer/parallel/report.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/chain.hpp"
#include "simmer/train/stability.hpp"

#ifndef SIMMER_VERSION
#define SIMMER_VERSION "unknown"
#endif

namespace simmer::parallel {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
/// When this rank received its first stop signal (clock_gettime is async-signal-safe): the stop
/// line says how long the checkpoint took after it, against mpirun's grace before SIGKILL.
timespec g_stop_time{};

extern "C" void on_stop_signal(int signum) {
  const int saved = errno;  // (clock_gettime may set it; the interrupted code may be reading it)
  if (g_stop_signal == 0) clock_gettime(CLOCK_MONOTONIC, &g_stop_time);
  g_stop_signal = signum;
  errno = saved;
}

/// Seconds since this rank's first stop signal, or a negative number when it received none.
double seconds_since_stop_signal() {
  if (g_stop_signal == 0) return -1.0;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec - g_stop_time.tv_sec) +
         1e-9 * static_cast<double>(now.tv_nsec - g_stop_time.tv_nsec);
}

/// The stop code of run.max_hours (no signal delivers it to a rank: SIGALRM is not handled).
constexpr int kTimeLimit = SIGALRM;

/// The chains' check between steps: a flag read, no collective.
bool stop_pending() { return g_stop_signal != 0; }

/// Steps each of a rank's chains takes in turn while they check for a stop signal: a chain that
/// stops leaves the others at most this far ahead (64 steps of a small network: milliseconds).
/// Adam's turn is one epoch.
constexpr std::int64_t kStopTurn = 64;

/// Test hook: SIMMER_TEST_SIGNAL_AT=N raises SIGUSR1 on rank 0 at the first stop poll at or after
/// simmering step N (once), so a test stops a run at a known step however fast the machine is.
/// The handler and the collective stop that follow are the real ones.
void injected_signal(std::int64_t step, int rank) {
  static const char* at = std::getenv("SIMMER_TEST_SIGNAL_AT");
  static bool raised = false;
  if (at == nullptr || raised || rank != 0 || step < std::atoll(at)) return;
  raised = true;
  std::raise(SIGUSR1);
}

/// A fresh run's identity: 128 random bits from rank 0, as 32 hex digits, on every rank.
std::string new_run_id(MPI_Comm comm) {
  std::uint64_t words[2] = {0, 0};
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    std::random_device entropy;
    for (auto& w : words) w = (static_cast<std::uint64_t>(entropy()) << 32U) ^ entropy();
  }
  MPI_Bcast(words, 2, MPI_UINT64_T, 0, comm);
  char text[40];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(words[0]),
                static_cast<unsigned long long>(words[1]));
  return text;
}

/// The next multiple of `every` after `step` (never, for every = 0).
std::int64_t next_multiple(std::int64_t step, std::int64_t every) {
  return every > 0 ? (step / every + 1) * every : std::numeric_limits<std::int64_t>::max();
}

}  // namespace

namespace detail {

std::vector<run::Chain*> Run::chains() const {
  std::vector<run::Chain*> out;
  if (!leader_) return out;  // the other ranks of a group hold copies
  for (const auto& ch : chains_) out.push_back(ch.get());
  return out;
}

void Run::announce(bool resumed) const {
  if (rank_ != 0) return;
  const auto shape = ArchiveShape::of(p_);
  const std::string stages =
      p_.ladder.rungs.empty()
          ? std::string()
          : " in " + std::to_string(p_.stages()) + " rungs of " + std::to_string(p_.run.steps) + " steps" +
                (p_.parallel_rungs() ? " side by side (trajectory i at rung i mod " + std::to_string(p_.stages()) + ")"
                                     : "");
  // The paper's chain goes unnamed; another thermostat (simmer.thermostat = auto's choice in
  // posterior units, say) is said.
  const std::string thermostat = p_.adam_only || p_.nhc.thermostat == train::Thermostat::nose_hoover_chain
                                     ? std::string()
                                     : ", " + train::to_string(p_.nhc.thermostat) + " thermostat";
  std::printf(
      "simmer %s: %lld trajectories on %d rank(s), %s%s, %lld parameters, %lld members per "
      "trajectory%s, %lld stored%s\n%s\n",
      SIMMER_VERSION, static_cast<long long>(p_.run.trajectories), size_,
      p_.adam_only ? "Adam alone (deep ensemble)" : train::to_string(p_.mode).c_str(), thermostat.c_str(),
      static_cast<long long>(p_.parameters), static_cast<long long>(shape.members), stages.c_str(),
      static_cast<long long>(shape.draws), resumed ? " (resumed)" : "", temperature_reading(p_).c_str());
  std::fflush(stdout);
}

int Run::execute(const io::RunCheckpoint* resume) {
  announce(resume != nullptr);
  const bool retrofit = p_.mode == train::StartMode::retrofit;
  if (resume != nullptr) {
    run_id_ = resume->run_id;
    restore(*resume);
    archive_.emplace(ArchiveWriter::reopen(p_, comm_));
    if (rank_ == 0) watch_.emplace(p_.run.output);
    adam_epoch_ = resume->adam_epoch;
    if (rank_ == 0) {
      if (adam_epoch_ >= 0) {
        std::printf("resuming Adam at epoch %lld of %lld from %s\n", static_cast<long long>(resume->adam_epoch),
                    static_cast<long long>(p_.adam.epochs), checkpoint_path_.c_str());
      } else {
        std::printf("resuming at step %lld of %lld from %s\n", static_cast<long long>(step_),
                    static_cast<long long>(p_.total_steps()), checkpoint_path_.c_str());
      }
    }
  } else {
    run_id_ = new_run_id(comm_);
    archive_.emplace(ArchiveWriter::create(p_, command_line_, run_id_, comm_));
    if (rank_ == 0) watch_.emplace(p_.run.output);
    if (lock_ != nullptr) lock_->guard(p_.run.output, false);  // (a resume took it before starting)
    adam_epoch_ = retrofit ? 0 : -1;
  }
  const auto stopped = [&](int code) {
    archive_->file().attribute(run::layout::kRoot, run::layout::kStatus, std::string(run::layout::kStatusStopped));
    archive_->file().close();
    return code;
  };
  if (resume == nullptr || adam_epoch_ >= 0) {
    if (adam_epoch_ >= 0) {
      const int code = adam_phase();
      if (code != 0) return stopped(code);
    }
    if (p_.noise_pending) estimate_noise();  // simmer.noise_sd = auto: before any T is used
    for (auto& ch : chains_) ch->start();
    archive_->start_state(chains());
    // Adam alone has nothing to integrate: no stability check, no curvature report.
    // Refused before simmering: the archive says why; a checkpoint from Adam goes, since a resume
    // may not change the keys that would make the run acceptable.
    const auto refused = [&] {
      archive_->file().close();
      if (rank_ == 0) {
        std::remove(checkpoint_path_.c_str());
        std::remove((checkpoint_path_ + ".tmp").c_str());
      }
      return kExitUnstable;
    };
    if (!p_.adam_only && p_.health.stability_check != run::HealthOptions::StabilityCheck::off && !stability_check()) {
      return refused();
    }
    if (!p_.adam_only && !temperature_check()) return refused();
    if (!p_.adam_only && p_.diagnostics.curvature_report != run::DiagnosticsOptions::CurvatureReport::off) {
      curvature_report(false);
    }
    adam_epoch_ = -1;
    checkpoint();  // the end of the Adam phase (or the ab initio start)
    // A stop signal that came during the checks is acted on now, not 100 steps later.
    if (const int signal = stop_signal(true); signal != 0) {
      say_stopped(signal, retrofit ? "the end of Adam" : "the start");
      return stopped(kExitStopped);
    }
  }
  const int code = simmer_phase();
  if (code != 0) return stopped(code);
  return finish();
}

int Run::stop_signal(bool poll, std::int64_t* furthest) {
  // A stop signal on any rank stops all ranks at the same boundary: the furthest any rank's
  // chains reached (a chain ends its block early at a signal; the others catch up to it).
  if (!poll) return 0;
  parallel::quiet_barrier(comm_);  // the ranks that finished their block first wait without spinning
  std::int64_t mine[2] = {static_cast<std::int64_t>(g_stop_signal), furthest != nullptr ? *furthest : 0};
  // run.max_hours: past the cap, the run stops as at a signal (the ranks' clocks may differ: any
  // rank past it stops them all).
  const double hours = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count() / 3600.0;
  if (mine[0] == 0 && p_.run.max_hours > 0.0 && hours >= p_.run.max_hours) mine[0] = kTimeLimit;
  MPI_Allreduce(MPI_IN_PLACE, mine, 2, MPI_INT64_T, MPI_MAX, comm_);
  if (furthest != nullptr) *furthest = mine[1];
  return static_cast<int>(mine[0]);
}

run::Chain::StopCheck Run::stop_check() const { return p_.run.ranks_per_trajectory == 1 ? stop_pending : nullptr; }

template <class Advance>
std::int64_t Run::take_turns(std::int64_t from, std::int64_t end, std::int64_t turn, run::Chain::StopCheck check,
                             const Advance& advance) {
  // One chain, or no check: the whole block at once. A chain that stops for a signal ends the
  // turn there for the rank's later chains too.
  if (check == nullptr || chains_.size() <= 1) turn = end - from;
  std::int64_t furthest = from;
  for (std::int64_t at = from; at < end;) {
    const std::int64_t to = std::min(end, at + turn);
    std::int64_t upto = to;
    for (auto& ch : chains_) {
      const std::int64_t reached = advance(*ch, upto, upto == to ? check : nullptr);
      if (reached < 0) continue;  // a chain the health check stopped owes no steps
      upto = std::min(upto, reached);
      furthest = std::max(furthest, reached);
    }
    at = to;
    if (upto < to || (check != nullptr && check())) break;  // (a turn of one epoch cannot end early)
  }
  return furthest;
}

void Run::say_stopped(int signal, const std::string& where) {
  if (rank_ != 0) return;
  // How long the stop took on rank 0 (a signal sent to other ranks only: not known here).
  const double seconds = seconds_since_stop_signal();
  char took[48] = "";
  if (seconds >= 0.0) std::snprintf(took, sizeof took, " %.2f s after the signal", seconds);
  char what[64] = "received a stop signal";
  if (signal == SIGTERM || signal == SIGUSR1) {
    std::snprintf(what, sizeof what, "received %s", signal == SIGTERM ? "SIGTERM" : "SIGUSR1");
  } else if (signal == kTimeLimit) {
    std::snprintf(what, sizeof what, "reached run.max_hours = %g", p_.run.max_hours);
  }
  std::printf(
      "%ssimmer_mpi: %s at %s: checkpointed to %s%s; continue with\n"
      "  mpirun ... simmer_mpi --resume %s\n",
      progress_.terminal() ? "\n" : "", what, where.c_str(), checkpoint_path_.c_str(), took, p_.run.output.c_str());
  std::fflush(stdout);
}

int Run::adam_phase() {
  // Every trajectory's Adam in blocks of epochs: a stop signal is polled every run.sync_every
  // epochs, and the state checkpointed every adam.checkpoint_every (Adam's trace rows written
  // first, so a checkpoint owes the archive nothing). The end of Adam is checkpointed by
  // execute, after the stability check.
  const std::int64_t epochs = p_.adam.epochs;
  std::int64_t& epoch = adam_epoch_;  // every chain's (a checkpoint records it)
  const auto report = [&](const run::Chain& ch) {
    return [&](std::int64_t e, double loss) {
      if (ch.index() == 0) progress_.adam(e, epochs, loss);
    };
  };
  while (epoch < epochs) {
    const std::int64_t next_sync = next_multiple(epoch, p_.run.sync_every);
    const std::int64_t next_checkpoint = next_multiple(epoch, p_.run.adam_checkpoint_every);
    const std::int64_t end = std::min({epochs, next_sync, next_checkpoint});
    // A stop signal ends a chain's block after its current epoch; every chain then goes to the
    // furthest epoch any rank reached.
    const run::Chain::StopCheck check = stop_check();
    std::int64_t furthest =
        take_turns(epoch, end, 1, check, [&](run::Chain& ch, std::int64_t to, run::Chain::StopCheck stop) {
          ch.adam_to(to, report(ch), stop);
          return ch.adam_epoch();
        });
    // With the chains' check every block ends at a poll (a rank's chains may have stopped early).
    const int signal = stop_signal(check != nullptr || end == next_sync || end == epochs, &furthest);
    if (signal != 0) {
      for (auto& ch : chains_) ch->adam_to(furthest, report(*ch));
    }
    epoch = signal != 0 ? furthest : end;
    if (epoch == epochs && signal == 0) break;
    if (epoch == next_checkpoint || signal != 0) {
      write_adam_rows();
      archive_->file().flush();
      checkpoint();
    }
    if (signal != 0) {
      say_stopped(signal, "Adam epoch " + std::to_string(epoch) + " of " + std::to_string(epochs));
      return kExitStopped;
    }
  }
  for (auto& ch : chains_) ch->finish_adam();
  write_adam_rows();
  return 0;
}

void Run::estimate_noise() {
  // Every trajectory's Adam network on the noise set, in one buffer by trajectory index (each
  // slot written by one rank, the others' zeros: the sum is exact, so every rank holds the same
  // bits for any rank count), then the deep ensemble's mean and its RMS residual.
  const std::size_t set = p_.noise_set();
  const run::EvalSet& s = p_.sets[set];
  const Index rows = s.rows(), outputs = s.y.cols();
  const auto block = static_cast<std::size_t>(rows * outputs);
  std::vector<double> all(static_cast<std::size_t>(p_.run.trajectories) * block, 0.0);
  for (run::Chain* ch : chains()) {
    const ConstBatchView pred = ch->baseline_prediction(set);
    double* out = all.data() + static_cast<std::size_t>(ch->index()) * block;
    for (Index r = 0; r < rows; ++r) {
      for (Index j = 0; j < outputs; ++j) out[static_cast<std::size_t>(r * outputs + j)] = pred(r, j);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, all.data(), static_cast<int>(all.size()), MPI_DOUBLE, MPI_SUM, comm_);
  const auto n = static_cast<double>(p_.run.trajectories);
  double sum = 0.0;
  for (Index r = 0; r < rows; ++r) {
    for (Index j = 0; j < outputs; ++j) {
      double mean = 0.0;
      for (std::int64_t i = 0; i < p_.run.trajectories; ++i) {
        mean += all[static_cast<std::size_t>(i) * block + static_cast<std::size_t>(r * outputs + j)];
      }
      const double d = s.y(r, j) - mean / n;
      sum += d * d;
    }
  }
  const double sd = std::sqrt(sum / static_cast<double>(rows * outputs));
  if (!(sd > 0.0) || !std::isfinite(sd)) {
    throw Error("simmer.noise_sd = auto: the deep ensemble's RMS residual on the " + s.name + " rows is " +
                std::to_string(sd) + " (Adam's networks " +
                (std::isfinite(sd) ? "fit those rows exactly" : "predict a non-finite value") +
                "); give simmer.noise_sd in target units");
  }
  set_noise_sd(sd, std::string(set == 0 ? "training" : "validation") + " residuals of the deep ensemble", true);
}

void Run::set_noise_sd(double sd, const std::string& source, bool say) {
  p_.set_noise_sd(sd, source);
  schedule_ = p_.schedule();
  replicas_ = run::ReplicaSets{p_};
  if (archive_) archive_->temperatures(p_);  // (a resume restores before reopening: the archive has them)
  if (rank_ != 0 || !say) return;
  const run::EvalSet& set = p_.sets[p_.noise_set()];
  std::printf(
      "noise: s = %.4g, the deep ensemble's RMS residual on the %lld %s rows (%lld Adam networks; "
      "simmer.noise_sd = auto)\n",
      sd, static_cast<long long>(set.rows()), set.name.c_str(), static_cast<long long>(p_.run.trajectories));
  if (!p_.adam_only) std::printf("%s\n", temperature_reading(p_).c_str());
  std::fflush(stdout);
}

void Run::write_adam_rows() {
  // Adam's trace rows since the last write, one collective write per field.
  const double t0 = run::cpu_seconds();
  archive_->rows(take_rows(), pooled_);
  comm_io_seconds_ += run::cpu_seconds() - t0;
}

std::vector<std::pair<std::int64_t, run::ChainRows>> Run::take_rows() {
  std::vector<std::pair<std::int64_t, run::ChainRows>> rows;
  for (auto& ch : chains_) {
    run::ChainRows r = ch->take_rows();  // taken on every rank of a group: the copies stay alike
    if (leader_) rows.emplace_back(ch->index(), std::move(r));
  }
  return rows;
}

bool Run::stability_check() {
  // Power iteration at each trajectory's start point. Each trajectory's own step against its own
  // curvature: the largest h sqrt(lambda_max) decides (with one step for all, the largest
  // curvature; with simmer.time_step = auto each trajectory chose its step from its own curvature,
  // and one trajectory's step against another's curvature refused runs that were stable).
  struct {
    double value;
    int index;
  } in{0.0, -1}, out{0.0, -1};
  // That trajectory's lambda_max and step, and the largest step (reported when no curvature is
  // positive), reduced in one MPI_Allreduce.
  enum : int { kLambda, kStep, kLargestStep, kCount };
  double worst[kCount] = {0.0, 0.0, 0.0};
  for (auto& ch : chains_) {
    const auto est = ch->stability_probe();
    const double h = p_.auto_step.on ? ch->time_step() : p_.nhc.time_step;
    const double margin = est.lambda_max > 0.0 ? h * std::sqrt(est.lambda_max) : 0.0;
    if (margin > in.value) {
      in = {margin, static_cast<int>(ch->index())};
      worst[kLambda] = est.lambda_max;
      worst[kStep] = h;
    }
    worst[kLargestStep] = std::max(worst[kLargestStep], h);
  }
  MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm_);
  if (in.index != out.index) worst[kLambda] = worst[kStep] = 0.0;  // the rank holding it says (MPI_MAX)
  MPI_Allreduce(MPI_IN_PLACE, worst, kCount, MPI_DOUBLE, MPI_MAX, comm_);
  const double h = out.index < 0 ? worst[kLargestStep] : worst[kStep];
  const run::StabilityVerdict v = run::judge_stability(worst[kLambda], out.index, h, p_.health.stability_check);
  auto& f = archive_->file();
  f.attribute(run::layout::kRoot, run::layout::kLambdaMax, v.lambda_max);
  f.attribute(run::layout::kRoot, run::layout::kTimeStepLimit, v.limit);
  f.flush();  // on disk before the first checkpoint: a resume must find them
  if (rank_ == 0) {
    std::fputs(v.report().c_str(), stdout);
    std::fflush(stdout);
    std::fputs(v.problem().c_str(), stderr);
  }
  if (v.proceed) return true;
  f.attribute(run::layout::kRoot, run::layout::kStatus, std::string(run::layout::kStatusRefusedUnstable));
  return false;
}

bool Run::temperature_check() {
  // The hottest T against the step the run takes there, before any simmering: a rung too hot for
  // it blows up at its first step, and a resume the same way (simmer.ladder = 1,1e308 with an
  // automatic step used to spend Adam and a rung, then blame the loss's curvature). The automatic
  // step there is estimated as the smaller of the step the trajectories chose for their first
  // stage and the thermostat's share at the hottest T: the rule measures the curvature again at
  // each rung's start, so this is an estimate, which refuses only steps off by orders of magnitude
  // (h sqrt(T) > 100 where a sampling step moves a parameter by far less than 1).
  double h = p_.nhc.time_step;
  if (p_.auto_step.on) {
    h = std::numeric_limits<double>::infinity();
    for (auto& ch : chains_) h = std::min(h, ch->time_step());
    MPI_Allreduce(MPI_IN_PLACE, &h, 1, MPI_DOUBLE, MPI_MIN, comm_);
    const double hottest = run::hottest_temperature(p_);
    const double dof = static_cast<double>(p_.parameters) - p_.nhc.dof_offset;
    h = std::min(h, p_.auto_step.fraction * train::thermostat_step_limit(p_.nhc, dof, hottest));
  }
  char step[96];
  std::snprintf(step, sizeof step,
                p_.auto_step.on ? "the automatic step (about h = %.4g there)" : "simmer.time_step = %g", h);
  const std::string why = run::too_hot(p_, h, step);
  if (why.empty()) return true;
  if (rank_ == 0) {
    const double unit = p_.posterior_units ? p_.bayes_temperature : 1.0;
    std::string value;
    char buf[32];
    for (const double t :
         p_.ladder.rungs.empty() ? std::vector<double>{run::hottest_temperature(p_)} : p_.ladder.rungs) {
      std::snprintf(buf, sizeof buf, "%.6g", t / unit);
      value += (value.empty() ? "" : ",") + std::string(buf);
    }
    std::fprintf(stderr, "simmer_mpi: error: option '%s' = '%s': %s (refused before simmering)\n", run::hottest_key(p_),
                 value.c_str(), why.c_str());
    std::fflush(stderr);
  }
  archive_->file().attribute(run::layout::kRoot, run::layout::kStatus, std::string(run::layout::kStatusRefusedTooHot));
  return false;
}

void Run::curvature_report(bool at_end) {
  // Stochastic Lanczos quadrature at each trajectory's position: how many Hessian eigenvalues
  // exceed the target T (only those modes stay harmonic at thermal amplitude).
  double local[3] = {0.0, 0.0, 0.0};  // Σ count, max λ, trajectories
  for (auto& ch : chains_) {
    if (at_end && ch->stopped()) continue;
    const auto& est = ch->estimate_curvature(at_end);  // collective within a group
    if (!leader_) continue;
    local[0] += est.count_above;
    local[1] = std::max(local[1], est.lambda_max);
    local[2] += 1.0;
  }
  double sum[3] = {0, 0, 0};
  MPI_Reduce(&local[0], &sum[0], 1, MPI_DOUBLE, MPI_SUM, 0, comm_);
  MPI_Reduce(&local[1], &sum[1], 1, MPI_DOUBLE, MPI_MAX, 0, comm_);
  MPI_Reduce(&local[2], &sum[2], 1, MPI_DOUBLE, MPI_SUM, 0, comm_);
  if (rank_ != 0 || sum[2] == 0.0) return;
  const double t = p_.ramp.target;
  const double count = sum[0] / sum[2];
  const double nf = static_cast<double>(p_.parameters) - p_.nhc.dof_offset;
  // Lanczos resolves eigenvalues to about lambda_max / steps^2 near the bottom of the spectrum:
  // below that the count is a coarse estimate.
  const double steps = p_.diagnostics.lanczos_steps;
  const bool coarse = t < sum[1] / (steps * steps);
  std::printf(
      "curvature at the %s: %.1f of %lld loss-Hessian eigenvalues exceed T = %.4g (stochastic Lanczos, "
      "%d steps x %d probes, mean over %.0f trajectories; largest %.4g); harmonic loss rise N_f T/2 = "
      "%.4g, from those stiff modes alone %.4g%s\n",
      at_end ? "end" : "start", count, static_cast<long long>(p_.parameters), t, p_.diagnostics.lanczos_steps,
      p_.diagnostics.lanczos_probes, sum[2], sum[1], 0.5 * nf * t, 0.5 * count * t,
      coarse ? " (coarse: T is below the Lanczos resolution lambda_max / steps^2)" : "");
  std::fflush(stdout);
}

int Run::simmer_phase() {
  const std::int64_t steps = p_.total_steps();
  progress_.simmer_from(step_);
  while (step_ < steps) {
    const std::int64_t next_gather = next_multiple(step_, p_.run.gather_interval);
    const std::int64_t next_checkpoint = next_multiple(step_, p_.run.checkpoint_interval);
    const std::int64_t next_sync = next_multiple(step_, p_.run.sync_every);
    const std::int64_t next_exchange =
        replicas_.enabled() ? next_multiple(step_, p_.ladder.exchange_every) : std::numeric_limits<std::int64_t>::max();
    const std::int64_t end = std::min({steps, next_gather, next_checkpoint, next_sync, next_exchange});
    // A stop signal ends a chain's block before its next step; every chain then goes to the
    // furthest step any rank reached: the stop checkpoint comes within a few steps of the
    // signal, not at the next poll.
    const std::int64_t start = step_;
    const run::Chain::StopCheck check = stop_check();
    std::int64_t furthest =
        take_turns(start, end, kStopTurn, check, [](run::Chain& ch, std::int64_t to, run::Chain::StopCheck stop) {
          const std::int64_t reached = ch.advance_to(to, stop);
          return ch.stopped() ? std::int64_t{-1} : reached;
        });
    if (end == next_sync || end == steps) injected_signal(end, rank_);
    // With the chains' check every block ends at a poll (a rank's chains may have stopped early).
    const int signal = stop_signal(check != nullptr || end == next_sync || end == steps, &furthest);
    if (signal != 0) {
      for (auto& ch : chains_) ch->advance_to(furthest);
    }
    step_ = signal != 0 ? furthest : end;
    // A signal before any chain took a step of this block leaves step_ where the last block
    // ended, whose exchange round (and progress line) is done: not again.
    const bool moved = step_ > start;
    if (moved && replicas_.due(step_)) exchange();
    if (step_ == next_gather || step_ == steps || step_ == next_checkpoint || (signal != 0 && step_ > 0)) gather();
    if (moved) {
      // Between gathers the loss and metric shown are the last gathered ones (of the stage under way).
      const auto stage = static_cast<std::size_t>(p_.stage_of(step_ - 1));
      progress_.step(step_, steps, schedule_(step_ - 1), rank_ == 0 ? pooled_[stage].mean_train_loss() : 0.0,
                     ensemble_metric(), step_ == steps);
    }
    if ((step_ == next_checkpoint && step_ < steps && checkpoint_affordable()) || signal != 0) checkpoint();
    if (signal != 0) {
      say_stopped(signal, "step " + std::to_string(step_));
      return kExitStopped;
    }
  }
  progress_.end_line();
  return 0;
}

std::string Run::ensemble_metric() const {
  if (rank_ != 0 || step_ == 0 || pooled_.empty()) return "-";
  // The stage under way (a ladder's rung named).
  const std::int64_t k = p_.stage_of(step_ - 1);
  const auto& pooled = pooled_[static_cast<std::size_t>(k)];
  const auto& test = p_.sets[1];
  const std::string rung = p_.ladder.rungs.empty() ? "" : p_.stage_name(k) + " ";
  char buf[96];
  if (p_.classification && pooled.members(1) > 0) {
    std::snprintf(buf, sizeof buf, "%sens test acc %.4f", rung.c_str(),
                  ensemble::accuracy(pooled.votes(1).majority(), test.labels));
    return buf;
  }
  if (!p_.classification && pooled.members(1) > 0) {
    std::snprintf(buf, sizeof buf, "%sens test MSE %.5g", rung.c_str(),
                  ensemble::mean_squared_error(view(pooled.means(1).mean()), view(test.y)));
    return buf;
  }
  return "-";
}

void Run::gather() {
  // Every trajectory's partial to rank 0, merged there in trajectory order; every rank writes
  // its own chains' rows; rank 0's pooled ensemble rewritten; the file flushed.
  parallel::quiet_barrier(comm_);  // ranks that arrive first wait without spinning (not counted as I/O)
  watch_output();
  const double t0 = run::cpu_seconds();
  std::vector<Record> mine;
  for (auto& ch : chains_) {
    ByteWriter w;
    for (const auto& partial : ch->take_partials()) partial.save(w);  // every stage's, in order
    if (leader_) mine.emplace_back(ch->index(), w.bytes());
  }
  const auto records = gather_records(mine, p_.run.trajectories, comm_);
  if (rank_ == 0) {
    const auto shape = run::ensemble_shape(p_);
    std::vector<std::vector<ensemble::EnsemblePartial>> partials(pooled_.size());
    for (const auto& bytes : records) {
      ByteReader r(bytes.data(), bytes.size(), "a gathered partial ensemble");
      for (auto& stage : partials) stage.push_back(ensemble::EnsemblePartial::load(r, shape));
    }
    for (std::size_t k = 0; k < pooled_.size(); ++k) pooled_[k].merge(partials[k]);
  }
  archive_->rows(take_rows(), pooled_);
  // The run's ensemble (one stage), or each rung of a ladder (the run's is chosen at its end).
  for (std::int64_t k = 0; k < p_.stages(); ++k) {
    const ensemble::PooledEnsemble empty;
    const auto& pooled = rank_ == 0 ? pooled_[static_cast<std::size_t>(k)] : empty;
    archive_->ensemble(pooled, p_.ladder.rungs.empty() ? std::string(run::layout::kEnsemble)
                                                       : run::layout::ladder_group(p_.stage_name(k)));
  }
  archive_->file().flush();
  comm_io_seconds_ += run::cpu_seconds() - t0;
}

void Run::checkpoint() {
  // Called right after a gather (no rows owed): every trajectory's state to rank 0, which writes
  // one file with its pooled ensemble. The archive first records the checkpoint's number and is
  // flushed (H5Fflush on the MPI-IO driver syncs the file to disk), so a checkpoint never names
  // rows the archive on disk does not hold.
  watch_output();
  const double t0 = run::cpu_seconds();
  const auto wall0 = std::chrono::steady_clock::now();
  const std::int64_t generation = generation_ + 1;
  archive_->file().attribute(run::layout::kRoot, run::layout::kCheckpointGeneration, generation);
  archive_->file().flush();
  std::vector<Record> mine;
  for (const run::Chain* ch : chains()) {
    ByteWriter w;
    ch->save(w);
    mine.emplace_back(ch->index(), w.bytes());
  }
  auto states = gather_records(mine, p_.run.trajectories, comm_);
  std::string error;
  if (rank_ == 0) {
    try {
      io::RunCheckpoint c;
      c.run_id = run_id_;
      c.version = SIMMER_VERSION;
      c.config_ini = p_.config_ini;
      c.step = step_;
      c.adam_epoch = adam_epoch_;
      c.trajectories = p_.run.trajectories;
      c.generation = generation;
      c.inputs = p_.input_fingerprints;
      c.noise_sd = p_.noise_pending ? 0.0 : p_.noise_sd;
      c.noise_sd_source = p_.noise_sd_source;
      c.wall_seconds = wall_seconds();
      ByteWriter pooled;
      for (const auto& stage : pooled_) stage.save(pooled);
      c.pooled = pooled.bytes();
      c.chains = std::move(states);
      if (replicas_.enabled()) {
        ByteWriter w;
        Saver ar(w);
        ar(replicas_);
        c.exchange = w.bytes();
      }
      io::save_checkpoint(checkpoint_path_, c);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  int ok = error.empty() ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm_);
  if (ok == 0) {
    if (rank_ == 0) throw Error(error);
    throw PeerError("checkpoint failed on rank 0");
  }
  generation_ = generation;
  comm_io_seconds_ += run::cpu_seconds() - t0;
  checkpoint_wall_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
}

bool Run::checkpoint_affordable() {
  // A checkpoint holds every member's series, so its size grows with the window: rewriting it every
  // run.checkpoint_interval steps made a long window's run mostly checkpoint writes (a sine ladder
  // with 100 000-step rungs: 74 % of its time). What is skipped is only the write: the gather that
  // precedes it is kept, so the archive is the same either way.
  int write = 1;
  if (rank_ == 0) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
    write = checkpoint_wall_seconds_ <= p_.run.checkpoint_budget * elapsed ? 1 : 0;
  }
  MPI_Bcast(&write, 1, MPI_INT, 0, comm_);
  return write != 0;
}

void Run::watch_output() {
  std::string problem;
  if (rank_ == 0) {
    if (lock_ != nullptr) problem = lock_->lost();
    if (problem.empty() && watch_) problem = watch_->changed();
  }
  int bad = problem.empty() ? 0 : 1;
  MPI_Bcast(&bad, 1, MPI_INT, 0, comm_);
  if (bad == 0) return;
  if (rank_ == 0) {
    throw Error("the output changed under the run: " + problem +
                "; the run stops here and keeps its last checkpoint '" + checkpoint_path_ +
                "' (it can be resumed only into the archive it belongs to)");
  }
  throw PeerError("rank 0 found the output changed");
}

void Run::restore(const io::RunCheckpoint& c) {
  if (c.trajectories != p_.run.trajectories) {
    throw Error("checkpoint '" + checkpoint_path_ + "': trajectory count differs");
  }
  step_ = c.step;
  generation_ = c.generation;
  earlier_wall_seconds_ = c.wall_seconds;
  // simmer.noise_sd = auto, measured before this checkpoint: the temperatures the chains load with.
  if (p_.noise_pending && c.noise_sd > 0.0) set_noise_sd(c.noise_sd, c.noise_sd_source, false);
  if (rank_ == 0) {
    ByteReader r(c.pooled.data(), c.pooled.size(), "checkpoint '" + checkpoint_path_ + "'");
    for (auto& stage : pooled_) stage.load(r);
  }
  for (auto& ch : chains_) {
    const auto& bytes = c.chains[static_cast<std::size_t>(ch->index())];
    ByteReader r(bytes.data(), bytes.size(), "checkpoint '" + checkpoint_path_ + "'");
    ch->load(r, step_);
  }
  if (replicas_.enabled()) {
    ByteReader r(c.exchange.data(), c.exchange.size(), "checkpoint '" + checkpoint_path_ + "' (replica exchange)");
    Loader ar(r);
    ar(replicas_);
  }
}

}  // namespace detail

const char* simmer_version() { return SIMMER_VERSION; }

int run(run::Problem& problem, const std::string& command_line, MPI_Comm comm, const io::RunCheckpoint* resume,
        io::OutputLock* lock) {
  detail::Run r(problem, command_line, comm, lock);
  return r.execute(resume);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

}  // namespace simmer::parallel
