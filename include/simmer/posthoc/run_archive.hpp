#pragma once
/// \file
/// A simmer archive opened for analysis: its layout checked (ARCHITECTURE.md, "Archive
/// layout"), the stored configuration parsed back, the scalers and the network rebuilt exactly
/// as the run built them (run::build_problem), so a stored parameter row reproduces the run's
/// member predictions.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "simmer/cli/config.hpp"
#include "simmer/data/scaler.hpp"
#include "simmer/ensemble/predictive.hpp"
#include "simmer/io/archive_reader.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/model/loss.hpp"

namespace simmer::posthoc {

struct RunArchive {
  std::string path;
  std::string config_text;  ///< /config: the effective INI of the run
  cli::Config config;
  bool classification = false;
  std::vector<std::string> feature_names;
  std::vector<std::string> target_names;
  std::vector<std::string> class_names;  ///< classification only
  data::MinMaxScaler x_scaler;
  data::MinMaxScaler y_scaler;  ///< regression only
  model::ArchitectureSpec architecture;
  model::LossKind loss = model::LossKind::sse;
  Index parameters = 0;
  Index outputs = 0;  ///< network outputs: classes, 1 for a binary logit, or targets
  Index classes = 0;  ///< classification: classes that vote (2 for one binary logit)
  std::int64_t chains = 0;
  std::int64_t draws = 0;  ///< stored draws per chain (/posterior/params axis 1)
  io::Type store_type = io::Type::f64;
  Precision precision = Precision::float64;  ///< the run's run.precision (root attribute)
  std::vector<std::string> sets;             ///< /ensemble groups present: train, test[, points]
};

/// Checks that `reader` holds a simmer archive (naming the first missing object) and reads what
/// every subcommand needs. Throws simmer::Error naming the file.
RunArchive load_run(const io::ArchiveReader& reader);

/// The run's network (fresh parameters), checked against /model's parameter count and the
/// data's feature and output counts.
/// In the precision the run computed in (RunArchive::precision), so predictions reproduce it.
template <class S = double>
model::BasicNetwork<S> build_network(const RunArchive& run);

/// A stored network, for evaluate_networks: its row (chain, draw) of `source`.
using NetworkRow = std::pair<std::int64_t, std::int64_t>;
/// Called with each network's index, its name ("/posterior/params[2, 17]") and its outputs on the
/// inputs (target units for regression, logits for classification; read at once: the buffer is reused).
using NetworkVisitor = std::function<void(std::int64_t index, const std::string& name, ConstBatchView outputs)>;

/// Networks rows[begin .. end) of `source` (/posterior/params: (chain, draw); /baseline/params:
/// (chain, ignored)) on the scaled inputs `x`, one batched forward pass each, in the run's
/// precision and with the run's path from network output to target units
/// (train::NetworkObjective::predict), so they predict what they predicted in the run. Throws
/// naming the network when a stored one is not finite.
void evaluate_networks(const io::ArchiveReader& reader, const RunArchive& run, const std::string& source,
                       const std::vector<NetworkRow>& rows, std::int64_t begin, std::int64_t end, const Matrix& x,
                       const NetworkVisitor& visit);

/// Each network's log-likelihood of each training row (networks × rows): the log softmax of its
/// class, or log N(y; f(x), s²) summed over outputs with s the noise sd T_Bayes assumed
/// (simmer.noise_sd, the run's measured one, else the ensemble's), and that meaning in words.
/// What export's log_likelihood group and compare read.
struct TrainingLogLikelihood {
  Matrix values;
  std::string meaning;
};
TrainingLogLikelihood training_log_likelihood(const io::ArchiveReader& reader, const RunArchive& run,
                                              const std::vector<NetworkRow>& networks);

/// Which stored draws hold a network: (chain, draw) pairs in chain-then-draw order whose
/// /sample_stats/step is finite (a stopped trajectory's unwritten rows read NaN).
std::vector<std::pair<std::int64_t, std::int64_t>> written_draws(const io::ArchiveReader& reader,
                                                                 const RunArchive& run);

/// Regression: the predictive mixture's components of an ensemble's set group `set_group`
/// ("/ensemble/test": trajectory_members, trajectory_mean, trajectory_variance), one accumulator
/// per trajectory; nullopt when the group has none (an unfinished run, an archive before issue 26).
/// Throws naming the file when they have another shape than [chain, `rows`, `outputs`].
std::optional<std::vector<ensemble::MeanAccumulator>> read_components(const io::ArchiveReader& reader,
                                                                      const std::string& set_group, Index rows,
                                                                      Index outputs);

/// Regression: an ensemble group's σ² (`group`/noise_variance and its source); nullopt without one.
std::optional<ensemble::NoiseEstimate> read_noise(const io::ArchiveReader& reader, const std::string& group,
                                                  Index outputs);

/// Regression: σ² of the ensemble in `group` ("/ensemble", "/deep_ensemble", "/ladder/rung_2"): its
/// noise_variance, or, where it has none (an unfinished run, an archive before issue 26), the rule
/// applied to the group's stored mean: the validation residuals where the archive has validation
/// targets, else the training ones (`estimated` then set).
ensemble::NoiseEstimate group_noise(const io::ArchiveReader& reader, const RunArchive& run, const std::string& group,
                                    bool& estimated);

/// The members of one simmering stage's ensemble when the run has finished: every trajectory's
/// (a parallel ladder's rung: its trajectories').
std::int64_t planned_members(const RunArchive& run);

/// The root attribute status ("" where the archive has none).
std::string run_status(const io::ArchiveReader& reader);

/// Which of `written` (written_draws) belong to ladder rung `rung`: a parallel ladder's rung k is
/// every draw of the trajectories i with i mod K = k, a sequential one's each trajectory's k-th
/// block of draws.
std::vector<NetworkRow> rung_draws(const RunArchive& run, const std::vector<NetworkRow>& written, std::int64_t rung);

/// "349 of 400 planned stored draws": the draws an archive holds of its plan (check_complete's
/// `holds` for the commands that read every stored draw).
std::string stored_draws_held(const io::ArchiveReader& reader, const RunArchive& run);

/// What verify finds wrong in an archive (posthoc/verify.cpp), and summary before it explains
/// anything: whole datasets read back with their checksums, the attributes against their
/// checksummed copies (and the copies an archive of its format must have), the choices against
/// each other, and the objects no archive is without.
struct ArchiveDamage {
  std::vector<std::string> lines;      ///< one per problem, e.g. "/trace/step: 1 of 4 chunks fail to read"
  std::vector<std::string> objects;    ///< the damaged object of each line
  std::vector<std::string> unchecked;  ///< datasets stored without a checksum (older archives)
  std::int64_t datasets = 0, bytes = 0, checked = 0;
};
/// `wanted` (all when empty) limits the datasets read back: summary leaves out /posterior, the
/// stored draws, which it does not read.
ArchiveDamage find_damage(const io::ArchiveReader& reader, const std::function<bool(const std::string&)>& wanted = {});

/// Runs `work` (which writes on the stream it is given) in a child process, passing its output on
/// to `out` and returning its exit code; an exception in it is thrown here as an Error with its
/// message. When the child dies by a signal (HDF5 crashes on some damaged metadata), says that
/// `archive` is DAMAGED after the output so far and returns kVerifyDamaged. verify and summary
/// read through it.
int in_child(const std::string& archive, std::ostream& out, const std::function<int(std::ostream&)>& work);

/// The members of the ensemble in `group` (/ensemble/<set>, a rung's set group): its `members`
/// attribute, or (older archives) the run's in /metrics; -1 when the archive has neither (an
/// unfinished run's before its first gather).
std::int64_t group_members(const io::ArchiveReader& reader, const std::string& group);

/// "" when the run's ensemble (/ensemble) has members; else why it has none, e.g. "the run's
/// ensemble has 0 members: every trajectory diverged before the window (first: trajectory 0 at
/// step 200; /sample_stats/diverged_at_step)". export and predict refuse such an archive with it
/// (an empty ensemble used to export every row as class 0 with probabilities 0).
std::string no_members(const io::ArchiveReader& reader, const RunArchive& run);
/// Throws "<command>: '<path>': <no_members>; nothing was written" when the ensemble is empty.
void refuse_empty(const std::string& command, const io::ArchiveReader& reader, const RunArchive& run);

/// predict and export take finished runs only. Returns "" for a complete run. Otherwise throws an
/// Error naming the file, the status and `holds` (what the archive has, "349 of 400 planned
/// stored networks"), unless `allow` (--allow-incomplete): then returns the warning to print.
std::string check_complete(const io::ArchiveReader& reader, const std::string& command, const std::string& holds,
                           bool allow);

/// "28x28x1 (height x width x channels)" -> {28, 28, 1}; throws naming the file and the text.
std::vector<Index> parse_input_shape(const std::string& text, const std::string& origin);

/// Regression output names for CSV headers: /data/target_names, "y<k>" where missing.
std::vector<std::string> output_names(const RunArchive& run);

/// The CSV column of a predictive quantile: "q0.025_mpg" for q = 0.025 of output mpg.
std::string quantile_column(double q, const std::string& output);

/// CSV helpers: numbers with `digits` significant digits (17: they read back to the same
/// double), "nan" for NaN; text quoted when it holds a comma, quote or newline.
std::string csv_number(double value, int digits = 17);
std::string csv_text(const std::string& text);

}  // namespace simmer::posthoc
