#include "simmer/mpi/driver.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>

#include "simmer/core/error.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/io/archive_layout.hpp"
#include "simmer/io/checkpoint_file.hpp"
#include "simmer/io/h5.hpp"
#include "simmer/model/initializer.hpp"
#include "simmer/mpi/report.hpp"
#include "simmer/train/adam.hpp"
#include "simmer/train/spectrum.hpp"
#include "simmer/train/stability.hpp"
#include "simmer/train/trajectory.hpp"

#ifndef SIMMER_VERSION
#define SIMMER_VERSION "unknown"
#endif

namespace simmer::mpi {

bool agree_on_failure(MPI_Comm comm, bool failed, const std::string& message) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int size = 1;
  MPI_Comm_size(comm, &size);
  const int mine = failed ? rank : size;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return true;
  if (rank == first) std::cerr << "simmer_mpi: error: " << message << std::endl;
  return false;
}

namespace {

using Clock = std::chrono::steady_clock;
using Votes = ensemble::VoteAccumulator::Votes;

/// CPU time of this process: robust to oversubscription, where wall time includes the time a
/// rank waits for a core.
double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string format_duration(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, (static_cast<int>(s) % 3600) / 60);
  return buf;
}

/// One trajectory owned by this rank.
struct Chain {
  std::int64_t index = 0;
  Rng minibatch_rng;  ///< Adam's mini-batch order (RngPurpose::minibatch)
  Rng noise_rng;      ///< the Langevin thermostat's noise (RngPurpose::thermostat; checkpointed)
  model::Network net;
  std::unique_ptr<train::NetworkObjective> objective;
  std::unique_ptr<train::Trajectory> trajectory;
  std::vector<std::int64_t> sample_steps;
  std::size_t next_sample = 0;
  std::int64_t members = 0;       ///< members taken so far
  double last_loss = 0.0;
  // This interval's partial ensemble, per evaluation set.
  std::vector<ensemble::MeanAccumulator> means;
  std::vector<Votes> votes;
  std::int64_t interval_members = 0;
  std::vector<double> tracked;     ///< member predictions at the tracked test rows, this interval
  // Rows for the archive, this interval.
  std::vector<double> stored_params;    ///< members to store at the next gather (float64 archive)
  std::vector<float> stored_params32;   ///< the same for ensemble.store_dtype = float32
  std::vector<double> stats;       ///< per stored draw: io::layout::sample_stat_fields()
  std::int64_t stored_first = 0;   ///< draw index of the first stored row of this interval
  std::int64_t stored_count = 0;
  std::vector<double> trace;       ///< per record: io::layout::trace_fields()
  std::int64_t trace_first = 0;
  std::int64_t trace_count = 0;
  // Baseline: Adam end point (retrofit) or first member (ab initio).
  Vector baseline;
  std::vector<ensemble::SetScores> baseline_scores;  ///< train, test (empty before the baseline exists)
  // Drift and stationarity (issue 10): online diagnostics, the loss at the start, curvature.
  ensemble::TrajectoryDiagnostics diag;
  double start_loss = std::nan("");
  train::SpectrumEstimate curvature_start, curvature_end;
  // Health (SIMMERING.md §3's integrator can blow up when h exceeds the leapfrog limit).
  bool stopped = false;            ///< diverged with on_divergence = stop: no more steps
  std::int64_t diverged_step = -1; ///< first step at which divergence was detected (-1: never)
  std::int64_t slow_to_heat_step = -1;  ///< first check with T_kin < T/100 at constant T (-1: never)
  std::string diverged_reason;
  int strikes = 0;                 ///< consecutive health checks far from the target
  double last_energy = std::nan("");
  double last_check_temperature = std::nan("");
  double last_check_kinetic = std::nan("");  ///< T_kin at the previous health check
};

/// Exit codes of simmer_mpi (also in the README).
constexpr int kExitStopped = 3;   ///< SIGTERM/SIGUSR1: checkpointed, resume with --resume
constexpr int kExitUnstable = 4;  ///< time step above the leapfrog limit (stability_check = refuse)

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int signum) { g_stop_signal = signum; }

