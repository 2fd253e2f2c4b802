// simmer_analyze merge: archives of a seed study concatenated along the chain axis, with the
// ensemble and /metrics recomputed. Written serially through io::ParallelFile on MPI_COMM_SELF,
// in the layout of parallel::ArchiveWriter (dimension scales, link creation order, NaN fill; field
// lists and chunks from run/archive_layout.hpp). This file checks the inputs and copies what is
// per chain or replicated; merge_scores.cpp re-derives what pools them (scores, diagnostics,
// the deep ensemble) into /metrics, written by the run's own parallel::write_metrics;
// merge_ladder.cpp pools a ladder's rungs and makes its choice again.
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "merge_parts.hpp"
#include "simmer/core/error.hpp"
#include "simmer/core/sha256.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/io/h5.hpp"
#include "simmer/parallel/archive_writer.hpp"
#include "simmer/parallel/report.hpp"
#include "simmer/parallel/row_digests.hpp"
#include "simmer/posthoc/commands.hpp"
#include "simmer/posthoc/run_archive.hpp"
#include "simmer/run/archive_layout.hpp"

namespace simmer::posthoc {
namespace {

namespace fs = std::filesystem;
namespace layout = run::layout;
using Votes = ensemble::VoteAccumulator::Votes;
using merging::all_have;
using merging::copy_attributes;
using merging::Input;

/// The data sets both archives must hold identically.
std::vector<std::string> data_paths(const io::ArchiveReader& r) {
  std::vector<std::string> out;
  for (const char* set : {layout::kTrain, layout::kTest, layout::kValidation, layout::kPoints}) {
    for (const std::string& p : {layout::data_x(set), layout::data_y(set)}) {
      if (r.exists(p)) out.push_back(p);
    }
  }
  for (const char* s : {layout::kXMin, layout::kXMax, layout::kYMin, layout::kYMax}) {
    if (r.exists(s)) out.push_back(s);
  }
  return out;
}

/// "" when both archives hold the same data, else the first dataset that differs.
std::string data_difference(const io::ArchiveReader& a, const io::ArchiveReader& b) {
  const auto pa = data_paths(a), pb = data_paths(b);
  for (const auto& p : pa) {
    if (std::find(pb.begin(), pb.end(), p) == pb.end()) return p + " (only in '" + a.path() + "')";
    if (a.dims(p) != b.dims(p) || a.read_doubles(p) != b.read_doubles(p)) return p;
  }
  for (const auto& p : pb) {
    if (std::find(pa.begin(), pa.end(), p) == pa.end()) return p + " (only in '" + b.path() + "')";
  }
  return "";
}

void check_compatible(const Input& first, const Input& other) {
  const auto& a = *first.reader;
  const auto& b = *other.reader;
  const std::string pair = "'" + a.path() + "' and '" + b.path() + "'";
  bool split_seed_differs = false;
  // The runs of one study may differ in their seeds and in how they were carried out
  // (cli::key_role: study and placement keys).
  for (const auto& line :
       cli::config_differences(first.run.config, other.run.config, {cli::KeyRole::study, cli::KeyRole::placement})) {
    const std::string key = line.substr(0, line.find(':'));
    if (key == "data.split_seed") {
      split_seed_differs = true;
      continue;
    }
    throw Error("cannot merge " + pair + ": not runs of one study: " + line + " (" + a.path() + " vs " + b.path() +
                "); only run.seed, run.trajectories and how the run was carried out may differ");
  }
  const std::string differs = data_difference(a, b);
  if (!differs.empty()) {
    throw Error("cannot merge " + pair + ": different data: " + differs + " differs" +
                (split_seed_differs ? " (data.split_seed: '" + std::to_string(first.run.config.data.split_seed) +
                                          "' vs '" + std::to_string(other.run.config.data.split_seed) + "')"
                                    : std::string()));
  }
  if (first.run.draws != other.run.draws || first.run.parameters != other.run.parameters ||
      first.run.store_type != other.run.store_type || first.run.sets != other.run.sets) {
    throw Error("cannot merge " + pair + ": their /posterior or /ensemble layouts differ");
  }
}

/// `text` cut at every `separator`, empty fields kept ("a," is {"a", ""}: an archive from before
/// run ids has the empty one).
std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find(separator, start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

/// Every trajectory of an input as it was first run: /origin's rows for a merged archive, else
/// the run's own 0..C-1.
std::vector<TrajectoryOrigin> trajectory_origins(const Input& in) {
  const io::ArchiveReader& r = *in.reader;
  std::vector<TrajectoryOrigin> out(static_cast<std::size_t>(in.run.chains));
  if (!r.exists(layout::kOrigin)) {
    const std::string id =
        r.has_attribute(layout::kRoot, layout::kRunId) ? r.attribute_text(layout::kRoot, layout::kRunId) : "";
    for (std::size_t c = 0; c < out.size(); ++c) {
      out[c] = {id, in.run.config.run.seed, in.run.config.data.split_seed, static_cast<std::int64_t>(c), r.path()};
    }
    return out;
  }
  const auto seed = r.read_ints(layout::kOriginSeed), split_seed = r.read_ints(layout::kOriginSplitSeed),
             index = r.read_ints(layout::kOriginTrajectory), run = r.read_ints(layout::kOriginRun);
  const auto ids = split(r.attribute_text(layout::kOrigin, layout::kOriginRunIds), ',');
  const auto archives = split(r.attribute_text(layout::kOrigin, layout::kOriginArchives), '\n');
  for (std::size_t c = 0; c < out.size(); ++c) {
    const auto k = c < run.size() ? static_cast<std::size_t>(run[c]) : ids.size();
    if (seed.size() != out.size() || split_seed.size() != out.size() || index.size() != out.size() ||
        run.size() != out.size() || k >= ids.size() || k >= archives.size()) {
      throw Error("merge: '" + r.path() + "': " + layout::kOrigin + " does not describe its " +
                  std::to_string(in.run.chains) + " trajectories");
    }
    out[c] = {ids[k], static_cast<std::uint64_t>(seed[c]), static_cast<std::uint64_t>(split_seed[c]), index[c],
              archives[k]};
  }
  return out;
}

/// The original runs of `origins`, each once, in the order /origin lists them (seed, split
/// seed, run id, archive): their index for each trajectory, in `run`.
std::vector<TrajectoryOrigin> origin_runs(const std::vector<TrajectoryOrigin>& origins,
                                          std::vector<std::int64_t>& run) {
  auto key = [](const TrajectoryOrigin& o) { return std::tie(o.seed, o.split_seed, o.run_id, o.archive); };
  std::vector<TrajectoryOrigin> runs;
  for (const auto& o : origins) {
    if (std::none_of(runs.begin(), runs.end(), [&](const TrajectoryOrigin& x) { return key(x) == key(o); }))
      runs.push_back(o);
  }
  std::sort(runs.begin(), runs.end(),
            [&](const TrajectoryOrigin& a, const TrajectoryOrigin& b) { return key(a) < key(b); });
  run.clear();
  for (const auto& o : origins) {
    const auto at = std::find_if(runs.begin(), runs.end(), [&](const TrajectoryOrigin& x) { return key(x) == key(o); });
    run.push_back(at - runs.begin());
  }
  return runs;
}

/// /origin and the provenance attributes that follow from it: the merged archive's run id (a
/// digest of its trajectories' origins, so every order and grouping of one merge gives the same),
/// merged_from and run_seeds.
void write_origin(io::ParallelFile& f, const std::vector<TrajectoryOrigin>& origins) {
  std::vector<std::int64_t> run;
  const auto runs = origin_runs(origins, run);
  std::vector<std::int64_t> seed, split_seed, index;
  std::vector<std::string> identity;
  for (const auto& o : origins) {
    seed.push_back(static_cast<std::int64_t>(o.seed));
    split_seed.push_back(static_cast<std::int64_t>(o.split_seed));
    index.push_back(o.trajectory);
    identity.push_back(o.run_id + " " + std::to_string(o.seed) + " " + std::to_string(o.split_seed) + " " +
                       std::to_string(o.trajectory) + "\n");
  }
  const auto C = static_cast<std::int64_t>(origins.size());
  f.create_group(layout::kOrigin);
  f.put(layout::kOriginSeed, seed, {C});
  f.put(layout::kOriginSplitSeed, split_seed, {C});
  f.put(layout::kOriginTrajectory, index, {C});
  f.put(layout::kOriginRun, run, {C});
  std::string ids, archives, merged_from, seeds;
  std::vector<std::uint64_t> seed_list;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const auto members = std::count(run.begin(), run.end(), static_cast<std::int64_t>(k));
    ids += (k > 0 ? "," : "") + runs[k].run_id;
    archives += (k > 0 ? "\n" : "") + runs[k].archive;
    merged_from += (k > 0 ? ", " : "") + runs[k].archive + " (run.seed " + std::to_string(runs[k].seed) + ", " +
                   std::to_string(members) + " trajectories)";
    if (std::find(seed_list.begin(), seed_list.end(), runs[k].seed) == seed_list.end())
      seed_list.push_back(runs[k].seed);
  }
  std::sort(seed_list.begin(), seed_list.end());
  for (const auto s : seed_list) seeds += (seeds.empty() ? "" : ",") + std::to_string(s);
  f.attribute(layout::kOrigin, layout::kOriginRunIds, ids);
  f.attribute(layout::kOrigin, layout::kOriginArchives, archives);
  f.attribute(layout::kOrigin, layout::kMeaning,
              "where each trajectory came from: its run's run.seed, data.split_seed and run id (run indexes "
              "run_ids and archives) and its index in that run");
  std::sort(identity.begin(), identity.end());
  std::string all;
  for (const auto& line : identity) all += line;
  const std::string run_id = sha256_hex(all).substr(0, 32);
  f.attribute(layout::kRoot, layout::kRunId, run_id);
  f.attribute(layout::kConfig, layout::kRunId, run_id);
  f.attribute(layout::kRoot, layout::kMergedFrom, merged_from);
  f.attribute(layout::kConfig, layout::kRunSeeds, seeds);
  f.attribute(layout::kConfig, layout::kMergedFrom, merged_from);
}

std::string status_of(const io::ArchiveReader& r) {
  return r.has_attribute(layout::kRoot, layout::kStatus) ? r.attribute_text(layout::kRoot, layout::kStatus)
                                                         : std::string("unknown");
}

/// A group of small replicated datasets (/data, /model) with its attributes, recursively.
void copy_tree(const io::ArchiveReader& r, io::ParallelFile& f, const std::string& group) {
  f.create_group(group);
  copy_attributes(r, f, group);
  for (const auto& name : r.members(group)) {
    const std::string path = layout::join(group, name);
    if (r.is_group(path)) {
      copy_tree(r, f, path);
      continue;
    }
    if (r.is_dimension(path)) continue;  // the writer names its own axes (put_strings, name_axes)
    if (r.is_string(path)) {
      f.put_strings(path, r.read_strings(path));
    } else if (r.type(path) == io::Type::i64) {
      f.put(path, r.read_ints(path), r.dims(path));
    } else {
      f.put(path, r.read_doubles(path), r.dims(path));
    }
    copy_attributes(r, f, path);
  }
}

/// Per-chain rows of `path` from every input, renumbered in input order: one transfer per chain.
/// An input without `path` (an archive from before it existed) leaves its chains' rows NaN.
void copy_chain_rows(const std::vector<Input>& inputs, io::ParallelFile& f, const std::string& path, io::Type type) {
  std::int64_t out_chain = 0;
  for (const auto& in : inputs) {
    if (!in.reader->exists(path)) {
      out_chain += in.run.chains;
      continue;
    }
    for (std::int64_t c = 0; c < in.run.chains; ++c, ++out_chain) {
      const std::vector<double> rows = in.reader->read_slab(path, c);
      const auto shape = in.reader->dims(path);
      const std::int64_t count = shape.size() >= 2 ? shape[1] : 1;
      if (type == io::Type::f32) {
        const std::vector<float> narrow(rows.begin(), rows.end());  // exact: they were float32
        f.write_rows(path, {{out_chain, 0, count}}, narrow);
      } else {
        f.write_rows(path, {{out_chain, 0, count}}, rows);
      }
    }
  }
}

void write_archive(const std::vector<Input>& inputs, const std::vector<TrajectoryOrigin>& origins,
                   const std::string& path, const MergeOptions& o) {
  const Input& first = inputs.front();
  const io::ArchiveReader& r0 = *first.reader;
  const RunArchive& run0 = first.run;
  std::int64_t C = 0;
  for (const auto& in : inputs) C += in.run.chains;
  const std::int64_t D = run0.draws, P = run0.parameters;
  const std::int64_t R = r0.exists(layout::kTraceStep) ? r0.dims(layout::kTraceStep).back() : 0;

  io::ParallelFile f = io::ParallelFile::create(path, MPI_COMM_SELF);
  // Root: the first archive's attributes, then what the merge changes.
  copy_attributes(r0, f, layout::kRoot);
  char stamp[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  f.attribute(layout::kRoot, layout::kCreatedAt, std::string(stamp));
  f.attribute(layout::kRoot, layout::kFormatVersion, layout::kArchiveFormat);  // whatever the inputs
  f.attribute(layout::kRoot, layout::kCommandLine, o.command_line);
  f.attribute(layout::kRoot, layout::kTrajectories, C);
  double lambda_max = -1.0, limit = std::numeric_limits<double>::infinity(), wall = 0.0;
  for (const auto& in : inputs) {
    const io::ArchiveReader& r = *in.reader;
    if (r.has_attribute(layout::kRoot, layout::kLambdaMax)) {
      lambda_max = std::max(lambda_max, r.attribute_real(layout::kRoot, layout::kLambdaMax));
    }
    if (r.has_attribute(layout::kRoot, layout::kTimeStepLimit)) {
      limit = std::min(limit, r.attribute_real(layout::kRoot, layout::kTimeStepLimit));
    }
    if (r.has_attribute(layout::kRoot, layout::kWallSeconds))
      wall += r.attribute_real(layout::kRoot, layout::kWallSeconds);
  }
  if (lambda_max >= 0.0) {
    f.attribute(layout::kRoot, layout::kLambdaMax, lambda_max);
    f.attribute(layout::kRoot, layout::kTimeStepLimit, limit);
  }
  f.attribute(layout::kRoot, layout::kWallSeconds, wall);

  cli::Config config = run0.config;
  config.run.trajectories = C;
  config.run.output = o.output;
  f.put_strings(layout::kConfig, {cli::to_ini(config)});
  write_origin(f, origins);

  copy_tree(r0, f, layout::kData);
  copy_tree(r0, f, layout::kModel);

  // Per-chain datasets, shaped and chunked as the run makes them (run/archive_layout.hpp); those
  // some input lacks (trace fields of archives before the drift diagnostics) are left out.
  const io::Type store = run0.store_type;
  std::vector<layout::ChainDataset> chain_sets;
  for (const auto& d : layout::chain_datasets({C, D, P, R, store == io::Type::f32})) {
    if (all_have(inputs, d.path)) chain_sets.push_back(d);
  }
  for (const auto& d : chain_sets) {
    f.create_group(d.group);
    copy_attributes(r0, f, d.group);
    f.create_dataset(d.path, d.dtype, d.dims, d.chunk, d.nan_fill);
    copy_attributes(r0, f, d.path);
  }
  const std::vector<std::string>& stats = layout::sample_stat_fields();
  parallel::write_posterior_scales(f, C, D, P, stats);

  for (const auto& d : chain_sets) {
    if (d.group != layout::kTrace || R > 0) copy_chain_rows(inputs, f, d.path, d.dtype);
  }
  // The baseline networks' outputs on each evaluation set: /baseline/<set>/prediction [chain, row, output].
  for (const auto& name : r0.members(layout::kBaseline)) {
    const std::string prediction = layout::baseline_prediction(name);
    if (!r0.is_group(layout::baseline_set_group(name)) || !r0.exists(prediction)) continue;
    const auto shape = r0.dims(prediction);
    if (shape.size() != 3) continue;
    f.create_group(layout::baseline_set_group(name));
    f.create_dataset(prediction, io::Type::f64, {C, shape[1], shape[2]},
                     {1, std::max<std::int64_t>(shape[1], 1), shape[2]}, true);
    copy_attributes(r0, f, prediction);
    copy_chain_rows(inputs, f, prediction, io::Type::f64);
  }

  // A ladder's rungs pooled and its choice made again (merge_ladder.cpp); otherwise /ensemble:
  // votes add, regression means and variances combine by Chan's formula. Then /metrics (with the
  // /baseline columns) as the run's report writes it, from the pooled inputs.
  const bool ladder = merging::is_ladder(first);
  parallel::Metrics metrics;
  if (ladder) {
    metrics = merging::write_ladder(inputs, f, C);
  } else {
    // /ensemble: votes add; regression means and variances combine by Chan's formula.
    f.create_group(layout::kEnsemble);
    std::vector<ensemble::VoteAccumulator> vote_sets;
    std::vector<ensemble::MeanAccumulator> mean_sets;
    std::vector<std::vector<ensemble::MeanAccumulator>> component_sets;
    for (const auto& set : run0.sets) {
      const std::string g = layout::ensemble_group(set);
      f.create_group(g);
      const std::int64_t rows =
          r0.exists(layout::data_x(set))
              ? r0.dims(layout::data_x(set)).front()
              : r0.dims(layout::join(g, run0.classification ? layout::kVotes : layout::kMean)).front();
      if (run0.classification) {
        ensemble::VoteAccumulator acc(rows, run0.classes);
        const std::string votes_path = layout::join(g, layout::kVotes);
        for (const auto& in : inputs) {
          const auto v = in.reader->read_ints(votes_path);
          if (static_cast<Index>(v.size()) != rows * run0.classes)
            throw Error("'" + in.run.path + "': " + votes_path + " has an unexpected shape");
          acc.add_votes(Eigen::Map<const Votes>(v.data(), rows, run0.classes), merging::set_members(*in.reader, g));
        }
        const Votes& votes = acc.votes();
        f.put(votes_path, std::vector<std::int64_t>(votes.data(), votes.data() + votes.size()), {rows, run0.classes});
        f.put(layout::join(g, layout::kPrediction), acc.majority(), {rows});
        const Matrix fraction = acc.fractions();
        f.put(layout::join(g, layout::kFraction),
              std::vector<double>(fraction.data(), fraction.data() + fraction.size()), {rows, run0.classes});
        f.attribute(g, layout::kMembers, acc.members());
        vote_sets.push_back(std::move(acc));
      } else {
        ensemble::MeanAccumulator acc(rows, run0.outputs);
        for (const auto& in : inputs) {
          const std::int64_t n = merging::set_members(*in.reader, g);
          const Matrix mean =
              merging::as_matrix(in.reader->read_doubles(layout::join(g, layout::kMean)), rows, run0.outputs);
          const Matrix variance =
              merging::as_matrix(in.reader->read_doubles(layout::join(g, layout::kVariance)), rows, run0.outputs);
          acc.merge(n, mean, variance * static_cast<double>(std::max<std::int64_t>(n - 1, 0)));
        }
        const Matrix mean = acc.mean(), variance = acc.variance();
        f.put(layout::join(g, layout::kMean), std::vector<double>(mean.data(), mean.data() + mean.size()),
              {rows, run0.outputs});
        f.put(layout::join(g, layout::kVariance),
              std::vector<double>(variance.data(), variance.data() + variance.size()), {rows, run0.outputs});
        f.attribute(g, layout::kMembers, acc.members());
        mean_sets.push_back(std::move(acc));
        component_sets.push_back(merging::merge_components(inputs, f, g, rows, run0.outputs, C));
      }
    }
    metrics =
        merging::merged_metrics(inputs, f, C, {std::move(vote_sets), std::move(mean_sets), std::move(component_sets)});
  }
  // The tracked rows' predictions, once /ensemble and its sets exist (a dataset made first would
  // make them as intermediate groups, listed by name rather than in the order they were made).
  if (r0.exists(layout::kTracked)) {
    const auto shape = r0.dims(layout::kTracked);
    f.create_dataset(layout::kTracked, io::Type::f64, {C, shape[1], shape[2]},
                     {1, std::max<std::int64_t>(shape[1], 1), shape[2]}, true);
    copy_chain_rows(inputs, f, layout::kTracked, io::Type::f64);
    if (r0.exists(layout::kTrackedRows)) {
      f.put(layout::kTrackedRows, r0.read_ints(layout::kTrackedRows), r0.dims(layout::kTrackedRows));
    }
  }
  f.create_group(layout::kMetrics);
  parallel::write_metrics(f, metrics);
  std::vector<std::int64_t> diverged;
  for (const auto& in : inputs) {
    if (in.reader->exists(layout::kDivergedAtStep)) {
      const auto d = in.reader->read_ints(layout::kDivergedAtStep);
      diverged.insert(diverged.end(), d.begin(), d.end());
    } else {
      diverged.insert(diverged.end(), static_cast<std::size_t>(in.run.chains), -1);
    }
  }
  f.put(layout::kDivergedAtStep, diverged, {C});
  // Each trajectory's digest of its draws travels with them (the draws are copied as they are).
  if (all_have(inputs, layout::kDrawsDigest) && all_have(inputs, layout::kDrawsDigestCount)) {
    f.create_group(layout::kChecksums);
    f.put(layout::kDrawsDigest, merging::concatenated<std::int64_t>(inputs, layout::kDrawsDigest), {C});
    f.put(layout::kDrawsDigestCount, merging::concatenated<std::int64_t>(inputs, layout::kDrawsDigestCount), {C});
    if (all_have(inputs, layout::kTraceDigest) && all_have(inputs, layout::kTraceDigestCount)) {
      f.put(layout::kTraceDigest, merging::concatenated<std::int64_t>(inputs, layout::kTraceDigest), {C});
      f.put(layout::kTraceDigestCount, merging::concatenated<std::int64_t>(inputs, layout::kTraceDigestCount), {C});
    }
    if (f.exists(layout::kTracked) && all_have(inputs, layout::kTrackedDigest) &&
        all_have(inputs, layout::kTrackedDigestCount)) {
      f.put(layout::kTrackedDigest, merging::concatenated<std::int64_t>(inputs, layout::kTrackedDigest), {C});
      f.put(layout::kTrackedDigestCount, merging::concatenated<std::int64_t>(inputs, layout::kTrackedDigestCount), {C});
    }
  }
  // And their digests of the rows written once (/initial, /baseline), of the datasets copied above.
  for (const auto& [digest, dataset] : parallel::written_once_digests(r0)) {
    if (!all_have(inputs, digest) || !f.exists(dataset)) continue;
    f.create_group(digest.substr(0, digest.rfind('/')));  // (and its parents)
    f.put(digest, merging::concatenated<std::int64_t>(inputs, digest), {C});
    f.attribute(digest, layout::kRowDigestOf, dataset);
  }
  const bool any_diverged = std::any_of(diverged.begin(), diverged.end(), [](std::int64_t d) { return d >= 0; });
  f.attribute(layout::kRoot, layout::kStatus, layout::final_status(any_diverged));
  // The scores and choices under a checksum (attributes have none of their own).
  for (const auto& group :
       layout::choice_groups(ladder ? run0.config.simmer.ladder.rungs.size() : 0, f.exists(layout::kDeepEnsemble))) {
    if (f.exists(group)) f.mirror_attributes(group);
  }
  f.mirror_attributes(layout::kOrigin);
  f.record_content_digests(io::kDigestManifest);  // (before the coordinates name_axes adds)
  f.name_axes(layout::axis_name);                 // every dataset's every axis a named dimension (netCDF, xarray)
  f.attribute(layout::kRoot, layout::kIoTransfers, f.transfers());
  f.attribute(layout::kRoot, layout::kIoCollectiveTransfers, f.collective_transfers());
  f.close();
}

}  // namespace

std::string merge_overlap(const std::vector<MergeSource>& sources) {
  // A trajectory is the same when its run id and index are (a copy) or its seeds and index are (a
  // rerun); the first input holding one an earlier input holds is refused with all it shares.
  using Seeds = std::tuple<std::uint64_t, std::uint64_t, std::int64_t>;
  std::map<std::pair<std::string, std::int64_t>, std::size_t> by_id;
  std::map<Seeds, std::size_t> by_seeds;
  for (std::size_t j = 0; j < sources.size(); ++j) {
    std::map<std::size_t, std::vector<const TrajectoryOrigin*>> shared;  // earlier input -> trajectories
    for (const auto& o : sources[j].trajectories) {
      std::optional<std::size_t> earlier;
      if (!o.run_id.empty()) {
        const auto at = by_id.find({o.run_id, o.trajectory});
        if (at != by_id.end()) earlier = at->second;
      }
      const auto at = by_seeds.find({o.seed, o.split_seed, o.trajectory});
      if (!earlier && at != by_seeds.end()) earlier = at->second;
      if (earlier) shared[*earlier].push_back(&o);
    }
    if (!shared.empty()) {
      const auto& [i, list] = *shared.begin();
      const TrajectoryOrigin& first = *list.front();
      // "trajectories 0..2" (or "0, 3, 5") of the first shared trajectory's run.
      std::vector<std::int64_t> index;
      for (const auto* o : list) {
        if (o->seed == first.seed && o->split_seed == first.split_seed && o->run_id == first.run_id)
          index.push_back(o->trajectory);
      }
      std::sort(index.begin(), index.end());
      const bool range = index.back() - index.front() + 1 == static_cast<std::int64_t>(index.size());
      std::string which =
          index.size() == 1
              ? "trajectory " + std::to_string(index.front())
              : "trajectories " +
                    (range ? std::to_string(index.front()) + ".." + std::to_string(index.back()) : std::string());
      if (!range && index.size() > 1) {
        for (std::size_t k = 0; k < index.size(); ++k) which += (k > 0 ? ", " : "") + std::to_string(index[k]);
      }
      const bool same_run =
          !first.run_id.empty() && std::any_of(sources[i].trajectories.begin(), sources[i].trajectories.end(),
                                               [&](const TrajectoryOrigin& o) { return o.run_id == first.run_id; });
      std::string why = "'" + sources[i].path + "' and '" + sources[j].path + "' ";
      why += same_run
                 ? "both hold " + which + " of the same run (run id " + first.run_id + ", run.seed " +
                       std::to_string(first.seed) + ")"
                 : "ran the same configuration with run.seed " + std::to_string(first.seed) + " (data.split_seed " +
                       std::to_string(first.split_seed) + "): " + which + " are the same in both";
      why += ": " + std::to_string(list.size()) + (list.size() == 1 ? " trajectory" : " trajectories") +
             " would be counted twice";
      if (!same_run) why += "; merge runs with different run.seed";
      return why;
    }
    for (const auto& o : sources[j].trajectories) {
      if (!o.run_id.empty()) by_id.emplace(std::pair{o.run_id, o.trajectory}, j);
      by_seeds.emplace(Seeds{o.seed, o.split_seed, o.trajectory}, j);
    }
  }
  return {};
}

void merge(const MergeOptions& o, std::ostream& out) {
  if (o.output.empty()) throw Error("merge: the output is missing: -o OUT.h5");
  if (o.archives.size() < 2)
    throw Error("merge: needs at least two archives (got " + std::to_string(o.archives.size()) + ")");
  std::error_code ec;
  guard_output("merge", o.output, o.archives);
  if (fs::exists(o.output, ec) && !o.overwrite) {
    throw Error("merge: the output '" + o.output + "' exists; pass --overwrite to replace it");
  }
  const fs::path dir = fs::path(o.output).has_parent_path() ? fs::path(o.output).parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) throw Error("merge: the output's directory '" + dir.string() + "' does not exist");

