// simmer_mpi's end of a run (parallel::run, driver.cpp): every trajectory's report gathered, the
// candidates scored and chosen on rank 0, the archive's final groups and /metrics written, the
// final table printed.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include <hdf5.h>

#include "run_session.hpp"
#include "simmer/core/error.hpp"
#include "simmer/ensemble/candidate.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/io/archive_reader.hpp"
#include "simmer/parallel/driver.hpp"
#include "simmer/parallel/report.hpp"
#include "simmer/parallel/row_digests.hpp"
#include "simmer/run/archive_layout.hpp"

namespace simmer::parallel::detail {
namespace {

/// Test hook: the first stored chunk of /posterior/params zeroed in place, its Fletcher-32
/// checksum with it (whose value for zeros is 0, so HDF5 reads the chunk back without an error).
void zero_first_params_chunk(const std::string& path) {
  haddr_t address = HADDR_UNDEF;
  hsize_t size = 0;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return;
  const hid_t ds = H5Dopen2(file, run::layout::kPosteriorParams, H5P_DEFAULT);
  if (ds >= 0) {
    std::vector<hsize_t> offset(3, 0);
    unsigned mask = 0;
    const hid_t space = H5Dget_space(ds);
    H5Dget_chunk_info(ds, space, 0, offset.data(), &mask, &address, &size);
    H5Sclose(space);
    H5Dclose(ds);
  }
  H5Fclose(file);
  if (address == HADDR_UNDEF || size == 0) return;
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(address));
  const std::vector<char> zeros(size, 0);
  f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
}

}  // namespace

std::string Run::final_check(const std::string& status) const {
  // Fault injection for the test of this check (tests/mpi/test_exits.py): the archive damaged
  // after the run's last look at it, where only this read-back can see it: truncated to half,
  // or (SIMMER_TEST_DAMAGE_ARCHIVE=zero_chunk) one chunk of the draws zeroed with its checksum.
  if (const char* how = std::getenv("SIMMER_TEST_DAMAGE_ARCHIVE"); how != nullptr) {
    if (std::string(how) == "zero_chunk") {
      zero_first_params_chunk(p_.run.output);
    } else {
      std::error_code ec;
      std::filesystem::resize_file(p_.run.output, std::filesystem::file_size(p_.run.output, ec) / 2, ec);
    }
  }
  try {
    const io::ArchiveReader r(p_.run.output);
    const std::string found = r.has_attribute(run::layout::kRoot, run::layout::kStatus)
                                  ? r.attribute_text(run::layout::kRoot, run::layout::kStatus)
                                  : std::string("(none)");
    if (found != status) return "its status reads '" + found + "', not '" + status + "'";
    std::string damage;
    std::int64_t datasets = 0;
    r.check_datasets([&](const io::DatasetCheck& c) {
      ++datasets;
      if (c.damaged() && damage.empty()) {
        damage = c.path + " is damaged" + (c.damage.empty() ? std::string() : " (" + c.damage.front() + ")");
      }
    });
    if (!damage.empty()) return damage;
    if (datasets == 0) return "it holds no dataset";
    const auto digests = parallel::row_digest_mismatches(r);
    if (!digests.empty()) return digests.front().message;
  } catch (const std::exception& e) {
    return std::string("it cannot be read back (") + e.what() + ")";
  }
  return "";
}

