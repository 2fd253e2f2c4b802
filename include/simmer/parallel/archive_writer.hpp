#pragma once
/// \file
/// simmer_mpi's archive (layout: ARCHITECTURE.md, "Archive layout"; shared field lists:
/// io/archive_layout.hpp): created collectively with everything known before the run, then
/// rows appended at every gather, the pooled ensemble rewritten, and the run's end written.
/// Every call is collective; rank 0's buffers are the ones written for replicated data.

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "simmer/ensemble/candidate.hpp"
#include "simmer/ensemble/partial.hpp"
#include "simmer/io/h5.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/chain.hpp"
#include "simmer/run/problem.hpp"

namespace simmer::parallel {

/// How many rows the per-chain datasets have.
struct ArchiveShape {
  std::int64_t chains = 0;
  std::int64_t draws = 0;          ///< stored draws per chain
  std::int64_t members = 0;        ///< members per chain (tracked predictions)
  std::int64_t trace_records = 0;  ///< trace records per chain (Adam epochs and steps)
  Index parameters = 0;
  bool float32 = false;  ///< /posterior/params in float32
  static ArchiveShape of(const run::Problem& p);
  [[nodiscard]] run::layout::ArchiveCounts counts() const;
};

/// What an ensemble group (/ensemble, /deep_ensemble, /ladder/rung_<k>) holds per set.
struct EnsembleLayout {
  std::vector<std::string> sets;  ///< evaluation sets, the scored ones first
  std::vector<Index> rows;
  std::size_t scored = 2;  ///< train, test[, validation]
  bool classification = false;
  Index classes = 0, outputs = 1;
  std::int64_t chains = 0;  ///< regression: the predictive mixture's components (one per trajectory)
  static EnsembleLayout of(const run::Problem& p);
};

/// Collective. <group>/<set> of a candidate ensemble (rank 0's `c`; nullptr elsewhere): votes,
/// majority and fractions, or mean and variance, and for the scored sets the members' mean
/// probabilities or where each truth fell among the members (coverage counts), so simmer_analyze
/// merge can pool them again; regression also the predictive mixture's components per trajectory
/// and, when `c` knows it, <group>/noise_variance; every dataset created unless it exists, and the
/// group's attribute `candidate` naming it. The run's end and simmer_analyze merge both write with it.
void write_candidate(io::ParallelFile& f, MPI_Comm comm, const EnsembleLayout& layout, const std::string& group,
                     const ensemble::Candidate* c);

/// Collective. <g>/trajectory_{members,mean,variance} [chain(, row, output)] of a set of `rows`
/// rows (run/archive_paths.hpp): rank 0's predictive-mixture components, one per trajectory of
/// `l.chains` (`parts`; nullptr elsewhere). write_candidate and simmer_analyze merge write them.
void write_components(io::ParallelFile& f, const std::string& g, Index rows, const EnsembleLayout& l,
                      const std::vector<ensemble::MeanAccumulator>* parts);

class ArchiveWriter {
 public:
  /// Creates the archive, exclusively (it must not exist: --overwrite removed an old one):
  /// provenance (`command_line`, the rank count, `run_id`, status "running"), /config, /data,
  /// /model, and every per-chain dataset (NaN until written). Every dataset carries a
  /// Fletcher-32 checksum per chunk (io::ParallelFile::create_dataset). If anything after the
  /// file's creation fails (on any rank), that rank removes the partly written file before the
  /// error goes on: no file that is not a whole archive is left at the output.
  static ArchiveWriter create(const run::Problem& p, const std::string& command_line, const std::string& run_id,
                              MPI_Comm comm);
  /// Reopens an archive to continue a run (resume); its status says "running" again.
  static ArchiveWriter reopen(const run::Problem& p, MPI_Comm comm);

  /// A ladder's temperatures (/ladder and each rung's attributes; collective): at creation, and
  /// again once simmer.noise_sd = auto has set T_Bayes.
  void temperatures(const run::Problem& p);
  /// /initial/{params,velocity} and, for a retrofit, /baseline/params: one row per chain.
  void start_state(const std::vector<run::Chain*>& chains);
  /// The rows each chain owes (stored draws, sample stats, trace records) and every stage's
  /// tracked predictions of this gather (rank 0's pooled ensembles, one per stage).
  void rows(const std::vector<std::pair<std::int64_t, run::ChainRows>>& rows,
            const std::vector<ensemble::PooledEnsemble>& pooled);
  /// <group>/<set> (/ensemble, or a ladder's /ladder/rung_<k>): votes, majority and fractions,
  /// or mean and variance, of rank 0's pooled ensemble of one stage.
  void ensemble(const ensemble::PooledEnsemble& pooled, const std::string& group);
  /// <group>/<set> of a candidate ensemble at the run's end (rank 0's `c`; nullptr elsewhere):
  /// what ensemble() writes, and for the scored sets the members' mean probabilities or where
  /// each truth fell among the members (coverage counts), so simmer_analyze merge can pool again.
  void candidate(const std::string& group, const ensemble::Candidate* c);
  /// The run's end on the chains' side: ab initio /baseline/params, /baseline/<set>/prediction.
  void baselines(const std::vector<run::Chain*>& chains);

  [[nodiscard]] io::ParallelFile& file() { return file_; }
  [[nodiscard]] const ArchiveShape& shape() const { return shape_; }

 private:
  ArchiveWriter(io::ParallelFile file, const run::Problem& p, MPI_Comm comm);
  /// create's work once the file exists: provenance, /config, /data, /model, every dataset.
  void write_schema(const std::string& command_line, const std::string& run_id);
  /// <group>/<set>/{votes,prediction,fraction} or {mean,variance} for every evaluation set.
  static void create_ensemble_group(io::ParallelFile& f, const run::Problem& p, const std::string& group);
  /// Rows each trajectory writes once (a float64 [chain, ...] dataset), and each trajectory's
  /// digest of them under layout::row_digest(path), which the final read-back and verify check.
  void write_digested_rows(const std::string& path, const std::vector<io::RowBlock>& blocks,
                           const std::vector<double>& values);
  io::ParallelFile file_;
  const run::Problem* p_;
  MPI_Comm comm_;
  int rank_ = 0;
  ArchiveShape shape_;
};

/// Collective. The ArviZ-style coordinates of an archive: /posterior/{chain,draw,param} and
/// /sample_stats/{chain,draw} (0-based indices) attached as dimension scales to
/// /posterior/params [chain, draw, param] and to /sample_stats/<stat> [chain, draw] for each of
/// `stats` (netCDF/xarray then name the dimensions). The datasets must exist.
void write_posterior_scales(io::ParallelFile& f, std::int64_t chains, std::int64_t draws, std::int64_t params,
                            const std::vector<std::string>& stats);

}  // namespace simmer::parallel