  std::vector<Input> inputs(o.archives.size());
  std::vector<MergeSource> sources;  // what the overlap rule reads of each input
  for (std::size_t i = 0; i < o.archives.size(); ++i) {
    inputs[i].reader.emplace(o.archives[i]);
    inputs[i].run = load_run(*inputs[i].reader);
    const std::string status = status_of(*inputs[i].reader);
    if (!layout::is_complete(status)) {
      throw Error("merge: '" + o.archives[i] + "' has status '" + status +
                  "': only finished runs can be merged (resume it with simmer_mpi --resume first)");
    }
    if (i > 0) check_compatible(inputs.front(), inputs[i]);
    if (i > 0 && merging::is_ladder(inputs[i])) merging::check_ladders(inputs.front(), inputs[i]);
    sources.push_back({o.archives[i], trajectory_origins(inputs[i])});
  }
  // The same trajectory twice (a rerun, a copy, an input merged into another) would count twice.
  const std::string why = merge_overlap(sources);
  if (!why.empty()) throw Error("merge: " + why);
  std::vector<TrajectoryOrigin> origins;
  for (const auto& s : sources) origins.insert(origins.end(), s.trajectories.begin(), s.trajectories.end());

  // Written next to the output and renamed at the end: no half-written archive under its name.
  try {
    PartialOutput written(o.output);
    write_archive(inputs, origins, written.partial(), o);
    written.commit();
  } catch (const std::exception& e) {
    throw Error("merge: writing '" + o.output + "' failed: " + e.what());
  }
  std::int64_t chains = 0;
  for (const auto& in : inputs) chains += in.run.chains;
  out << "merged " << inputs.size() << " archives (" << chains << " trajectories, chains renumbered 0.." << chains - 1
      << " in input order) into " << o.output << "\n";
}

}  // namespace simmer::posthoc
