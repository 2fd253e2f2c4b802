// simmer_analyze merge: archives of a seed study concatenated along the chain axis, with the
// ensemble and /metrics recomputed. Written serially through io::ParallelFile on MPI_COMM_SELF,
// in the layout of parallel::ArchiveWriter (dimension scales, link creation order, NaN fill; field
// lists and chunks from run/archive_layout.hpp). This file checks the inputs and copies what is
// per chain or replicated; merge_scores.cpp re-derives what pools them (scores, diagnostics,
// the deep ensemble) into /metrics, written by the run's own parallel::write_metrics.
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "merge_parts.hpp"
#include "simmer/core/error.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/io/h5.hpp"
#include "simmer/parallel/archive_writer.hpp"
#include "simmer/parallel/report.hpp"
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

void write_archive(const std::vector<Input>& inputs, const std::string& path, const MergeOptions& o) {
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
  std::string merged_from, seeds;
  double lambda_max = -1.0, limit = std::numeric_limits<double>::infinity(), wall = 0.0;
  for (const auto& in : inputs) {
    if (!merged_from.empty()) merged_from += ", ";
    merged_from += in.run.path + " (run.seed " + std::to_string(in.run.config.run.seed) + ", " +
                   std::to_string(in.run.chains) + " trajectories)";
    if (!seeds.empty()) seeds += ',';
    seeds += std::to_string(in.run.config.run.seed);
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
  f.attribute(layout::kRoot, layout::kMergedFrom, merged_from);
  if (lambda_max >= 0.0) {
    f.attribute(layout::kRoot, layout::kLambdaMax, lambda_max);
    f.attribute(layout::kRoot, layout::kTimeStepLimit, limit);
  }
  f.attribute(layout::kRoot, layout::kWallSeconds, wall);

  cli::Config config = run0.config;
  config.run.trajectories = C;
  config.run.output = o.output;
  f.put_strings(layout::kConfig, {cli::to_ini(config)});
  f.attribute(layout::kConfig, layout::kRunSeeds, seeds);
  f.attribute(layout::kConfig, layout::kMergedFrom, merged_from);

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
      f.put(layout::join(g, layout::kFraction), std::vector<double>(fraction.data(), fraction.data() + fraction.size()),
            {rows, run0.classes});
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
      f.put(layout::join(g, layout::kVariance), std::vector<double>(variance.data(), variance.data() + variance.size()),
            {rows, run0.outputs});
      f.attribute(g, layout::kMembers, acc.members());
      mean_sets.push_back(std::move(acc));
      component_sets.push_back(merging::merge_components(inputs, f, g, rows, run0.outputs, C));
    }
  }
  if (r0.exists(layout::kTracked)) {
    const auto shape = r0.dims(layout::kTracked);
    f.create_dataset(layout::kTracked, io::Type::f64, {C, shape[1], shape[2]},
                     {1, std::max<std::int64_t>(shape[1], 1), shape[2]}, true);
    copy_chain_rows(inputs, f, layout::kTracked, io::Type::f64);
    if (r0.exists(layout::kTrackedRows)) {
      f.put(layout::kTrackedRows, r0.read_ints(layout::kTrackedRows), r0.dims(layout::kTrackedRows));
    }
  }

  // /metrics (with the /baseline columns) as the run's report writes it, from the pooled inputs.
  f.create_group(layout::kMetrics);
  parallel::write_metrics(
      f,
      merging::merged_metrics(inputs, f, C, {std::move(vote_sets), std::move(mean_sets), std::move(component_sets)}));
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
  const bool any_diverged = std::any_of(diverged.begin(), diverged.end(), [](std::int64_t d) { return d >= 0; });
  f.attribute(layout::kRoot, layout::kStatus, layout::final_status(any_diverged));
  // The scores and choices under a checksum (attributes have none of their own).
  for (const auto& group : layout::choice_groups(0, f.exists(layout::kDeepEnsemble))) f.mirror_attributes(group);
  f.name_axes(layout::axis_name);  // every dataset's every axis a named dimension (netCDF, xarray)
  f.attribute(layout::kRoot, layout::kIoTransfers, f.transfers());
  f.attribute(layout::kRoot, layout::kIoCollectiveTransfers, f.collective_transfers());
  f.close();
}

}  // namespace

std::string merge_overlap(const MergeSource& a, const MergeSource& b) {
  if (!a.run_id.empty() && a.run_id == b.run_id) {
    return "'" + a.path + "' and '" + b.path + "' are the same run (run id " + a.run_id +
           "): its trajectories would be counted twice";
  }
  if (a.seed == b.seed && a.split_seed == b.split_seed) {
    const std::int64_t shared = std::min(a.chains, b.chains);
    return "'" + a.path + "' and '" + b.path + "' ran the same configuration with run.seed " + std::to_string(a.seed) +
           " (data.split_seed " + std::to_string(a.split_seed) + "): trajectories 0.." + std::to_string(shared - 1) +
           " are the same in both and would be counted twice; merge runs with different run.seed";
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
    if (!inputs[i].run.config.simmer.ladder.empty()) {
      throw Error("merge: '" + o.archives[i] +
                  "' is a temperature-ladder run (simmer.ladder): each run chose its ensemble among its rungs on "
                  "its own validation set, so their ensembles do not add up; compare them with simmer_analyze "
                  "summary instead");
    }
    if (i > 0) check_compatible(inputs.front(), inputs[i]);
    // The same trajectories twice would be counted twice.
    MergeSource& s = sources.emplace_back();
    s.path = o.archives[i];
    if (inputs[i].reader->has_attribute(layout::kRoot, layout::kRunId)) {
      s.run_id = inputs[i].reader->attribute_text(layout::kRoot, layout::kRunId);
    }
    s.seed = inputs[i].run.config.run.seed;
    s.split_seed = inputs[i].run.config.data.split_seed;
    s.chains = inputs[i].run.chains;
    for (std::size_t j = 0; j < i; ++j) {
      const std::string why = merge_overlap(sources[j], s);
      if (!why.empty()) throw Error("merge: " + why);
    }
  }

  // Written next to the output and renamed at the end: no half-written archive under its name.
  try {
    PartialOutput written(o.output);
    write_archive(inputs, written.partial(), o);
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