/// Every rank's `mine`, concatenated in rank order on rank 0 (empty elsewhere): MPI_Gatherv with
/// the counts gathered first.
template <class T>
std::vector<T> gather_to_root(const std::vector<T>& mine, MPI_Datatype type, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::vector<T> all;
  if (rank == 0) {
    int total = 0;
    for (int r = 0; r < size; ++r) {
      displs[static_cast<std::size_t>(r)] = total;
      total += counts[static_cast<std::size_t>(r)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(mine.data(), count, type, all.data(), counts.data(), displs.data(), type, 0, comm);
  return all;
}

/// Whether progress goes to a person at a terminal. mpirun hands its ranks a pseudo-terminal
/// even when its own output is redirected to a file, so under a launcher the launcher's stdout
/// (the parent process's fd 1) decides; a terminal type is needed too.
bool output_is_terminal() {
  const char* term = std::getenv("TERM");
  if (isatty(STDOUT_FILENO) == 0 || term == nullptr || *term == '\0' || std::string(term) == "dumb") {
    return false;
  }
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMIX_RANK") == nullptr) return true;
  char target[256] = {};
  const std::string link = "/proc/" + std::to_string(getppid()) + "/fd/1";
  const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0) return false;
  const std::string where(target, static_cast<std::size_t>(n));
  return where.rfind("/dev/pts/", 0) == 0 || where.rfind("/dev/tty", 0) == 0;
}

class Run {
 public:
  Run(const cli::Invocation& inv, const app::Problem& p, MPI_Comm comm,
      const std::vector<unsigned char>* resume)
      : inv_(inv), p_(p), c_(p.config), comm_(comm), resume_payload_(resume) {
    resumed_ = resume != nullptr;
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    tty_ = c_.run.progress == "bar" || (c_.run.progress == "auto" && output_is_terminal());
  }

  int execute();

 private:
  void setup_chains();
  [[nodiscard]] io::Type store_type() const {
    return c_.ensemble.store_dtype == "float32" ? io::Type::f32 : io::Type::f64;
  }
  void restore(const std::vector<unsigned char>& payload);
  void checkpoint(std::int64_t step_done);
  bool stability_check();
  void check_health(Chain& ch, const train::StepRecord& rec);
  void score_baseline(Chain& ch);
  void create_archive();
  void adam_phase();
  void write_start_state();
  void start_trajectory(Chain& ch, const Vector* adam_previous);
  void curvature_report(bool at_end);
  [[nodiscard]] ensemble::DiagnosticsSetup diagnostics_setup() const;
  std::vector<TrajectoryReport> gather_reports();
  EnsembleReport pooled_report();
  int simmer_phase();
  void take_member(Chain& ch, const train::StepRecord& rec);
  void record_trace(Chain& ch, int phase, std::int64_t step, double temperature, double train_loss);
  void gather(std::int64_t step_done);
  void write_intervals();
  void write_ensemble();
  void finish();
  void progress(std::int64_t step, double temperature, double mean_loss, bool force);
  std::vector<double> pack(Chain& ch);

  const cli::Invocation& inv_;
  const app::Problem& p_;
  const cli::Config& c_;
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  bool tty_ = false;
  Clock::time_point start_ = Clock::now();
  // CPU seconds of this rank, by activity.
  double cpu_start_ = cpu_now();
  double step_seconds_ = 0.0;  ///< inside gradient steps (Adam updates and NHC steps)
  double eval_seconds_ = 0.0;  ///< evaluating members and trace losses
  double comm_io_seconds_ = 0.0;  ///< gathers, aggregation, archive writes

  std::int64_t chains_total_ = 0;
  std::int64_t members_per_chain_ = 0;
  std::int64_t draws_ = 0;
  std::int64_t trace_records_ = 0;
  std::int64_t adam_records_ = 0;
  Index params_ = 0;
  std::vector<model::TensorLayout> layout_;
  std::vector<Chain> chains_;
  std::optional<io::ParallelFile> file_;

  // Rank 0's running ensemble, per evaluation set.
  std::vector<ensemble::MeanAccumulator> ens_mean_;
  std::vector<ensemble::VoteAccumulator> ens_votes_;
  std::vector<double> ens_tracked_;        ///< rows of (chain, member) predictions at tracked points
  std::vector<io::RowBlock> tracked_blocks_;
  std::vector<std::int64_t> tracked_written_;
  // Per-trajectory running regression accumulators on rank 0 ([trajectory][set]); the ensemble
  // is their merge in trajectory order, so it depends on neither ranks nor gather boundaries.
  std::vector<std::vector<ensemble::MeanAccumulator>> traj_means_;
  std::vector<std::int64_t> diverged_at_;   ///< rank 0: per trajectory, -1 or the step
  std::vector<Matrix> pooled_probability_;  ///< rank 0, at the end: train, test mean probabilities
  std::vector<ensemble::CoverageCounter> pooled_coverage_;  ///< rank 0, at the end (regression)
  double last_progress_ = -1e300;
  double mean_train_loss_ = std::nan("");
  std::int64_t step_ = 0;                   ///< simmering steps completed
  Clock::time_point simmer_start_ = Clock::now();
  std::int64_t simmer_first_step_ = 0;
  const std::vector<unsigned char>* resume_payload_ = nullptr;
  bool resumed_ = false;
  std::string checkpoint_path_;
};


void Run::setup_chains() {
  chains_total_ = c_.run.trajectories;
  {
    model::Network probe = model::build_network(p_.architecture);
    params_ = probe.parameter_count();
    layout_ = probe.layout();
  }
  const std::int64_t steps = c_.simmer.steps;
  std::int64_t members = -1;
  // Chains are built in place: each objective points at its chain's network.
  chains_.reserve(static_cast<std::size_t>(std::max<std::int64_t>(0, (chains_total_ - rank_ + size_ - 1) / size_)));
  for (std::int64_t i = rank_; i < chains_total_; i += size_) {
    Chain& ch = chains_.emplace_back();
    ch.index = i;
    // Trajectory i's named streams of the run seed (core/rng.hpp, RngPurpose).
    const auto named = [&](RngPurpose purpose) { return Rng::named(c_.run.seed, static_cast<std::uint64_t>(i), purpose); };
    ch.minibatch_rng = named(RngPurpose::minibatch);
    ch.noise_rng = named(RngPurpose::thermostat);
    ch.net = model::build_network(p_.architecture);
    Rng init = named(RngPurpose::initialization);
    ch.net.initialize(p_.init, init);
    ch.objective = std::make_unique<train::NetworkObjective>(
        ch.net, p_.loss, p_.sets[0].x, p_.sets[0].y, p_.output_scale, p_.output_offset);
    std::int64_t max_rows = 0;
    for (const auto& s : p_.sets) max_rows = std::max<std::int64_t>(max_rows, s.rows());
    ch.net.reserve(max_rows);
    Rng sampling = named(RngPurpose::sampling);
    ch.sample_steps = ensemble::select_sample_steps(steps, p_.sampling, sampling);
    if (members >= 0 && members != static_cast<std::int64_t>(ch.sample_steps.size())) {
      throw Error("internal: trajectories sample different member counts");
    }
    members = static_cast<std::int64_t>(ch.sample_steps.size());
    for (const auto& s : p_.sets) {
      if (p_.classification) ch.votes.push_back(Votes::Zero(s.rows(), p_.classes));
      else ch.means.emplace_back(s.rows(), p_.outputs);
    }
    ch.diag = ensemble::TrajectoryDiagnostics(diagnostics_setup());
  }
  // Every trajectory samples the same number of members (the sampling options fix it).
  members_per_chain_ = ensemble::member_count(steps, p_.sampling);
  draws_ = (members_per_chain_ + c_.ensemble.store_every - 1) / c_.ensemble.store_every;
  adam_records_ = p_.adam.epochs / c_.run.trace_every;
  trace_records_ = adam_records_ + steps / c_.run.trace_every;
  if (rank_ == 0) {
    for (const auto& s : p_.sets) {
      if (p_.classification) ens_votes_.emplace_back(s.rows(), p_.classes);
      else ens_mean_.emplace_back(s.rows(), p_.outputs);
    }
    if (!p_.classification) {
      traj_means_.resize(static_cast<std::size_t>(chains_total_));
      for (auto& per_set : traj_means_) {
        for (const auto& s : p_.sets) per_set.emplace_back(s.rows(), p_.outputs);
      }
    }
    diverged_at_.assign(static_cast<std::size_t>(chains_total_), -1);
    tracked_written_.assign(static_cast<std::size_t>(chains_total_), 0);
  }
  checkpoint_path_ = c_.run.output + ".ckpt";
}

void Run::create_archive() {
  file_.emplace(io::ParallelFile::create(c_.run.output, comm_));
  auto& f = *file_;
  const std::int64_t C = chains_total_, D = draws_, P = params_, R = trace_records_;
  // Root provenance. created_at is the same on all ranks (rank 0's clock, broadcast).
  long long now = static_cast<long long>(std::time(nullptr));
  MPI_Bcast(&now, 1, MPI_LONG_LONG, 0, comm_);
  char stamp[64];
  const std::time_t tt = static_cast<std::time_t>(now);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&tt));
  f.attribute("/", "simmer_version", std::string(SIMMER_VERSION));
  f.attribute("/", "created_at", std::string(stamp));
  f.attribute("/", "command_line", inv_.command_line);
  f.attribute("/", "mpi_ranks", static_cast<std::int64_t>(size_));
  f.attribute("/", "trajectories", C);
  f.attribute("/", "mode", train::to_string(p_.mode));
  f.attribute("/", "task", std::string(p_.classification ? "classification" : "regression"));
  f.put_strings("/config", {cli::to_ini(c_)});
  // The thermostat as it was resolved (Martyna masses follow from N_f, T and tau).
  std::string masses;
  for (int k = 0; k < p_.nhc.chain_length; ++k) {
    char q[32];
    std::snprintf(q, sizeof q, "%.17g", p_.nhc.masses.empty() ? 1.0 : p_.nhc.masses[static_cast<std::size_t>(k)]);
    masses += (k == 0 ? "" : ",") + std::string(q);
  }
  f.attribute("/", "thermostat", train::to_string(p_.nhc.thermostat));
  f.attribute("/", "thermostat_masses", masses);

  // /data: raw sets and scaling.
  f.create_group("/data");
  for (const auto& s : p_.sets) {
    const std::string g = "/data/" + s.name;
    f.create_group(g);
    f.put(g + "/x", std::vector<double>(s.x_raw.data(), s.x_raw.data() + s.x_raw.size()),
          {s.x_raw.rows(), s.x_raw.cols()});
    if (s.has_targets()) {
      if (p_.classification) f.put(g + "/y", s.labels, {static_cast<std::int64_t>(s.labels.size())});
      else f.put(g + "/y", std::vector<double>(s.y.data(), s.y.data() + s.y.size()), {s.y.rows(), s.y.cols()});
    }
  }
  f.create_group("/data/scaling");
  const auto put_row = [&](const std::string& path, const Eigen::RowVectorXd& v) {
    f.put(path, std::vector<double>(v.data(), v.data() + v.size()), {v.size()});
  };
  put_row("/data/scaling/x_min", p_.x_scaler.min());
  put_row("/data/scaling/x_max", p_.x_scaler.max());
  if (!p_.classification) {
    put_row("/data/scaling/y_min", p_.y_scaler.min());
    put_row("/data/scaling/y_max", p_.y_scaler.max());
  }
  f.put_strings("/data/feature_names", p_.train.feature_names);
  f.put_strings("/data/target_names", p_.train.target_names);
  if (p_.classification) f.put_strings("/data/class_names", p_.train.class_names);
  f.attribute("/data", "rows_read", p_.rows_read);
  f.attribute("/data", "rows_dropped", p_.rows_dropped);

  // /model: architecture and the flat parameter layout.
  f.create_group("/model");
  f.attribute("/model", "architecture", c_.model.architecture);
  f.attribute("/model", "activation", c_.model.activation);
  f.attribute("/model", "output", c_.model.output);
  f.attribute("/model", "loss", c_.model.loss);
  f.attribute("/model", "init", c_.model.init);
  f.attribute("/model", "parameters", static_cast<std::int64_t>(P));
  f.attribute("/model", "flattening",
              std::string("layer by layer; dense: kernel [fan_in][fan_out] row-major, then bias; "
                          "y = act(x W + b); conv2d: kernel [kh][kw][in_channels][filters] "
                          "row-major, then bias; image rows are height x width x channels (HWC)"));
  if (!p_.architecture.input_shape.empty()) {
    f.attribute("/model", "pooling", c_.model.pooling);
    std::string shape;
    for (const Index d : p_.architecture.input_shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    f.attribute("/model", "input_shape", shape + " (height x width x channels)");
  }
  std::vector<std::string> names;
  std::vector<std::int64_t> offsets, shapes;
  for (const auto& t : layout_) {
    names.push_back(t.name);
    offsets.push_back(t.offset);
  }
  const std::size_t max_rank = 4;
  for (const auto& t : layout_) {
    for (std::size_t d = 0; d < max_rank; ++d) shapes.push_back(d < t.shape.size() ? t.shape[d] : 1);
  }
  const auto tensors = static_cast<std::int64_t>(layout_.size());
  f.put_strings("/model/tensor_name", names);
  f.put("/model/tensor_offset", offsets, {tensors});
  f.put("/model/tensor_shape", shapes, {tensors, static_cast<std::int64_t>(max_rank)});
  std::vector<std::int64_t> ranks;
  for (const auto& t : layout_) ranks.push_back(static_cast<std::int64_t>(t.shape.size()));
  f.put("/model/tensor_rank", ranks, {tensors});

  // Per-chain datasets: chunks never span two chains, so no chunk is shared by two ranks.
  // Chunks of about 1 MB (at least one draw), sized to divide the draws evenly so the last
  // chunk is not mostly empty space on disk.
  const std::int64_t value_bytes = store_type() == io::Type::f32 ? 4 : 8;
  const std::int64_t max_chunk = std::max<std::int64_t>(1, (1 << 20) / (value_bytes * std::max<Index>(P, 1)));
  const std::int64_t n_chunks = (std::max<std::int64_t>(D, 1) + max_chunk - 1) / max_chunk;
  const std::int64_t draw_chunk = (std::max<std::int64_t>(D, 1) + n_chunks - 1) / n_chunks;
  f.create_group("/baseline");
  f.create_dataset("/baseline/params", io::Type::f64, {C, P}, {1, P}, true);
  f.create_group("/initial");
  f.create_dataset("/initial/params", io::Type::f64, {C, P}, {1, P});
  f.create_dataset("/initial/velocity", io::Type::f64, {C, P}, {1, P});
  f.create_group("/posterior");
  f.create_dataset("/posterior/params", store_type(), {C, D, P}, {1, draw_chunk, P}, true);
  f.attribute("/posterior/params", "store_every", c_.ensemble.store_every);
  f.create_group("/sample_stats");
  for (const auto& n : io::layout::sample_stat_fields()) {
    f.create_dataset("/sample_stats/" + n, io::Type::f64, {C, D}, {1, std::max<std::int64_t>(D, 1)}, true);
  }
  f.create_group("/trace");
  for (const auto& n : io::layout::trace_fields()) {
    f.create_dataset("/trace/" + n, io::Type::f64, {C, R}, {1, std::max<std::int64_t>(R, 1)}, true);
  }
  f.attribute("/trace", "phase_meaning", std::string("0 = Adam epoch, 1 = simmering step"));
  f.attribute("/trace", "train_loss_meaning",
              std::string("Adam: loss of the epoch's update; simmering: loss at the half-step position"));
  f.attribute("/trace", "position_meaning",
              std::string("distance = |x - x0| and path_length = integral of |v| dt from the simmering start x0 "
                          "(NaN during Adam); param_rms = |x|/sqrt(N); param_max_abs = max |x_i|"));
  // Dimension scales so xarray sees named dimensions.
  io::write_posterior_scales(f, C, D, P, io::layout::sample_stat_fields());

  // /ensemble: rewritten by rank 0 at every gather.
  f.create_group("/ensemble");
  for (const auto& s : p_.sets) {
    const std::string g = "/ensemble/" + s.name;
    f.create_group(g);
    if (p_.classification) {
      f.create_dataset(g + "/votes", io::Type::i64, {s.rows(), p_.classes});
      f.create_dataset(g + "/prediction", io::Type::i64, {s.rows()});
      f.create_dataset(g + "/fraction", io::Type::f64, {s.rows(), p_.classes});
    } else {
      f.create_dataset(g + "/mean", io::Type::f64, {s.rows(), p_.outputs});
      f.create_dataset(g + "/variance", io::Type::f64, {s.rows(), p_.outputs});
    }
  }
  if (!c_.ensemble.track.empty() && !p_.classification) {
    const auto k = static_cast<std::int64_t>(c_.ensemble.track.size()) * p_.outputs;
    f.create_dataset("/ensemble/test/tracked", io::Type::f64, {C, members_per_chain_, k},
                     {1, std::max<std::int64_t>(members_per_chain_, 1), k}, true);
    f.put("/ensemble/test/tracked_rows", c_.ensemble.track,
          {static_cast<std::int64_t>(c_.ensemble.track.size())});
  }
  f.create_group("/metrics");
  f.flush();
}

void Run::record_trace(Chain& ch, int phase, std::int64_t step, double temperature,
                       double train_loss) {
  const double t0 = cpu_now();
  const auto& test = p_.sets[1];
  const double test_loss = model::loss_value(p_.loss, ch.objective->predict(view(test.x)), view(test.y));
  // Where the parameters are: from the simmering start point once simmering runs.
  const Vector& x = ch.net.parameters();
  const ensemble::Position at = phase == 1 ? ch.diag.position(x)
                                           : ensemble::Position{std::nan(""), std::nan(""),
                                                                std::sqrt(x.squaredNorm() / static_cast<double>(x.size())),
                                                                x.cwiseAbs().maxCoeff()};
  ch.trace.insert(ch.trace.end(), {static_cast<double>(phase), static_cast<double>(step), temperature, train_loss,
                                   test_loss, at.distance, at.path_length, at.rms, at.max_abs});
  ch.trace_count += 1;
  eval_seconds_ += cpu_now() - t0;
}

void Run::adam_phase() {
  if (p_.mode != train::StartMode::retrofit) return;
  const std::int64_t epochs = p_.adam.epochs;
  for (auto& ch : chains_) {
    train::AdamState state = train::AdamState::zeros(params_);
    const double t0 = cpu_now();
    double recorded_eval = 0.0;
    train::train_adam(p_.adam, state, *ch.objective, ch.minibatch_rng, [&](std::int64_t epoch, double loss) {
      if (epoch % c_.run.trace_every == 0) {
        const double before = eval_seconds_;
        // Full batch: the epoch's loss belongs to the parameters before its update, so the test
        // loss is taken there too (mini-batch: the epoch's mean loss, test loss after it).
        const bool full_batch = p_.adam.batch_size == 0 || p_.adam.batch_size >= p_.sets[0].rows();
        if (full_batch) {
          const Vector keep = ch.net.parameters();
          ch.net.parameters() = state.previous;
          record_trace(ch, 0, epoch - epochs, 0.0, loss);
          ch.net.parameters() = keep;
        } else {
          record_trace(ch, 0, epoch - epochs, 0.0, loss);
        }
        recorded_eval += eval_seconds_ - before;
      }
      if (rank_ == 0 && ch.index == 0) {
        const double el = seconds_since(start_);
        if (el - last_progress_ >= (tty_ ? 0.2 : c_.run.progress_seconds) || epoch == epochs) {
          last_progress_ = el;
          std::printf("%sadam   epoch %lld/%lld  loss %.5g  (trajectory 0)  elapsed %s%s",
                      tty_ ? "\r" : "", static_cast<long long>(epoch), static_cast<long long>(epochs),
                      loss, format_duration(el).c_str(), tty_ ? "   " : "\n");
          std::fflush(stdout);
        }
      }
    });
    step_seconds_ += cpu_now() - t0 - recorded_eval;
    ch.baseline = ch.net.parameters();
    score_baseline(ch);
    // The retrofit start: velocity from the last two Adam iterates (or as simmer.start_velocity says).
    start_trajectory(ch, &state.previous);
  }
  if (rank_ == 0 && tty_) std::printf("\n");
  // Adam's trace rows, one collective write per field.
  const double t0 = cpu_now();
  std::vector<io::RowBlock> blocks;
  std::vector<double> rows, base;
  for (auto& ch : chains_) {
    blocks.push_back({ch.index, 0, ch.trace_count});
    rows.insert(rows.end(), ch.trace.begin(), ch.trace.end());
  }
  // trace datasets are 2-D [chain, record]: write each field separately.
  const auto& fields = io::layout::trace_fields();
  for (std::size_t field = 0; field < fields.size(); ++field) {
    std::vector<double> col;
    for (std::size_t r = field; r < rows.size(); r += fields.size()) col.push_back(rows[r]);
    file_->write_rows("/trace/" + fields[field], blocks, col.data(), io::Type::f64);
  }
  for (auto& ch : chains_) {
    ch.trace_first = ch.trace_count;
    ch.trace.clear();
  }
  comm_io_seconds_ += cpu_now() - t0;
}

void Run::start_trajectory(Chain& ch, const Vector* adam_previous) {
  const train::NoseHooverChain nhc(p_.nhc, params_);
  train::PhaseState start;
  switch (p_.start_velocity) {
    case train::StartVelocity::adam: start = nhc.retrofit_start(ch.net.parameters(), *adam_previous); break;
    case train::StartVelocity::zero: start = nhc.rest_start(); break;
    case train::StartVelocity::thermal: {
      Rng thermal = Rng::named(c_.run.seed, static_cast<std::uint64_t>(ch.index), RngPurpose::start_velocity);
      start = nhc.thermal_start(p_.ramp.first_positive(), thermal);
      break;
    }
  }
  if (c_.simmer.start_jitter != 0.0) {
    // A chaos check: v_i (1 + eps xi_i), from a stream of its own so nothing else changes.
    Rng jitter = Rng::named(c_.run.seed, static_cast<std::uint64_t>(ch.index), RngPurpose::jitter);
    for (Index i = 0; i < start.v.size(); ++i) start.v(i) *= 1.0 + c_.simmer.start_jitter * jitter.normal();
    start.kinetic = start.v.squaredNorm();
  }
  ch.trajectory = std::make_unique<train::Trajectory>(*ch.objective, p_.nhc, train::ramp_schedule(p_.ramp),
                                                      std::move(start));
  ch.trajectory->set_noise(&ch.noise_rng);
  ch.diag.start(ch.net.parameters());
  ch.start_loss = ch.objective->evaluate(ch.net.parameters());
}

ensemble::DiagnosticsSetup Run::diagnostics_setup() const {
  ensemble::DiagnosticsSetup d;
  d.classification = p_.classification;
  d.outputs = p_.outputs;
  d.classes = p_.classes;
  d.parameters = p_.parameters;
  d.window_first_step = c_.simmer.steps - c_.ensemble.window;
  d.window_steps = c_.ensemble.window;
  d.blocks = c_.ensemble.blocks;
  d.time_step = c_.simmer.time_step;
  const auto scored = [&](const app::EvalSet& set) {
    return p_.classification ? ensemble::ScoredSet{nullptr, &set.labels} : ensemble::ScoredSet{&set.y, nullptr};
  };
  d.train = scored(p_.sets[0]);
  d.test = scored(p_.sets[1]);
  return d;
}

void Run::curvature_report(bool at_end) {
  // Stochastic Lanczos quadrature at each trajectory's position: how many Hessian eigenvalues
  // exceed the target T (only those modes stay harmonic at thermal amplitude).
  const double t = p_.ramp.target;
  double local[3] = {0.0, 0.0, 0.0};  // Σ count, Σ λ_max, trajectories
  for (auto& ch : chains_) {
    if (at_end && ch.stopped) continue;
    Rng rng = Rng::named(c_.run.seed, static_cast<std::uint64_t>(ch.index), RngPurpose::curvature);
    const auto est = train::estimate_spectrum(*ch.objective, ch.net.parameters(), t, c_.simmer.lanczos_steps,
                                              c_.simmer.lanczos_probes, rng);
    (at_end ? ch.curvature_end : ch.curvature_start) = est;
    local[0] += est.count_above;
    local[1] = std::max(local[1], est.lambda_max);
    local[2] += 1.0;
  }
  double sum[3] = {0, 0, 0}, worst = 0.0;
  MPI_Reduce(local, sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm_);
  MPI_Reduce(local + 2, sum + 2, 1, MPI_DOUBLE, MPI_SUM, 0, comm_);
  MPI_Reduce(local + 1, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, comm_);
  if (rank_ != 0 || sum[2] == 0.0) return;
  const double count = sum[0] / sum[2];
  const double nf = static_cast<double>(params_) - c_.simmer.dof_offset;
  std::printf("curvature at the %s: %.1f of %lld loss-Hessian eigenvalues exceed T = %.4g (stochastic Lanczos, "
              "%d steps x %d probes, mean over %.0f trajectories; largest %.4g); harmonic loss rise N_f T/2 = "
              "%.4g, from those stiff modes alone %.4g\n",
              at_end ? "end" : "start", count, static_cast<long long>(params_), t, c_.simmer.lanczos_steps,
              c_.simmer.lanczos_probes, sum[2], worst, 0.5 * nf * t, 0.5 * count * t);
  std::fflush(stdout);
}

void Run::write_start_state() {
  std::vector<io::RowBlock> blocks;
  std::vector<double> x, v, base;
  for (auto& ch : chains_) {
    if (!ch.trajectory) start_trajectory(ch, nullptr);  // ab initio: at the fresh initialisation
    blocks.push_back({ch.index, 0, static_cast<std::int64_t>(params_)});  // a [chain, param] row
    x.insert(x.end(), ch.net.parameters().begin(), ch.net.parameters().end());
    v.insert(v.end(), ch.trajectory->phase().v.begin(), ch.trajectory->phase().v.end());
    if (p_.mode == train::StartMode::retrofit) {
      base.insert(base.end(), ch.baseline.begin(), ch.baseline.end());
    }
  }
  const double t0 = cpu_now();
  file_->write_rows("/initial/params", blocks, x.data(), io::Type::f64);
  file_->write_rows("/initial/velocity", blocks, v.data(), io::Type::f64);
  if (p_.mode == train::StartMode::retrofit) {
    file_->write_rows("/baseline/params", blocks, base.data(), io::Type::f64);
  }
  comm_io_seconds_ += cpu_now() - t0;
}

void Run::score_baseline(Chain& ch) {
  // The single network's scores, uncertainty included: its own softmax (classification), or a
  // Gaussian with its training MSE as the noise variance (regression).
  ch.baseline_scores.clear();
  const Vector keep = ch.net.parameters();
  ch.net.parameters() = ch.baseline;
  Matrix noise;
  for (std::size_t s = 0; s < 2; ++s) {
    const auto& set = p_.sets[s];
    const ConstBatchView pred = ch.objective->predict(view(set.x));
    if (p_.classification) {
      Matrix probabilities;
      ensemble::class_probabilities(pred, probabilities);
      ch.baseline_scores.push_back(ensemble::score_probabilities(view(probabilities), set.labels));
      ch.baseline_scores.back().metric = ensemble::accuracy(ensemble::predicted_classes(pred), set.labels);
    } else {
      if (s == 0) noise = ensemble::residual_variance(pred, view(set.y));
      ch.baseline_scores.push_back(ensemble::score_with_noise(pred, Matrix(), noise, view(set.y)));
    }
  }
  ch.net.parameters() = keep;
}

void Run::take_member(Chain& ch, const train::StepRecord& rec) {
  const double t0 = cpu_now();
  double train_loss = 0.0;
  ch.diag.begin_member(rec.step);
  for (std::size_t s = 0; s < p_.sets.size(); ++s) {
    const auto& set = p_.sets[s];
    ConstBatchView pred = ch.objective->predict(view(set.x));
    if (s == 0) train_loss = model::loss_value(p_.loss, pred, view(set.y));
    if (s < 2) ch.diag.member_predictions(static_cast<int>(s), pred);
    if (p_.classification) {
      const auto winners = ensemble::predicted_classes(pred);
      for (Index i = 0; i < set.rows(); ++i) ch.votes[s](i, winners[static_cast<std::size_t>(i)]) += 1;
    } else {
      ch.means[s].add(pred);
      if (s == 1) {
        for (const auto row : c_.ensemble.track) {
          for (Index o = 0; o < p_.outputs; ++o) ch.tracked.push_back(pred(row, o));
        }
      }
    }
  }
  ch.diag.member_done(ch.net.parameters(), train_loss);
  if (ch.members == 0 && p_.mode == train::StartMode::abinitio) {
    ch.baseline = ch.net.parameters();  // ab initio baseline: the first member
    score_baseline(ch);
  }
  if (ch.members % c_.ensemble.store_every == 0) {
    const auto& phase = ch.trajectory->phase();
    const auto& nhc = ch.trajectory->integrator();
    // Kept in the archive's precision until the next gather writes them.
    const Vector& x = ch.net.parameters();
    if (store_type() == io::Type::f32) {
      for (const double v : x) ch.stored_params32.push_back(static_cast<float>(v));
    } else {
      ch.stored_params.insert(ch.stored_params.end(), x.begin(), x.end());
    }
    ch.stats.insert(ch.stats.end(), {static_cast<double>(rec.step), rec.temperature, train_loss,
                                     nhc.kinetic_temperature(phase),
                                     nhc.extended_energy(ch.net.parameters(), phase, train_loss, rec.temperature)});
    ch.stored_count += 1;
  }
  ch.members += 1;
  ch.interval_members += 1;
  eval_seconds_ += cpu_now() - t0;
}

std::vector<double> Run::pack(Chain& ch) {
  std::vector<double> out{static_cast<double>(ch.index), ch.last_loss,
                          static_cast<double>(ch.interval_members),
                          static_cast<double>(ch.diverged_step)};
  for (std::size_t s = 0; s < p_.sets.size(); ++s) {
    if (p_.classification) {
      const auto& v = ch.votes[s];
      for (Index i = 0; i < v.size(); ++i) out.push_back(static_cast<double>(v.data()[i]));
      ch.votes[s].setZero();
    } else {
      // The trajectory's running totals (never reset): see traj_means_.
      const auto& m = ch.means[s];
      out.push_back(static_cast<double>(m.members()));
      out.insert(out.end(), m.mean().data(), m.mean().data() + m.mean().size());
      out.insert(out.end(), m.m2().data(), m.m2().data() + m.m2().size());
    }
  }
  out.insert(out.end(), ch.tracked.begin(), ch.tracked.end());
  ch.tracked.clear();
  ch.interval_members = 0;
  return out;
}

void Run::gather(std::int64_t step_done) {
  const double t0 = cpu_now();
  std::vector<double> mine;
  for (auto& ch : chains_) {
    const auto packet = pack(ch);
    mine.push_back(static_cast<double>(packet.size()));
    mine.insert(mine.end(), packet.begin(), packet.end());
  }
  const std::vector<double> all = gather_to_root(mine, MPI_DOUBLE, comm_);
  if (rank_ == 0) {
    // Index packets by trajectory, then merge in trajectory order: the ensemble's bits do not
    // depend on how trajectories were spread over ranks.
    std::vector<const double*> packets(static_cast<std::size_t>(chains_total_), nullptr);
    for (std::size_t pos = 0; pos < all.size();) {
      const auto len = static_cast<std::size_t>(all[pos]);
      const double* pk = all.data() + pos + 1;
      packets[static_cast<std::size_t>(pk[0])] = pk;
      pos += len + 1;
    }
    double loss_sum = 0.0;
    std::int64_t live = 0;
    tracked_blocks_.clear();
    ens_tracked_.clear();
    for (std::int64_t t = 0; t < chains_total_; ++t) {
      const double* pk = packets[static_cast<std::size_t>(t)];
      const auto n = static_cast<std::int64_t>(pk[2]);
      const auto diverged = static_cast<std::int64_t>(pk[3]);
      if (std::isfinite(pk[1])) {
        loss_sum += pk[1];
        ++live;
      }
      if (diverged >= 0 && diverged_at_[static_cast<std::size_t>(t)] < 0) {
        diverged_at_[static_cast<std::size_t>(t)] = diverged;
      }
      const double* cur = pk + 4;
      for (std::size_t s = 0; s < p_.sets.size(); ++s) {
        const Index rows = p_.sets[s].rows();
        const Index cells = rows * (p_.classification ? p_.classes : p_.outputs);
        if (p_.classification) {
          Votes v(rows, p_.classes);
          for (Index i = 0; i < cells; ++i) v.data()[i] = static_cast<std::int64_t>(cur[i]);
          ens_votes_[s].add_votes(v, n);
          cur += cells;
        } else {
          const auto m = static_cast<std::int64_t>(cur[0]);
          traj_means_[static_cast<std::size_t>(t)][s].restore(
              m, Eigen::Map<const Matrix>(cur + 1, rows, p_.outputs),
              Eigen::Map<const Matrix>(cur + 1 + cells, rows, p_.outputs));
          cur += 1 + 2 * cells;
        }
      }
      const auto k = static_cast<std::int64_t>(c_.ensemble.track.size()) * p_.outputs;
      if (k > 0 && !p_.classification && n > 0) {
        tracked_blocks_.push_back({t, tracked_written_[static_cast<std::size_t>(t)], n});
        ens_tracked_.insert(ens_tracked_.end(), cur, cur + n * k);
        tracked_written_[static_cast<std::size_t>(t)] += n;
      }
    }
    mean_train_loss_ = live > 0 ? loss_sum / static_cast<double>(live) : std::nan("");
    if (!p_.classification) {
      for (std::size_t s = 0; s < p_.sets.size(); ++s) {
        ens_mean_[s].clear();
        for (const auto& per_set : traj_means_) {
          const auto& m = per_set[s];
          ens_mean_[s].merge(m.members(), m.mean(), m.m2());
        }
      }
    }
  }
  write_intervals();
  write_ensemble();
  file_->flush();
  comm_io_seconds_ += cpu_now() - t0;
  (void)step_done;
}

void Run::write_intervals() {
  std::vector<io::RowBlock> draw_blocks, trace_blocks;
  std::vector<double> params;
  std::vector<float> params32;
  const auto& stat_fields = io::layout::sample_stat_fields();
  const auto& trace_fields = io::layout::trace_fields();
  std::vector<std::vector<double>> stats(stat_fields.size()), trace(trace_fields.size());
  for (auto& ch : chains_) {
    draw_blocks.push_back({ch.index, ch.stored_first, ch.stored_count});
    params.insert(params.end(), ch.stored_params.begin(), ch.stored_params.end());
    params32.insert(params32.end(), ch.stored_params32.begin(), ch.stored_params32.end());
    for (std::size_t r = 0; r < ch.stats.size(); ++r) stats[r % stats.size()].push_back(ch.stats[r]);
    trace_blocks.push_back({ch.index, ch.trace_first, ch.trace_count - ch.trace_first});
    for (std::size_t r = 0; r < ch.trace.size(); ++r) trace[r % trace.size()].push_back(ch.trace[r]);
    ch.stored_first += ch.stored_count;
    ch.stored_count = 0;
    ch.stored_params.clear();
    ch.stored_params32.clear();
    ch.stats.clear();
    ch.trace_first = ch.trace_count;
    ch.trace.clear();
  }
  if (store_type() == io::Type::f32) {
    file_->write_rows("/posterior/params", draw_blocks, params32.data(), io::Type::f32);
  } else {
    file_->write_rows("/posterior/params", draw_blocks, params.data(), io::Type::f64);
  }
  for (std::size_t i = 0; i < stat_fields.size(); ++i) {
    file_->write_rows("/sample_stats/" + stat_fields[i], draw_blocks, stats[i].data(), io::Type::f64);
  }
  for (std::size_t i = 0; i < trace_fields.size(); ++i) {
    file_->write_rows("/trace/" + trace_fields[i], trace_blocks, trace[i].data(), io::Type::f64);
  }
  if (!c_.ensemble.track.empty() && !p_.classification) {
    file_->write_rows("/ensemble/test/tracked", tracked_blocks_, ens_tracked_.data(), io::Type::f64);
  }
}

void Run::write_ensemble() {
  for (std::size_t s = 0; s < p_.sets.size(); ++s) {
    const std::string g = "/ensemble/" + p_.sets[s].name;
    if (p_.classification) {
      Votes votes;
      std::vector<std::int64_t> majority;
      Matrix fraction;
      if (rank_ == 0) {
        votes = ens_votes_[s].votes();
        majority = ens_votes_[s].majority();
        fraction = ens_votes_[s].fractions();
      }
      file_->write_from_root(g + "/votes", votes.data(), io::Type::i64);
      file_->write_from_root(g + "/prediction", majority.data(), io::Type::i64);
      file_->write_from_root(g + "/fraction", fraction.data(), io::Type::f64);
      const std::int64_t members = rank_ == 0 ? ens_votes_[s].members() : 0;
      std::int64_t m = members;
      MPI_Bcast(&m, 1, MPI_INT64_T, 0, comm_);
      file_->attribute(g, "members", m);
    } else {
      Matrix mean, var;
      if (rank_ == 0) {
        mean = ens_mean_[s].mean();
        var = ens_mean_[s].variance();
      }
      file_->write_from_root(g + "/mean", mean.data(), io::Type::f64);
      file_->write_from_root(g + "/variance", var.data(), io::Type::f64);
      std::int64_t m = rank_ == 0 ? ens_mean_[s].members() : 0;
      MPI_Bcast(&m, 1, MPI_INT64_T, 0, comm_);
      file_->attribute(g, "members", m);
    }
  }
}

void Run::progress(std::int64_t step, double temperature, double mean_loss, bool force) {
  if (rank_ != 0) return;
  const double el = seconds_since(start_);
  if (!force && el - last_progress_ < (tty_ ? 0.2 : c_.run.progress_seconds)) return;
  last_progress_ = el;
  const std::int64_t total = c_.simmer.steps;
  const double frac = static_cast<double>(step) / static_cast<double>(total);
  // ETA from the simmering rate alone (not Adam's, nor the steps done before a resume).
  const double done = static_cast<double>(step - simmer_first_step_);
  const double eta = done > 0 ? seconds_since(simmer_start_) / done * static_cast<double>(total - step) : 0.0;
  std::string metric = "-";
  char buf[64];
  const auto& test = p_.sets[1];
  if (p_.classification && ens_votes_[1].members() > 0) {
    std::snprintf(buf, sizeof buf, "ens test acc %.4f", ensemble::accuracy(ens_votes_[1].majority(), test.labels));
    metric = buf;
  } else if (!p_.classification && ens_mean_[1].members() > 0) {
    std::snprintf(buf, sizeof buf, "ens test MSE %.5g", ensemble::mean_squared_error(view(ens_mean_[1].mean()), view(test.y)));
    metric = buf;
  }
  if (tty_) {
    const int width = 30;
    const int filled = static_cast<int>(frac * width);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(width, '.');
    std::printf("\r[%s] %lld/%lld T %.4g loss %.5g %s elapsed %s ETA %s   ", bar.c_str(),
                static_cast<long long>(step), static_cast<long long>(total), temperature, mean_loss,
                metric.c_str(), format_duration(el).c_str(), format_duration(eta).c_str());
  } else {
    // The mean loss is known from the first gather on.
    char loss[32] = "-";
    if (!std::isnan(mean_loss)) std::snprintf(loss, sizeof loss, "%.5g", mean_loss);
    std::printf("simmer step %lld/%lld  T %.4g  mean train loss %s  %s  elapsed %s  ETA %s\n",
                static_cast<long long>(step), static_cast<long long>(total), temperature, loss,
                metric.c_str(), format_duration(el).c_str(), format_duration(eta).c_str());
  }
  std::fflush(stdout);
}

void Run::check_health(Chain& ch, const train::StepRecord& rec) {
  // Thresholds (documented in the README): NaN/inf loss or velocities at once; otherwise, at
  // constant T > 0, a kinetic temperature 100x above the target and not falling, or a jump of
  // H_ext larger than 10 N_f T between checks, on `kStrikes` consecutive checks. 100x below is
  // "slow to heat": a warning, not a divergence.
  constexpr int kStrikes = 3;
  const auto& nhc = ch.trajectory->integrator();
  const auto& phase = ch.trajectory->phase();
  std::string reason;
  if (!std::isfinite(rec.half_step_loss) || !std::isfinite(phase.kinetic)) {
    reason = "loss or velocities are not finite";
  } else if ((rec.step + 1) % c_.simmer.health_every == 0) {
    const double t = rec.temperature;
    const double t_kin = nhc.kinetic_temperature(phase);
    const double energy = nhc.extended_energy(ch.net.parameters(), phase, rec.half_step_loss, t);
    bool strike = false;
    std::string why;
    if (t > 0.0 && t == ch.last_check_temperature) {
      if (t_kin > 100.0 * t && !(t_kin < ch.last_check_kinetic)) {
        // Hot and not cooling. A trajectory far above a small T that is cooling (the retrofit's
        // Adam velocity after a T = 0 stage, say) is slow to cool, not diverged.
        strike = true;
        why = "kinetic temperature " + std::to_string(t_kin) + " is 100x above the target " + std::to_string(t) +
              " and not falling";
      } else if (std::abs(energy - ch.last_energy) > 10.0 * nhc.degrees_of_freedom() * t) {
        strike = true;
        why = "extended energy H_ext jumped from " + std::to_string(ch.last_energy) + " to " +
              std::to_string(energy) + " at constant T";
      } else if (t_kin < 0.01 * t && ch.slow_to_heat_step < 0) {
        // Far below the target is not a blow-up: after a T = 0 stage (or with heavy thermostat
        // masses) the particles take a while to heat. Say so once and keep sampling.
        ch.slow_to_heat_step = rec.step;
        std::fprintf(stderr,
                     "simmer_mpi: warning: trajectory %lld is slow to heat: kinetic temperature %.3g "
                     "at step %lld is below 1%% of T = %.3g; it keeps sampling (lighter "
                     "simmer.masses, simmer.start_velocity = thermal or a longer window help)\n",
                     static_cast<long long>(ch.index), t_kin, static_cast<long long>(rec.step), t);
        std::fflush(stderr);
      }
    }
    ch.strikes = strike ? ch.strikes + 1 : 0;
    ch.last_check_kinetic = t_kin;
    if (ch.strikes >= kStrikes) reason = why + " (" + std::to_string(kStrikes) + " checks in a row)";
    ch.last_energy = energy;
    ch.last_check_temperature = t;
  }
  if (reason.empty() || ch.diverged_step >= 0) return;
  ch.diverged_step = rec.step;
  ch.diverged_reason = reason;
  ch.stopped = c_.simmer.on_divergence == "stop";
  // Printed by the owning rank: the others keep going, so this cannot wait for a gather.
  std::fprintf(stderr,
               "simmer_mpi: trajectory %lld diverged at step %lld (h = %g, T = %g): %s; %s. A "
               "smaller simmer.time_step (see the stability limit printed at the start) usually "
               "helps.\n",
               static_cast<long long>(ch.index), static_cast<long long>(rec.step), c_.simmer.time_step,
               rec.temperature, reason.c_str(),
               ch.stopped ? "it stops here, keeping its samples so far" : "continuing (on_divergence = warn)");
  std::fflush(stderr);
}

int Run::simmer_phase() {
  const std::int64_t steps = c_.simmer.steps;
  simmer_start_ = Clock::now();
  simmer_first_step_ = step_;
  const auto next_multiple = [](std::int64_t step, std::int64_t every) {
    return every > 0 ? (step / every + 1) * every : std::numeric_limits<std::int64_t>::max();
  };
  while (step_ < steps) {
    const std::int64_t next_gather = next_multiple(step_, c_.run.gather_interval);
    const std::int64_t next_checkpoint = next_multiple(step_, c_.run.checkpoint_interval);
    const std::int64_t next_sync = next_multiple(step_, c_.run.sync_every);
    const std::int64_t end = std::min({steps, next_gather, next_checkpoint, next_sync});
    for (auto& ch : chains_) {
      if (ch.stopped) continue;
      // One CPU clock pair per block: the steps' time is the block's minus the evaluations'.
      const double t0 = cpu_now();
      const double eval_before = eval_seconds_;
      for (std::int64_t s = step_; s < end && !ch.stopped; ++s) {
        const train::StepRecord rec = ch.trajectory->advance();
        ch.last_loss = rec.half_step_loss;
        ch.diag.after_step(rec.step, ch.net.parameters(), ch.trajectory->phase().kinetic);
        check_health(ch, rec);
        if (ch.stopped) break;
        if ((s + 1) % c_.run.trace_every == 0) record_trace(ch, 1, s + 1, rec.temperature, rec.half_step_loss);
        if (ch.next_sample < ch.sample_steps.size() && ch.sample_steps[ch.next_sample] == s) {
          take_member(ch, rec);
          ++ch.next_sample;
        }
      }
      step_seconds_ += cpu_now() - t0 - (eval_seconds_ - eval_before);
    }
    step_ = end;
    // A stop signal on any rank stops all ranks at this common step boundary.
    int signal = 0;
    if (end == next_sync || end == steps) {
      const int mine = static_cast<int>(g_stop_signal);
      MPI_Allreduce(&mine, &signal, 1, MPI_INT, MPI_MAX, comm_);
    }
    const bool must_gather = end == next_gather || end == steps || end == next_checkpoint || signal != 0;
    if (must_gather) gather(end);
    // Between gathers the loss and metric shown are the last gathered ones.
    const double temperature = chains_.empty() ? p_.ramp(end - 1) : chains_.front().trajectory->temperature_at(end - 1);
    progress(end, temperature, mean_train_loss_, end == steps);
    if ((end == next_checkpoint && end < steps) || signal != 0) checkpoint(end);
    if (signal != 0) {
      if (rank_ == 0) {
        std::printf("%ssimmer_mpi: received %s at step %lld: checkpointed to %s; continue with\n"
                    "  mpirun ... simmer_mpi --resume %s\n",
                    tty_ ? "\n" : "", signal == SIGTERM ? "SIGTERM" : signal == SIGUSR1 ? "SIGUSR1" : "a stop signal",
                    static_cast<long long>(end), checkpoint_path_.c_str(), c_.run.output.c_str());
        std::fflush(stdout);
      }
      return kExitStopped;
    }
  }
  if (rank_ == 0 && tty_) std::printf("\n");
  return 0;
}

std::vector<TrajectoryReport> Run::gather_reports() {
  // Each rank's trajectories as bytes; rank 0 orders them by trajectory and broadcasts the lot,
  // so every rank writes the same /diagnostics and /metrics.
  ByteWriter mine;
  for (const auto& ch : chains_) {
    TrajectoryReport r;
    r.index = ch.index;
    if (ch.baseline_scores.size() == 2) {
      r.baseline = {ch.baseline_scores[0], ch.baseline_scores[1]};
    } else {  // a trajectory that stopped before its first member has no baseline
      std::vector<double> nan(ensemble::SetScores::kFields, std::nan(""));
      r.baseline = {ensemble::SetScores::from(nan.data()), ensemble::SetScores::from(nan.data())};
    }
    r.summary = ch.diag.summary(ch.net.parameters(), p_.prior_rms, ch.diverged_step >= 0);
    r.diverged_at = ch.diverged_step;
    r.slow_to_heat_at = ch.slow_to_heat_step;
    r.start_loss = ch.start_loss;
    r.curvature_start = ch.curvature_start;
    r.curvature_end = ch.curvature_end;
    ByteWriter one;
    r.save(one);
    mine.i64(static_cast<std::int64_t>(one.bytes().size()));
    mine.raw(one.bytes());
  }
  std::vector<unsigned char> all = gather_to_root(mine.bytes(), MPI_BYTE, comm_);
  std::int64_t size = static_cast<std::int64_t>(all.size());
  MPI_Bcast(&size, 1, MPI_INT64_T, 0, comm_);
  all.resize(static_cast<std::size_t>(size));
  MPI_Bcast(all.data(), static_cast<int>(size), MPI_BYTE, 0, comm_);
  std::vector<TrajectoryReport> reports(static_cast<std::size_t>(chains_total_));
  ByteReader r(all.data(), all.size(), "end-of-run reports");
  while (!r.done()) {
    const auto n = static_cast<std::size_t>(r.i64());
    std::vector<unsigned char> blob(n);
    for (auto& b : blob) b = r.pod<unsigned char>();
    ByteReader one(blob.data(), blob.size(), "end-of-run report");
    TrajectoryReport t = TrajectoryReport::load(one);
    reports[static_cast<std::size_t>(t.index)] = std::move(t);
  }
  return reports;
}

EnsembleReport Run::pooled_report() {
  // Every trajectory's partials (mean probabilities or coverage counts, block ensembles) merged
  // on rank 0 in trajectory order; the scores are then broadcast.
  ByteWriter mine;
  for (const auto& ch : chains_) {
    ByteWriter one;
    ch.diag.save_partials(one);
    mine.i64(ch.index);
    mine.i64(static_cast<std::int64_t>(one.bytes().size()));
    mine.raw(one.bytes());
  }
  const std::vector<unsigned char> all = gather_to_root(mine.bytes(), MPI_BYTE, comm_);
  EnsembleReport e;
  ByteWriter out;
  if (rank_ == 0) {
    std::vector<std::vector<unsigned char>> partials(static_cast<std::size_t>(chains_total_));
    ByteReader r(all.data(), all.size(), "ensemble partials");
    while (!r.done()) {
      const auto t = static_cast<std::size_t>(r.i64());
      partials[t].resize(static_cast<std::size_t>(r.i64()));
      for (auto& b : partials[t]) b = r.pod<unsigned char>();
    }
    ensemble::PooledDiagnostics pooled(diagnostics_setup());
    for (const auto& bytes : partials) {
      ByteReader one(bytes.data(), bytes.size(), "ensemble partial");
      pooled.merge(one);
    }
    Matrix noise;
    for (int s = 0; s < 2; ++s) {
      const auto& set = p_.sets[static_cast<std::size_t>(s)];
      const auto i = static_cast<std::size_t>(s);
      if (p_.classification) {
        e.scores[i] = ensemble::score_probabilities(view(pooled.probabilities(s)), set.labels);
        e.scores[i].metric = ens_votes_[i].members() > 0 ? ensemble::accuracy(ens_votes_[i].majority(), set.labels)
                                                         : std::nan("");
      } else {
        // mean ± sd with sd² = the members' variance + the ensemble mean's training MSE (noise).
        const Matrix& mean = ens_mean_[i].mean();
        if (s == 0) noise = ensemble::residual_variance(view(mean), view(set.y));
        e.scores[i] = ensemble::score_with_noise(view(mean), ens_mean_[i].variance(), noise, view(set.y));
        for (std::size_t l = 0; l < kCoverageLevels.size(); ++l) e.coverage[i][l] = pooled.coverage(s, kCoverageLevels[l]);
      }
      if ((p_.classification ? ens_votes_[i].members() : ens_mean_[i].members()) == 0) {
        std::vector<double> nan(ensemble::SetScores::kFields, std::nan(""));
        e.scores[i] = ensemble::SetScores::from(nan.data());  // no members: no ensemble
      }
      e.block_metric[i] = pooled.block_metric(s);
    }
    e.members = p_.classification ? ens_votes_[0].members() : ens_mean_[0].members();
    e.save(out);
    for (int s = 0; s < 2; ++s) {
      if (p_.classification) pooled_probability_.push_back(pooled.probabilities(s));
      else pooled_coverage_.push_back(pooled.coverage_counts(s));
    }
  }
  std::int64_t size = static_cast<std::int64_t>(out.bytes().size());
  MPI_Bcast(&size, 1, MPI_INT64_T, 0, comm_);
  out.bytes().resize(static_cast<std::size_t>(size));
  MPI_Bcast(out.bytes().data(), static_cast<int>(size), MPI_BYTE, 0, comm_);
  ByteReader r(out.bytes().data(), out.bytes().size(), "ensemble report");
  return EnsembleReport::load(r);
}

void Run::finish() {
  if (p_.curvature_report == app::Problem::CurvatureReport::start_end) curvature_report(true);
  const std::vector<TrajectoryReport> reports = gather_reports();
  const EnsembleReport pooled = pooled_report();
  if (p_.mode == train::StartMode::abinitio) {
    std::vector<io::RowBlock> blocks;
    std::vector<double> rows;
    for (const auto& ch : chains_) {
      if (ch.baseline.size() != params_) continue;
      blocks.push_back({ch.index, 0, static_cast<std::int64_t>(params_)});
      rows.insert(rows.end(), ch.baseline.begin(), ch.baseline.end());
    }
    file_->write_rows("/baseline/params", blocks, rows.data(), io::Type::f64);
  }
  // The baseline network's outputs on every evaluation set (raw target units for regression,
  // logits for classification): Adam's fit on the extra points, for figures, with no network
  // re-evaluated afterwards. Rows of a trajectory without a baseline stay NaN.
  for (const auto& s : p_.sets) {
    // (finish() may run again on a resumed archive: create_group keeps an existing group and
    // create_dataset replaces the dataset.)
    const std::string g = "/baseline/" + s.name;
    file_->create_group(g);
    file_->create_dataset(g + "/prediction", io::Type::f64, {chains_total_, s.rows(), p_.outputs},
                          {1, std::max<std::int64_t>(s.rows(), 1), p_.outputs}, true);
    std::vector<io::RowBlock> blocks;
    std::vector<double> rows;
    for (auto& ch : chains_) {
      if (ch.baseline.size() != params_) continue;
      const Vector keep = ch.net.parameters();
      ch.net.parameters() = ch.baseline;
      const ConstBatchView pred = ch.objective->predict(view(s.x));
      rows.insert(rows.end(), pred.data(), pred.data() + pred.size());
      ch.net.parameters() = keep;
      blocks.push_back({ch.index, 0, s.rows()});
    }
    file_->write_rows(g + "/prediction", blocks, rows.data(), io::Type::f64);
    file_->attribute(g + "/prediction", "units",
                     std::string(!p_.classification ? "target units [chain, row, output]"
                                 : p_.outputs == 1 ? "logit of class 1 [chain, row, 1]"
                                                   : "logits [chain, row, class]"));
  }
  file_->attribute("/baseline", "kind", std::string(p_.mode == train::StartMode::retrofit
                                                        ? "Adam end point of each trajectory"
                                                        : "first ensemble member of each trajectory"));
  // What the pooled uncertainty scores came from, so simmer_analyze merge can pool again: the
  // members' mean class probabilities, or where each truth fell among the member predictions.
  for (int s = 0; s < 2; ++s) {
    const auto& set = p_.sets[static_cast<std::size_t>(s)];
    const std::string g = "/ensemble/" + set.name;
    if (p_.classification) {
      file_->create_dataset(g + "/probability", io::Type::f64, {set.rows(), p_.classes});
      file_->write_from_root(g + "/probability", rank_ == 0 ? pooled_probability_[static_cast<std::size_t>(s)].data() : nullptr,
                             io::Type::f64);
    } else {
      const auto& counts = pooled_coverage_;
      file_->create_dataset(g + "/coverage_below", io::Type::i64, {set.rows(), p_.outputs});
      file_->create_dataset(g + "/coverage_equal", io::Type::i64, {set.rows(), p_.outputs});
      file_->write_from_root(g + "/coverage_below", rank_ == 0 ? counts[static_cast<std::size_t>(s)].below().data() : nullptr,
                             io::Type::i64);
      file_->write_from_root(g + "/coverage_equal", rank_ == 0 ? counts[static_cast<std::size_t>(s)].equal().data() : nullptr,
                             io::Type::i64);
      file_->attribute(g + "/coverage_below", "meaning",
                       std::string("members whose prediction is below the truth (coverage_equal: equal), per value"));
    }
  }
  write_report(*file_, p_, reports, pooled);
  file_->attribute("/metrics", "members", pooled.members);
  // Which trajectories diverged, and where (-1: never).
  std::vector<std::int64_t> diverged;
  for (const auto& r : reports) diverged.push_back(r.diverged_at);
  file_->put("/sample_stats/diverged_at_step", diverged, {chains_total_});
  const auto n_diverged = std::count_if(diverged.begin(), diverged.end(), [](std::int64_t d) { return d >= 0; });
  file_->attribute("/", "status", std::string(n_diverged == 0 ? "complete" : "complete, with diverged trajectories"));

  // Where the CPU time went, summed over ranks.
  double parts[4] = {step_seconds_, eval_seconds_, comm_io_seconds_, cpu_now() - cpu_start_};
  double parts_sum[4] = {0, 0, 0, 0};
  MPI_Reduce(parts, parts_sum, 4, MPI_DOUBLE, MPI_SUM, 0, comm_);
  double wall = seconds_since(start_);
  MPI_Bcast(&wall, 1, MPI_DOUBLE, 0, comm_);  // attributes must be identical on all ranks
  file_->attribute("/", "wall_seconds", wall);
  std::int64_t io_counts[2] = {file_->transfers(), file_->collective_transfers()};
  file_->attribute("/", "io_transfers", io_counts[0]);
  file_->attribute("/", "io_collective_transfers", io_counts[1]);
  file_->close();

  if (rank_ == 0) {
    print_report(p_, reports, pooled);
    const double cpu = parts_sum[3];
    std::printf("\nwall %s on %d rank(s); CPU time %.1f s: gradient steps %.1f%%, member evaluation "
                "and traces %.1f%%, gathers + aggregation + I/O %.1f%%, set-up and other %.1f%%\n",
                format_duration(wall).c_str(), size_, cpu, 100 * parts_sum[0] / cpu, 100 * parts_sum[1] / cpu,
                100 * parts_sum[2] / cpu, 100 * (cpu - parts_sum[0] - parts_sum[1] - parts_sum[2]) / cpu);
    std::printf("archive: %s (%lld of %lld transfers collective)\n", c_.run.output.c_str(),
                static_cast<long long>(io_counts[1]), static_cast<long long>(io_counts[0]));
    for (std::size_t t = 0; t < diverged.size(); ++t) {
      if (diverged[t] >= 0) {
        std::printf("trajectory %zu diverged at step %lld (h = %g): its samples before that are in the "
                    "ensemble; consider a smaller simmer.time_step\n",
                    t, static_cast<long long>(diverged[t]), c_.simmer.time_step);
      }
    }
  }
}

void Run::checkpoint(std::int64_t step_done) {
  // Called right after a gather: every chain's interval buffers are empty, so the state is the
  // chains' own plus rank 0's vote table. Each rank serialises its chains; rank 0 writes one file.
  const double t0 = cpu_now();
  io::ByteWriter mine;
  for (const auto& ch : chains_) {
    io::ByteWriter w;
    w.i64(ch.index);
    const Rng::State rs = ch.noise_rng.state();
    for (const auto word : rs.s) w.pod(word);
    w.pod(static_cast<std::uint8_t>(rs.has_spare));
    w.f64(rs.spare);
    const auto& phase = ch.trajectory->phase();
    w.vec(ch.net.parameters());
    w.vec(phase.v);
    w.vec(phase.chain.s);
    w.vec(phase.chain.w);
    w.f64(phase.kinetic);
    w.i64(static_cast<std::int64_t>(ch.next_sample));
    w.i64(ch.members);
    w.i64(ch.stored_first);
    w.i64(ch.trace_count);
    w.ints(ch.sample_steps);
    w.vec(ch.baseline);
    w.i64(static_cast<std::int64_t>(ch.baseline_scores.size()));
    for (const auto& b : ch.baseline_scores) w.vec(b.to_vector());
    w.f64(ch.start_loss);
    train::save_spectrum(w, ch.curvature_start);
    train::save_spectrum(w, ch.curvature_end);
    ch.diag.save(w);
    w.f64(ch.last_loss);
    w.i64(ch.diverged_step);
    w.i64(ch.slow_to_heat_step);
    w.pod(static_cast<std::uint8_t>(ch.stopped));
    w.str(ch.diverged_reason);
    w.i64(ch.strikes);
    w.f64(ch.last_energy);
    w.f64(ch.last_check_temperature);
    w.f64(ch.last_check_kinetic);
    for (const auto& m : ch.means) {
      w.i64(m.members());
      w.doubles(m.mean().data(), m.mean().size());
      w.doubles(m.m2().data(), m.m2().size());
    }
    mine.i64(static_cast<std::int64_t>(w.bytes().size()));
    mine.raw(w.bytes());
  }
  const std::vector<unsigned char> all = gather_to_root(mine.bytes(), MPI_BYTE, comm_);
  int ok = 1;
  std::string error;
  if (rank_ == 0) {
    try {
      // Chain blobs in trajectory order, whatever rank sent them.
      std::vector<std::vector<unsigned char>> blobs(static_cast<std::size_t>(chains_total_));
      io::ByteReader r(all.data(), all.size(), "checkpoint '" + checkpoint_path_ + "'");
      while (!r.done()) {
        const auto n = static_cast<std::size_t>(r.i64());
        std::vector<unsigned char> blob(n);
        for (auto& b : blob) b = r.pod<unsigned char>();
        io::ByteReader peek(blob.data(), blob.size(), "checkpoint '" + checkpoint_path_ + "'");
        blobs[static_cast<std::size_t>(peek.i64())] = std::move(blob);
      }
      io::ByteWriter w;
      w.str(SIMMER_VERSION);
      w.str(cli::to_ini(c_));
      w.i64(step_done);
      w.i64(chains_total_);
      for (std::size_t s = 0; s < ens_votes_.size(); ++s) {
        w.i64(ens_votes_[s].members());
        const auto& v = ens_votes_[s].votes();
        w.ints(std::vector<std::int64_t>(v.data(), v.data() + v.size()));
      }
      w.ints(diverged_at_);
      w.ints(tracked_written_);
      w.f64(mean_train_loss_);
      for (const auto& b : blobs) {
        w.i64(static_cast<std::int64_t>(b.size()));
        w.raw(b);
      }
      io::write_checkpoint_file(checkpoint_path_, w.bytes());
    } catch (const std::exception& e) {
      ok = 0;
      error = e.what();
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm_);
  if (ok == 0) throw Error(rank_ == 0 ? error : "checkpoint failed on rank 0");
  comm_io_seconds_ += cpu_now() - t0;
}

void Run::restore(const std::vector<unsigned char>& payload) {
  io::ByteReader r(payload.data(), payload.size(), "checkpoint '" + checkpoint_path_ + "'");
  r.str();  // version and config: checked by the caller (resume_invocation)
  r.str();
  step_ = r.i64();
  if (r.i64() != chains_total_) throw Error("checkpoint '" + checkpoint_path_ + "': trajectory count differs");
  std::vector<ensemble::VoteAccumulator::Votes> votes;
  std::vector<std::int64_t> vote_members;
  if (p_.classification) {
    for (const auto& set : p_.sets) {
      vote_members.push_back(r.i64());
      const auto flat = r.ints();
      if (static_cast<Index>(flat.size()) != set.rows() * p_.classes) {
        throw Error("checkpoint '" + checkpoint_path_ + "': vote table shape differs");
      }
      votes.emplace_back(Eigen::Map<const ensemble::VoteAccumulator::Votes>(flat.data(), set.rows(), p_.classes));
    }
  }
  const auto diverged = r.ints();
  const auto tracked = r.ints();
  const double mean_loss = r.f64();
  if (rank_ == 0) {
    for (std::size_t s = 0; s < votes.size(); ++s) ens_votes_[s].add_votes(votes[s], vote_members[s]);
    diverged_at_ = diverged;
    tracked_written_ = tracked;
    mean_train_loss_ = mean_loss;
  }
  std::size_t local = 0;
  for (std::int64_t t = 0; t < chains_total_; ++t) {
    const auto n = static_cast<std::size_t>(r.i64());
    std::vector<unsigned char> blob(n);
    for (auto& b : blob) b = r.pod<unsigned char>();
    if (t % size_ != rank_) continue;
    Chain& ch = chains_[local++];
    io::ByteReader c(blob.data(), blob.size(), "checkpoint '" + checkpoint_path_ + "'");
    if (c.i64() != ch.index) throw Error("checkpoint '" + checkpoint_path_ + "': chains out of order");
    Rng::State rs;
    for (auto& word : rs.s) word = c.pod<std::uint64_t>();
    rs.has_spare = c.pod<std::uint8_t>() != 0;
    rs.spare = c.f64();
    ch.noise_rng.set_state(rs);
    ch.net.parameters() = c.vec();
    train::PhaseState phase;
    phase.v = c.vec();
    phase.chain.s = c.vec();
    phase.chain.w = c.vec();
    phase.kinetic = c.f64();
    ch.next_sample = static_cast<std::size_t>(c.i64());
    ch.members = c.i64();
    ch.stored_first = c.i64();
    ch.trace_count = c.i64();
    ch.trace_first = ch.trace_count;
    ch.sample_steps = c.ints();
    ch.baseline = c.vec();
    ch.baseline_scores.clear();
    for (std::int64_t b = c.i64(); b > 0; --b) {
      const auto v = c.doubles();
      if (v.size() != static_cast<std::size_t>(ensemble::SetScores::kFields)) {
        throw Error("checkpoint '" + checkpoint_path_ + "': baseline scores have the wrong size");
      }
      ch.baseline_scores.push_back(ensemble::SetScores::from(v.data()));
    }
    ch.start_loss = c.f64();
    ch.curvature_start = train::load_spectrum(c);
    ch.curvature_end = train::load_spectrum(c);
    ch.diag.load(c);
    ch.last_loss = c.f64();
    ch.diverged_step = c.i64();
    ch.slow_to_heat_step = c.i64();
    ch.stopped = c.pod<std::uint8_t>() != 0;
    ch.diverged_reason = c.str();
    ch.strikes = static_cast<int>(c.i64());
    ch.last_energy = c.f64();
    ch.last_check_temperature = c.f64();
    ch.last_check_kinetic = c.f64();
    for (auto& m : ch.means) {
      const auto members = c.i64();
      const auto mean = c.doubles();
      const auto m2 = c.doubles();
      m.restore(members, Eigen::Map<const Matrix>(mean.data(), m.mean().rows(), m.mean().cols()),
                Eigen::Map<const Matrix>(m2.data(), m.mean().rows(), m.mean().cols()));
    }
    ch.trajectory = std::make_unique<train::Trajectory>(*ch.objective, p_.nhc, train::ramp_schedule(p_.ramp),
                                                        std::move(phase), step_);
    ch.trajectory->set_noise(&ch.noise_rng);
  }
}

bool Run::stability_check() {
  // Power iteration at each trajectory's start point; the worst curvature decides.
  double worst[2] = {0.0, -1.0};  // lambda_max, trajectory
  for (auto& ch : chains_) {
    Rng rng = Rng::named(c_.run.seed, static_cast<std::uint64_t>(ch.index), RngPurpose::stability);
    const auto est = train::estimate_curvature(*ch.objective, ch.net.parameters(), rng);
    if (est.lambda_max > worst[0]) {
      worst[0] = est.lambda_max;
      worst[1] = static_cast<double>(ch.index);
    }
  }
  struct {
    double value;
    int index;
  } in{worst[0], static_cast<int>(worst[1])}, out{0.0, -1};
  MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm_);
  const double limit = out.value > 0.0 ? 2.0 / std::sqrt(out.value) : std::numeric_limits<double>::infinity();
  const double h = c_.simmer.time_step;
  file_->attribute("/", "lambda_max", out.value);
  file_->attribute("/", "time_step_limit", limit);
  if (rank_ == 0) {
    std::printf("stability: largest loss-Hessian eigenvalue at the start %.4g (trajectory %d): leapfrog "
                "limit 2/sqrt(lambda) = %.4g, time step h = %.4g%s\n",
                out.value, out.index, limit, h, h < limit ? " (stable)" : " (ABOVE the limit)");
    std::fflush(stdout);
  }
  if (h < limit) return true;
  if (c_.simmer.stability_check == "warn") {
    if (rank_ == 0) {
      std::fprintf(stderr, "simmer_mpi: warning: simmer.time_step = %g is above the stability limit %.4g; "
                           "continuing (simmer.stability_check = warn)\n", h, limit);
    }
    return true;
  }
  if (rank_ == 0) {
    std::fprintf(stderr,
                 "simmer_mpi: error: option 'simmer.time_step' = '%g': above the leapfrog stability "
                 "limit 2/sqrt(lambda_max) = %.4g at the start point (lambda_max = %.4g, trajectory %d); "
                 "use simmer.time_step < %.3g, or simmer.stability_check = warn to run anyway\n",
                 h, limit, out.value, out.index, 0.9 * limit);
  }
  file_->attribute("/", "status", std::string("refused: time step above the stability limit"));
  return false;
}

int Run::execute() {
  setup_chains();
  if (rank_ == 0) {
    std::printf("simmer %s: %lld trajectories on %d rank(s), %s, %lld parameters, %lld members per "
                "trajectory, %lld stored%s\n",
                SIMMER_VERSION, static_cast<long long>(chains_total_), size_, train::to_string(p_.mode).c_str(),
                static_cast<long long>(params_), static_cast<long long>(members_per_chain_),
                static_cast<long long>(draws_), resumed_ ? " (resumed)" : "");
    std::printf("%s\n", temperature_reading(p_).c_str());
    std::fflush(stdout);
  }
  if (resumed_) {
    restore(*resume_payload_);
    file_.emplace(io::ParallelFile::open_write(c_.run.output, comm_));
    if (rank_ == 0) {
      std::printf("resuming at step %lld of %lld from %s\n", static_cast<long long>(step_),
                  static_cast<long long>(c_.simmer.steps), checkpoint_path_.c_str());
    }
  } else {
    create_archive();
    adam_phase();
    write_start_state();
    if (c_.simmer.stability_check != "off" && !stability_check()) {
      file_->close();
      return kExitUnstable;
    }
    if (p_.curvature_report != app::Problem::CurvatureReport::off) curvature_report(false);
    checkpoint(0);  // the end of the Adam phase (or the ab initio start)
  }
  const int code = simmer_phase();
  if (code != 0) {
    file_->attribute("/", "status", std::string("stopped by a signal: resume with --resume"));
    file_->close();
    return code;
  }
  finish();
  return 0;
}

}  // namespace

const char* simmer_version() { return SIMMER_VERSION; }

CheckpointHeader read_checkpoint_header(const std::vector<unsigned char>& payload, const std::string& origin) {
  io::ByteReader r(payload.data(), payload.size(), "checkpoint '" + origin + "'");
  CheckpointHeader h;
  h.version = r.str();
  h.config_ini = r.str();
  h.step = r.i64();
  return h;
}

int run(const cli::Invocation& invocation, const app::Problem& problem, MPI_Comm comm,
        const std::vector<unsigned char>* resume) {
  Run r(invocation, problem, comm, resume);
  return r.execute();
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

}  // namespace simmer::mpi
