#pragma once
/// \file
/// simmer_analyze's subcommands on finished archives (docs/ANALYZE.md). Each throws
/// simmer::Error naming the file and what is missing or wrong; the main turns that into one
/// line and exit code 2. verify returns 1 when it finds damage.

#include <mpi.h>

#include <cstdint>
#include <fstream>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace simmer::posthoc {

/// verify's (and summary's) exit code when a dataset is damaged or HDF5 cannot open the file at all.
constexpr int kVerifyDamaged = 1;

/// Configuration highlights, sizes, the baseline-vs-ensemble table from /metrics and the
/// trajectories' health (kinetic temperature per stage, H_ext drift at the last stage, split-R̂
/// and ESS of the sample loss), as text on `out`. First, for an archive no run is writing, what
/// verify would find in everything but the stored draws, each problem a DAMAGED line; returns
/// kVerifyDamaged then, else 0.
int summary(const std::string& archive, std::ostream& out);

/// Reads every dataset of `archive` back in full, chunk by chunk, with HDF5's Fletcher-32
/// checking on, and prints each damaged dataset (the chunks that fail, with their coordinates
/// and file offsets) and each dataset stored without a checksum (archives written before simmer
/// stored checksums), then one line: "N datasets, X MB, all checksums good". The attributes with
/// a checksummed copy (scores, choices) are compared with it, and the choices with each other.
/// A file without simmer's root attributes is refused. Returns 0, or kVerifyDamaged; throws simmer::Error (exit
/// code 2) when the file is missing, not a regular file or not HDF5.
int verify(const std::string& archive, std::ostream& out);

struct PredictOptions {
  std::string archive;
  std::string points;             ///< CSV with the archive's feature columns (raw units)
  std::string output;             ///< CSV to write ("" = standard output)
  std::vector<double> quantiles;  ///< regression: quantiles of the predictive mixture per output
  /// Which networks: "" = the run's ensemble (/metrics 'ensemble'), "deep_ensemble" (the
  /// /baseline/params rows), "rung_<k>" (a ladder's rung: its block of draws), "all".
  std::string candidate;
  bool allow_incomplete = false;  ///< use an archive whose run has not finished
  /// Columns of the points file copied to the output (an id, a name): {"*"} every column that is
  /// not a feature, {} none.
  std::vector<std::string> keep = {"*"};
  int digits = 7;  ///< significant digits of the numbers written (17: they read back exactly)
};

/// Every stored network on the points. Collective over `comm`: the draws are split over the
/// ranks; votes are summed and regression predictions gathered to rank 0, which merges them per
/// trajectory in draw order and then over trajectories in order (as the run does), so the
/// output does not depend on the number of ranks. Rank 0 writes the CSV. Returns the exit code
/// (0, or 2 after one message from the lowest failing rank).
int predict(const PredictOptions& options, MPI_Comm comm, std::ostream& out);

struct MergeOptions {
  std::vector<std::string> archives;  ///< inputs, chains renumbered in this order
  std::string output;
  bool overwrite = false;
  std::string command_line;  ///< provenance
};

/// Concatenates compatible archives of a seed study along the chain axis and recomputes the
/// ensemble and /metrics (serial: call on one rank). Refuses incompatible inputs naming the key
/// and both values, and inputs that share trajectories (merge_overlap). Prints a short report on
/// `out`.
void merge(const MergeOptions& options, std::ostream& out);

/// One trajectory of an archive as it was first run: a run's own archive holds its run id's
/// trajectories 0..C-1, a merged one lists them in /origin.
struct TrajectoryOrigin {
  std::string run_id;                      ///< the run's (empty: an archive from before run ids)
  std::uint64_t seed = 0, split_seed = 0;  ///< its run's run.seed and data.split_seed
  std::int64_t trajectory = 0;             ///< its index in its own run
  std::string archive;                     ///< the run's archive (as the first merge named it)
};

/// What merge knows of one input to tell whether inputs hold the same trajectories.
struct MergeSource {
  std::string path;
  std::vector<TrajectoryOrigin> trajectories;  ///< in chain order
};