int Run::finish() {
  if (!p_.adam_only && p_.diagnostics.curvature_report == run::DiagnosticsOptions::CurvatureReport::start_end) {
    curvature_report(true);
  }
  // Every trajectory's report, in trajectory order on every rank.
  std::vector<Record> mine;
  for (run::Chain* ch : chains()) {
    ByteWriter w;
    ch->report().save(w);
    mine.emplace_back(ch->index(), w.bytes());
  }
  ByteWriter all;
  for (const auto& bytes : gather_records(mine, p_.run.trajectories, comm_)) all.block(bytes);
  broadcast_bytes(all.bytes(), comm_);
  std::vector<run::ChainReport> reports;
  ByteReader r(all.bytes().data(), all.bytes().size(), "end-of-run reports");
  while (!r.done()) {
    const auto bytes = r.block();
    ByteReader one(bytes.data(), bytes.size(), "end-of-run report");
    reports.push_back(run::ChainReport::load(one));
  }
  // The candidates on rank 0: the deep ensemble of the Adam end points (each trajectory's
  // baseline predictions, added in trajectory order), then every stage's pooled members with the
  // trajectories' uncertainty partials merged in trajectory order (so the scores are
  // bit-identical for any rank count).
  std::vector<ensemble::Candidate> candidates;
  if (p_.has_deep_ensemble()) {
    mine.clear();
    for (run::Chain* ch : chains()) {
      ByteWriter w;
      for (std::size_t set = 0; set < p_.sets.size(); ++set) {
        const ConstBatchView pred = ch->baseline_prediction(set);
        w.doubles(pred.data(), pred.size());
      }
      mine.emplace_back(ch->index(), w.bytes());
    }
    const auto predictions = gather_records(mine, p_.run.trajectories, comm_);
    if (rank_ == 0) {
      std::vector<Index> rows;
      for (const auto& set : p_.sets) rows.push_back(set.rows());
      ensemble::DeepEnsembleBuilder deep(p_.classification, p_.classes, p_.outputs, rows, run::scored_sets(p_));
      for (const auto& bytes : predictions) {
        ByteReader one(bytes.data(), bytes.size(), "baseline predictions");
        for (std::size_t set = 0; set < p_.sets.size(); ++set) {
          const auto values = one.doubles();
          if (static_cast<Index>(values.size()) != p_.sets[set].rows() * p_.outputs) {
            throw Error("internal: baseline predictions of the wrong shape");
          }
          deep.add(set, ConstBatchView(values.data(), p_.sets[set].rows(), p_.outputs));
        }
        deep.done();
      }
      candidates.push_back(deep.candidate());
    }
  }
  std::vector<std::unique_ptr<ensemble::PooledDiagnostics>> diagnostics;
  for (std::int64_t k = 0; k < p_.stages(); ++k) {
    mine.clear();
    for (const run::Chain* ch : chains()) {
      ByteWriter w;
      ch->diagnostics_partials(w, k);
      mine.emplace_back(ch->index(), w.bytes());
    }
    const auto partials = gather_records(mine, p_.run.trajectories, comm_);
    if (rank_ != 0) continue;
    auto pooled = std::make_unique<ensemble::PooledDiagnostics>(run::diagnostics_setup(p_, k));
    for (const auto& bytes : partials) {
      ByteReader one(bytes.data(), bytes.size(), "ensemble partial");
      pooled->merge(one);
    }
    candidates.push_back(stage_candidate(p_, k, pooled_[static_cast<std::size_t>(k)], *pooled));
    diagnostics.push_back(std::move(pooled));
  }
  // Scores and the choice on rank 0, known to every rank.
  ByteWriter chosen;
  if (rank_ == 0) {
    std::vector<const ensemble::PooledDiagnostics*> views;
    for (const auto& d : diagnostics) views.push_back(d.get());
    choose(p_, candidates, views).save(chosen);
  }
  broadcast_bytes(chosen.bytes(), comm_);
  ByteReader cr(chosen.bytes().data(), chosen.bytes().size(), "the run's report");
  const RunReport report = RunReport::load(cr);

  auto& f = archive_->file();
  archive_->baselines(chains());
  // The arrays of every candidate: the run's ensemble in /ensemble, the deep ensemble in
  // /deep_ensemble, the stacked candidates in /stacked, a ladder's rungs in /ladder/rung_<k>.
  const auto candidate = [&](std::size_t c) { return rank_ == 0 ? &candidates.at(c) : nullptr; };
  archive_->candidate(run::layout::kEnsemble, candidate(static_cast<std::size_t>(report.selected)));
  for (std::size_t c = 0; c < report.candidates.size(); ++c) {
    const EnsembleReport& e = report.candidates[c];
    // (The one simmering stage without a ladder has no group but /ensemble.)
    if (e.stage < 0 || !p_.ladder.rungs.empty())
      archive_->candidate(run::layout::candidate_group(e.name), candidate(c));
  }
  write_report(f, p_, reports, report);
  if (replicas_.enabled()) write_exchange();
  // The scores and choices under a checksum (attributes have none of their own).
  for (const auto& group : run::layout::choice_groups(p_.ladder.rungs.size(), p_.has_deep_ensemble())) {
    if (f.exists(group)) f.mirror_attributes(group);
  }
  std::vector<std::int64_t> diverged;
  for (const auto& rep : reports) diverged.push_back(rep.diverged_at);
  f.put(run::layout::kDivergedAtStep, diverged, {p_.run.trajectories});
  // Each trajectory's digest of the draws it stored, which the read-back below recomputes.
  std::vector<std::int64_t> digests, draws, trace_digests, trace_rows, tracked_digests, tracked_rows;
  for (const auto& rep : reports) {
    digests.push_back(static_cast<std::int64_t>(rep.draws_digest));
    draws.push_back(rep.draws);
    trace_digests.push_back(static_cast<std::int64_t>(rep.trace_digest));
    trace_rows.push_back(rep.trace_rows);
    tracked_digests.push_back(static_cast<std::int64_t>(rep.tracked_digest));
    tracked_rows.push_back(rep.tracked_rows);
  }
  f.create_group(run::layout::kChecksums);
  f.put(run::layout::kDrawsDigest, digests, {p_.run.trajectories});
  f.put(run::layout::kDrawsDigestCount, draws, {p_.run.trajectories});
  f.put(run::layout::kTraceDigest, trace_digests, {p_.run.trajectories});
  f.put(run::layout::kTraceDigestCount, trace_rows, {p_.run.trajectories});
  if (f.exists(run::layout::kTracked)) {
    f.put(run::layout::kTrackedDigest, tracked_digests, {p_.run.trajectories});
    f.put(run::layout::kTrackedDigestCount, tracked_rows, {p_.run.trajectories});
  }
  // Diverged: stopped by the health check, or judged exploded at the end (any stage).
  bool any = std::any_of(diverged.begin(), diverged.end(), [](std::int64_t d) { return d >= 0; });
  for (const auto& rep : reports) {
    for (const auto& stage : rep.stages) any = any || stage.summary.verdict == ensemble::Verdict::diverged;
  }
  f.record_content_digests(io::kDigestManifest);  // (before the coordinates name_axes adds)
  f.name_axes(run::layout::axis_name);            // every dataset's every axis a named dimension (netCDF, xarray)

  // Where the CPU time went, summed over ranks.
  double steps = 0.0, evals = 0.0;
  for (const auto& ch : chains_) {
    steps += ch->step_seconds();
    evals += ch->eval_seconds();
  }
  double parts[4] = {steps, evals, comm_io_seconds_, run::cpu_seconds() - cpu_start_};
  double parts_sum[4] = {0, 0, 0, 0};
  MPI_Reduce(parts, parts_sum, 4, MPI_DOUBLE, MPI_SUM, 0, comm_);
  // Sharded gradients: what the exchange cost, summed over ranks.
  double exchange[2] = {gradients_ ? gradients_->seconds() : 0.0,
                        gradients_ ? static_cast<double>(gradients_->exchanges()) : 0.0};
  double exchange_sum[2] = {0, 0};
  MPI_Reduce(exchange, exchange_sum, 2, MPI_DOUBLE, MPI_SUM, 0, comm_);
  double wall = wall_seconds();
  MPI_Bcast(&wall, 1, MPI_DOUBLE, 0, comm_);  // attributes must be identical on all ranks
  f.attribute(run::layout::kRoot, run::layout::kWallSeconds, wall);
  const std::int64_t io_counts[2] = {f.transfers(), f.collective_transfers()};
  f.attribute(run::layout::kRoot, run::layout::kIoTransfers, io_counts[0]);
  f.attribute(run::layout::kRoot, run::layout::kIoCollectiveTransfers, io_counts[1]);
  // The run's end: its checkpoint is removed next, so the archive must be the one it wrote and
  // the lock still its own before the archive is called complete (else it stays "running" and
  // the checkpoint resumable).
  watch_output();
  f.attribute(run::layout::kRoot, run::layout::kStatus, run::layout::final_status(any));
  // No checkpoint of this run matches a finished archive (one is removed below; a copy of it is stale).
  f.attribute(run::layout::kRoot, run::layout::kCheckpointGeneration, generation_ + 1);
  f.close();
  // Before the checkpoint goes, the archive read back as a reader will (serially, rank 0): its
  // status, and every chunk against its checksum. A damaged archive keeps the checkpoint.
  std::string damage = rank_ == 0 ? final_check(run::layout::final_status(any)) : std::string();
  int damaged = damage.empty() ? 0 : 1;
  MPI_Bcast(&damaged, 1, MPI_INT, 0, comm_);
  if (damaged != 0) {
    if (rank_ == 0) {
      throw DamagedAtEnd("the archive '" + p_.run.output + "' failed its final check: " + damage +
                         " (simmer_analyze verify " + p_.run.output + " lists the damage)");
    }
    throw PeerError("rank 0 found the archive damaged");
  }
  if (rank_ == 0) {
    // The run is complete: its checkpoint can only mislead (docs: a finished run has none).
    std::remove(checkpoint_path_.c_str());
    std::remove((checkpoint_path_ + ".tmp").c_str());
    print_report(p_, reports, report);
    // The members the simmering candidates hold (a chosen deep ensemble's Adam networks aside).
    std::int64_t simmered = 0;
    for (const auto& e : report.candidates) simmered += e.stage >= 0 ? e.members : 0;
    print_footer(p_, parts_sum, wall, size_, io_counts, diverged, simmered);
    if (exchange_sum[1] > 0) {
      std::printf(
          "sharded gradients: %lld ranks per trajectory, %lld row blocks; the exchange (MPI_Allgather of %lld "
          "values, waiting for the group's slowest rank included) took %.3g ms per evaluation, %.1f%% of the "
          "CPU time\n",
          static_cast<long long>(p_.run.ranks_per_trajectory), static_cast<long long>(p_.run.gradient_chunks),
          static_cast<long long>(p_.parameters + 1), 1e3 * exchange_sum[0] / exchange_sum[1],
          100.0 * exchange_sum[0] / parts_sum[3]);
    }
    print_conclusion(p_, reports, report);
    if (any) {
      std::printf("diverged: %s; the run ends with exit status %d (docs/RELIABILITY.md)\n",
                  diverged_summary(reports, simmered).c_str(), kExitDiverged);
    }
  }
  return any ? kExitDiverged : 0;
}

}  // namespace simmer::parallel::detail
