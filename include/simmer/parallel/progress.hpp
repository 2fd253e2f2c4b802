#pragma once
/// \file
/// What rank 0 shows while a run goes: a redrawn bar on a terminal, plain lines at most every
/// run.progress_seconds otherwise (SLURM logs), with an ETA from the simmering rate alone.

#include <chrono>
#include <cstdint>
#include <string>

#include "simmer/run/problem.hpp"

namespace simmer::parallel {

/// "12.3s", "4m05s", "2h07m".
std::string format_duration(double seconds);

/// Whether progress goes to a person at a terminal. mpirun hands its ranks a pseudo-terminal
/// even when its own output is redirected to a file, so under a launcher the launcher's stdout
/// (the parent process's fd 1) decides; a terminal type is needed too.
bool output_is_terminal();

class Progress {
 public:
  /// Prints only on rank 0 (`rank` != 0: every call does nothing).
  Progress(const run::RunOptions& options, int rank);

  [[nodiscard]] bool terminal() const { return tty_; }
  /// Seconds since the run started.
  [[nodiscard]] double elapsed() const;

  /// An Adam epoch of trajectory 0.
  void adam(std::int64_t epoch, std::int64_t epochs, double loss);
  /// Simmering starts (or resumes) at `step`: the ETA counts from here.
  void simmer_from(std::int64_t step);
  /// The run is at `step` of `total`; `metric` is the ensemble's test metric as text ("-" before
  /// the first member). `force` prints even within the interval (the last step).
  void step(std::int64_t step, std::int64_t total, double temperature, double mean_loss, const std::string& metric,
            bool force);
  /// Ends a redrawn bar with a newline (terminal only).
  void end_line() const;

 private:
  using Clock = std::chrono::steady_clock;
  [[nodiscard]] bool due(bool force);
  int rank_;
  bool tty_;
  double interval_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point simmer_start_ = Clock::now();
  std::int64_t simmer_first_step_ = 0;
  double last_ = -1e300;
};

}  // namespace simmer::parallel