/// Why merging `sources` would count a trajectory twice, or "" when it would not: the first input
/// that shares trajectories with an earlier one, both named with the shared trajectories. Trajectory
/// k's random numbers are (run.seed, k)'s and the data's (data.split_seed) alone, so the same run
/// id and index (the same run, or a copy) or the same seeds and index (a rerun) is one trajectory,
/// however many merges it went through.
std::string merge_overlap(const std::vector<MergeSource>& sources);

struct ExportOptions {
  std::string archive;
  std::string what;                             ///< trace | samples | ensemble
  bool params = false;                          ///< samples: the long parameter table instead
  std::string output;                           ///< "" = standard output
  std::vector<double> quantiles{0.025, 0.975};  ///< ensemble, regression: predictive quantiles
  bool allow_incomplete = false;                ///< use an archive whose run has not finished
  bool log_likelihood = false;                  ///< inference-data: the pointwise log-likelihood group
  int rung = -1;                                ///< inference-data of a ladder: rung `rung` alone (-1: all)
  bool predictive = false;                      ///< inference-data: posterior_predictive and predictions
};

/// export --what inference-data: ArviZ's InferenceData as a netCDF-4 file (`output`): posterior
/// (one variable per /model tensor [chain, draw(, rung), <tensor>_dim_0, ...] in the stored
/// precision), sample_stats (lp, step_size, diverging, temperature, extended_energy,
/// kinetic_temperature, loss, step), observed_data and constant_data (the training rows) and,
/// with `log_likelihood`, log_likelihood (y [chain, draw(, rung), observation]); a ladder's rung
/// dimension has the coordinate rung_temperature. Serial.
void export_inference_data(const ExportOptions& options, std::ostream& out);

/// simmer_analyze compare: PSIS-LOO and WAIC (ensemble/model_comparison.hpp) of each candidate
/// of a run (each ladder rung, or the one simmering stage) from its stored draws' log-likelihood of
/// the training rows, with standard errors, differences to the best and their standard errors,
/// k-hat warnings and the validation loss that chose the run's ensemble; with `output`, the same
/// as a CSV table.
struct CompareOptions {
  std::string archive;
  std::string output;  ///< "" = the printed table only
  bool allow_incomplete = false;
};
void compare(const CompareOptions& options, std::ostream& out);

/// One tidy CSV table (one observation per row, header row).
void export_csv(const ExportOptions& options, std::ostream& out);

/// Opens `path` for writing (or returns `fallback` for ""), throwing an Error naming the path.
/// Throws naming `command` and the path when writing `output` could destroy something: one of
/// `inputs` (by identity: symlinks, hard links and ../ resolved) or its checkpoint, lock or
/// temporary file, any simmer checkpoint, lock or temporary file (*.ckpt, *.lock, *.partial), or
/// an archive a run is writing (its lock file exists).
void guard_output(const std::string& command, const std::string& output, const std::vector<std::string>& inputs);

/// `path`.partial until commit() renames it to `path`; removed when destroyed uncommitted (a
/// failed write leaves nothing under either name).
class PartialOutput {
 public:
  explicit PartialOutput(std::string path);
  ~PartialOutput();
  PartialOutput(const PartialOutput&) = delete;
  PartialOutput& operator=(const PartialOutput&) = delete;
  [[nodiscard]] const std::string& partial() const { return partial_; }
  void commit();

 private:
  std::string path_, partial_;
  bool committed_ = false;
};

/// A command's text output: the standard output (`path` empty) or a file, checked by
/// guard_output against `inputs` (and refused when it is an HDF5 file: a table never replaces
/// an archive), written as path.partial and renamed by close().
class OutputFile {
 public:
  OutputFile(const std::string& command, const std::string& path, std::ostream& fallback,
             const std::vector<std::string>& inputs);
  ~OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  std::ostream& stream() { return *stream_; }
  /// Flushes, checks the write succeeded (disk full, ...) and puts the file under its name.
  void close();

 private:
  std::string path_;
  std::unique_ptr<PartialOutput> partial_;
  std::unique_ptr<std::ofstream> file_;
  std::ostream* stream_ = nullptr;
};

}  // namespace simmer::posthoc
