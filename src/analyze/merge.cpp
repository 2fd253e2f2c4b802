// simmer_analyze merge: archives of a seed study concatenated along the chain axis, with the
// ensemble and /metrics recomputed. Written serially through io::ParallelFile on MPI_COMM_SELF,
// in the layout of mpi::ArchiveWriter (dimension scales, link creation order, NaN fill; field
// lists and chunks from run/archive_layout.hpp). Over 500 lines because it re-derives every
// group of the archive (the pooled ensemble, uncertainty scores, diagnostics) from its inputs.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "simmer/analyze/commands.hpp"
#include "simmer/analyze/run_archive.hpp"
#include "simmer/core/error.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/ensemble/candidate.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/io/h5.hpp"
#include "simmer/mpi/archive_writer.hpp"
#include "simmer/mpi/report.hpp"
#include "simmer/run/archive_layout.hpp"

namespace simmer::analyze {
namespace {

namespace fs = std::filesystem;
using Votes = ensemble::VoteAccumulator::Votes;

struct Input {
  std::optional<io::ArchiveReader> reader;
  RunArchive run;
};

/// The data sets both archives must hold identically.
std::vector<std::string> data_paths(const io::ArchiveReader& r) {
  std::vector<std::string> out;
  for (const std::string set : {"train", "test", "validation", "points"}) {
    for (const std::string v : {"x", "y"}) {
      const std::string p = "/data/" + set + "/" + v;
      if (r.exists(p)) out.push_back(p);
    }
  }
  for (const std::string s : {"x_min", "x_max", "y_min", "y_max"}) {
    if (r.exists("/data/scaling/" + s)) out.push_back("/data/scaling/" + s);
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
  return r.has_attribute("/", "status") ? r.attribute_text("/", "status") : std::string("unknown");
}

void copy_attributes(const io::ArchiveReader& r, io::ParallelFile& f, const std::string& object) {
  for (const auto& a : r.attributes(object)) {
    if (a.name == "CLASS" || a.name == "NAME" || a.name == "_Netcdf4Dimid") continue;  // dimension-scale bookkeeping
    switch (a.kind) {
      case io::AttributeValue::Kind::text:
        f.attribute(object, a.name, a.text);
        break;
      case io::AttributeValue::Kind::integer:
        f.attribute(object, a.name, a.integer);
        break;
      case io::AttributeValue::Kind::real:
        f.attribute(object, a.name, a.real);
        break;
    }
  }
}

/// A group of small replicated datasets (/data, /model) with its attributes, recursively.
void copy_tree(const io::ArchiveReader& r, io::ParallelFile& f, const std::string& group) {
  f.create_group(group);
  copy_attributes(r, f, group);
  for (const auto& name : r.members(group)) {
    const std::string path = group + "/" + name;
    if (r.is_group(path)) {
      copy_tree(r, f, path);
      continue;
    }
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

template <class T>
std::vector<T> concatenated(const std::vector<Input>& inputs, const std::string& path) {
  std::vector<T> out;
  for (const auto& in : inputs) {
    std::vector<T> part;
    if constexpr (std::is_same_v<T, double>)
      part = in.reader->read_doubles(path);
    else
      part = in.reader->read_ints(path);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::pair<double, double> mean_sd(const std::vector<double>& values) {
  double m = 0.0, q = 0.0;
  std::size_t n = 0;
  for (const double v : values) {
    if (std::isnan(v)) continue;
    m += v;
    ++n;
  }
  if (n == 0) return {std::nan(""), std::nan("")};
  m /= static_cast<double>(n);
  for (const double v : values) {
    if (!std::isnan(v)) q += (v - m) * (v - m);
  }
  return {m, n > 1 ? std::sqrt(q / static_cast<double>(n - 1)) : 0.0};
}

/// The sets with targets, scored for every ensemble: train, test and validation (not points).
bool is_scored(const std::string& set) { return set == "train" || set == "test" || set == "validation"; }

std::int64_t set_members(const io::ArchiveReader& r, const std::string& group) {
  if (r.has_attribute(group, "members")) return r.attribute_integer(group, "members");
  return r.attribute_integer(run::layout::kMetrics, "members");
}

Matrix as_matrix(const std::vector<double>& v, Index rows, Index cols) {
  if (static_cast<Index>(v.size()) != rows * cols) throw Error("merge: unexpected ensemble shape");
  return Eigen::Map<const Matrix>(v.data(), rows, cols);
}

bool all_have(const std::vector<Input>& inputs, const std::string& object) {
  return std::all_of(inputs.begin(), inputs.end(), [&](const Input& in) { return in.reader->exists(object); });
}

/// The pooled uncertainty scores again (issue 10), from what each run kept of them: the
/// members' mean class probabilities (averaged, weighted by members) or the coverage counts
/// (summed). Inputs without them (older archives) leave the scores out.
void merge_uncertainty(const std::vector<Input>& inputs, io::ParallelFile& f, const RunArchive& run0,
                       const std::vector<ensemble::VoteAccumulator>& vote_sets,
                       const std::vector<ensemble::MeanAccumulator>& mean_sets) {
  const io::ArchiveReader& r0 = *inputs.front().reader;
  Matrix noise;
  for (std::size_t s = 0; s < run0.sets.size(); ++s) {
    const std::string& set = run0.sets[s];
    if (!is_scored(set)) continue;
    const std::string g = "/ensemble/" + set;
    ensemble::SetScores scores;
    if (run0.classification) {
      if (!all_have(inputs, g + "/probability")) continue;
      const Index rows = vote_sets[s].votes().rows();
      Matrix sum = Matrix::Zero(rows, run0.classes);
      std::int64_t n = 0;
      for (const auto& in : inputs) {
        const std::int64_t m = set_members(*in.reader, g);
        sum += static_cast<double>(m) * as_matrix(in.reader->read_doubles(g + "/probability"), rows, run0.classes);
        n += m;
      }
      const Matrix probability = n > 0 ? Matrix(sum / static_cast<double>(n)) : sum;
      f.put(g + "/probability", std::vector<double>(probability.data(), probability.data() + probability.size()),
            {rows, run0.classes});
      scores = ensemble::score_probabilities(view(probability), r0.read_ints("/data/" + set + "/y"));
      for (const auto& [name, value] : {std::pair{"nll", scores.nll}, {"brier", scores.brier}, {"ece", scores.ece}}) {
        f.attribute(run::layout::kMetrics, "ensemble_" + set + "_" + name, value);
      }
    } else {
      const auto& acc = mean_sets[s];
      const Matrix truth = as_matrix(r0.read_doubles("/data/" + set + "/y"), acc.mean().rows(), acc.mean().cols());
      if (set == "train") noise = ensemble::residual_variance(view(acc.mean()), view(truth));
      if (noise.size() == 0) continue;
      scores = ensemble::score_with_noise(view(acc.mean()), acc.variance(), noise, view(truth));
      f.attribute(run::layout::kMetrics, "ensemble_" + set + "_nll", scores.nll);
      if (all_have(inputs, g + "/coverage_below") && all_have(inputs, g + "/coverage_equal")) {
        std::vector<std::int64_t> below, equal;
        std::int64_t members = 0;
        for (const auto& in : inputs) {
          const auto b = in.reader->read_ints(g + "/coverage_below");
          const auto e = in.reader->read_ints(g + "/coverage_equal");
          if (below.empty()) {
            below.assign(b.size(), 0);
            equal.assign(e.size(), 0);
          }
          if (b.size() != below.size() || e.size() != equal.size()) {
            throw Error("'" + in.run.path + "': " + g + "/coverage_below has an unexpected shape");
          }
          for (std::size_t i = 0; i < b.size(); ++i) {
            below[i] += b[i];
            equal[i] += e[i];
          }
          members += set_members(*in.reader, g);
        }
        f.put(g + "/coverage_below", below, {acc.mean().rows(), acc.mean().cols()});
        f.put(g + "/coverage_equal", equal, {acc.mean().rows(), acc.mean().cols()});
        ensemble::CoverageCounter counts;
        counts.restore(members, std::move(below), std::move(equal));
        for (const double level : ensemble::kCoverageLevels) {
          f.attribute(run::layout::kMetrics,
                      "ensemble_" + set + "_coverage_" + std::to_string(static_cast<int>(std::lround(100 * level))),
                      counts.coverage(level));
        }
      }
    }
    f.attribute(run::layout::kMetrics, "ensemble_" + set + "_worst_point", static_cast<std::int64_t>(scores.worst_row));
    f.attribute(run::layout::kMetrics, "ensemble_" + set + "_worst_point_share", scores.worst_share);
  }
}

/// The deep ensemble of every input's Adam end points again (issue 17), from their outputs on
/// each evaluation set (/baseline/<set>/prediction, merged in input order): /deep_ensemble and
/// the /metrics deep_ensemble_* scores. Inputs without one (ab initio runs, older archives)
/// leave it out.
void merge_deep_ensemble(const std::vector<Input>& inputs, io::ParallelFile& f, const RunArchive& run0) {
  if (!all_have(inputs, "/deep_ensemble")) return;
  const io::ArchiveReader& r0 = *inputs.front().reader;
  mpi::EnsembleLayout layout;
  layout.classification = run0.classification;
  layout.classes = run0.classes;
  layout.outputs = run0.outputs;
  std::vector<std::vector<std::int64_t>> labels;
  std::vector<Matrix> truth;
  for (const auto& set : run0.sets) {
    if (!all_have(inputs, "/baseline/" + set + "/prediction")) return;
    layout.sets.push_back(set);
    layout.rows.push_back(r0.dims("/baseline/" + set + "/prediction")[1]);
  }
  layout.scored = static_cast<std::size_t>(std::count_if(run0.sets.begin(), run0.sets.end(), is_scored));
  labels.resize(layout.scored);
  truth.resize(layout.scored);
  std::vector<ensemble::ScoredSet> scored;
  for (std::size_t s = 0; s < layout.scored; ++s) {
    const std::string y = "/data/" + layout.sets[s] + "/y";
    if (run0.classification) {
      labels[s] = r0.read_ints(y);
      scored.push_back({nullptr, &labels[s]});
    } else {
      truth[s] = as_matrix(r0.read_doubles(y), layout.rows[s], run0.outputs);
      scored.push_back({&truth[s], nullptr});
    }
  }
  ensemble::DeepEnsembleBuilder deep(run0.classification, run0.classes, run0.outputs, layout.rows, scored);
  for (const auto& in : inputs) {
    for (std::int64_t c = 0; c < in.run.chains; ++c) {
      for (std::size_t s = 0; s < layout.sets.size(); ++s) {
        const auto values = in.reader->read_slab("/baseline/" + layout.sets[s] + "/prediction", c);
        deep.add(s, view(as_matrix(values, layout.rows[s], run0.outputs)));
      }
      deep.done();
    }
  }
  mpi::write_candidate(f, MPI_COMM_SELF, layout, "/deep_ensemble", &deep.candidate());
  const ensemble::CandidateScores scores = ensemble::score(deep.candidate(), scored);
  mpi::write_scores(f, run::layout::kMetrics, "deep_ensemble_", run0.classification, layout.sets, scores.sets,
                    scores.coverage);
  f.attribute(run::layout::kMetrics, "deep_ensemble_members", deep.candidate().members);
}

/// /diagnostics concatenated in input order (each trajectory's numbers are its own), with the
/// verdict counts. The pooled per-block metrics need the runs' block ensembles, which archives
/// do not keep: a merged archive has none.
void merge_diagnostics(const std::vector<Input>& inputs, io::ParallelFile& f, std::int64_t chains) {
  if (!all_have(inputs, "/diagnostics/verdict")) return;
  const io::ArchiveReader& r0 = *inputs.front().reader;
  f.create_group("/diagnostics");
  copy_attributes(r0, f, "/diagnostics");
  f.attribute("/diagnostics", "pooled_block_metrics",
              std::string("not in a merged archive (the runs' block ensembles are not stored)"));
  std::vector<std::pair<std::string, unsigned>> by_chain;
  for (const auto& name : run::layout::diagnostic_fields()) {
    const std::string path = "/diagnostics/" + name;
    if (!all_have(inputs, path)) continue;
    f.put(path, concatenated<double>(inputs, path), {chains});
    by_chain.emplace_back(path, 0U);
  }
  std::vector<std::string> verdicts, reasons;
  std::map<std::string, std::int64_t> counts;
  for (const auto& in : inputs) {
    for (const auto& v : in.reader->read_strings("/diagnostics/verdict")) {
      verdicts.push_back(v);
      counts[v] += 1;
    }
    if (in.reader->exists("/diagnostics/verdict_reason")) {
      for (const auto& v : in.reader->read_strings("/diagnostics/verdict_reason")) reasons.push_back(v);
    }
  }
  f.put_strings("/diagnostics/verdict", verdicts);
  if (reasons.size() == verdicts.size()) f.put_strings("/diagnostics/verdict_reason", reasons);
  for (const auto& entry : ensemble::kVerdictNames.table) {
    const std::string name(entry.name);
    f.attribute(run::layout::kMetrics, run::layout::verdict_count_key(name), counts[name]);
  }
  std::vector<std::pair<std::string, unsigned>> by_block;
  std::int64_t blocks = -1;
  for (const char* split : {"train", "test"}) {
    const std::string path = std::string("/diagnostics/block_") + split + "_metric";
    if (!all_have(inputs, path)) continue;
    std::vector<double> rows;
    for (const auto& in : inputs) {
      const auto shape = in.reader->dims(path);
      if (blocks < 0) blocks = shape.back();
      if (shape.back() != blocks) throw Error("'" + in.run.path + "': " + path + " has another number of blocks");
      const auto v = in.reader->read_doubles(path);
      rows.insert(rows.end(), v.begin(), v.end());
    }
    f.put(path, rows, {chains, blocks});
    by_chain.emplace_back(path, 0U);
    by_block.emplace_back(path, 1U);
  }
  std::vector<double> ids(static_cast<std::size_t>(chains));
  std::iota(ids.begin(), ids.end(), 0.0);
  f.put("/diagnostics/chain", ids, {chains});
  f.attach_scale("/diagnostics/chain", "chain", by_chain);
  if (blocks > 0) {
    if (r0.exists("/diagnostics/block_first_step")) {
      f.put("/diagnostics/block_first_step", r0.read_doubles("/diagnostics/block_first_step"), {blocks});
      by_block.emplace_back("/diagnostics/block_first_step", 0U);
    }
    std::vector<double> block_ids(static_cast<std::size_t>(blocks));
    std::iota(block_ids.begin(), block_ids.end(), 0.0);
    f.put("/diagnostics/block", block_ids, {blocks});
    f.attach_scale("/diagnostics/block", "block", by_block);
  }
  // The loss rise against equipartition: means over all trajectories again.
  if (all_have(inputs, "/diagnostics/mean_member_loss") && all_have(inputs, "/diagnostics/start_loss")) {
    const auto member = concatenated<double>(inputs, "/diagnostics/mean_member_loss");
    const auto start = concatenated<double>(inputs, "/diagnostics/start_loss");
    std::vector<double> rise(member.size());
    for (std::size_t i = 0; i < rise.size(); ++i) rise[i] = member[i] - start[i];
    f.attribute(run::layout::kMetrics, "observed_loss_rise", mean_sd(rise).first);
  }
  for (const char* name : {"harmonic_loss_rise", "bayes_temperature", "temperature_over_bayes"}) {
    if (r0.has_attribute(run::layout::kMetrics, name))
      f.attribute(run::layout::kMetrics, name, r0.attribute_real(run::layout::kMetrics, name));
  }
  // The stiff modes' rise is T/2 x the mean eigenvalue count over trajectories: the inputs'
  // values weighted by their trajectories.
  const std::string stiff = "harmonic_loss_rise_stiff_modes";
  if (std::all_of(inputs.begin(), inputs.end(),
                  [&](const Input& in) { return in.reader->has_attribute(run::layout::kMetrics, stiff); })) {
    double sum = 0.0;
    for (const auto& in : inputs) {
      sum += static_cast<double>(in.run.chains) * in.reader->attribute_real(run::layout::kMetrics, stiff);
    }
    f.attribute(run::layout::kMetrics, stiff, sum / static_cast<double>(chains));
  }
}

void write_archive(const std::vector<Input>& inputs, const std::string& path, const MergeOptions& o) {
  const Input& first = inputs.front();
  const io::ArchiveReader& r0 = *first.reader;
  const RunArchive& run0 = first.run;
  std::int64_t C = 0;
  for (const auto& in : inputs) C += in.run.chains;
  const std::int64_t D = run0.draws, P = run0.parameters;
  const std::int64_t R = r0.exists("/trace/step") ? r0.dims("/trace/step").back() : 0;

  io::ParallelFile f = io::ParallelFile::create(path, MPI_COMM_SELF);
  // Root: the first archive's attributes, then what the merge changes.
  copy_attributes(r0, f, "/");
  char stamp[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  f.attribute("/", "created_at", std::string(stamp));
  f.attribute("/", "command_line", o.command_line);
  f.attribute("/", "trajectories", C);
  std::string merged_from, seeds;
  double lambda_max = -1.0, limit = std::numeric_limits<double>::infinity(), wall = 0.0;
  for (const auto& in : inputs) {
    if (!merged_from.empty()) merged_from += ", ";
    merged_from += in.run.path + " (run.seed " + std::to_string(in.run.config.run.seed) + ", " +
                   std::to_string(in.run.chains) + " trajectories)";
    if (!seeds.empty()) seeds += ',';
    seeds += std::to_string(in.run.config.run.seed);
    const io::ArchiveReader& r = *in.reader;
    if (r.has_attribute("/", "lambda_max")) lambda_max = std::max(lambda_max, r.attribute_real("/", "lambda_max"));
    if (r.has_attribute("/", "time_step_limit")) limit = std::min(limit, r.attribute_real("/", "time_step_limit"));
    if (r.has_attribute("/", "wall_seconds")) wall += r.attribute_real("/", "wall_seconds");
  }
  f.attribute("/", "merged_from", merged_from);
  if (lambda_max >= 0.0) {
    f.attribute("/", "lambda_max", lambda_max);
    f.attribute("/", "time_step_limit", limit);
  }
  f.attribute("/", "wall_seconds", wall);

  cli::Config config = run0.config;
  config.run.trajectories = C;
  config.run.output = o.output;
  f.put_strings("/config", {cli::to_ini(config)});
  f.attribute("/config", "run_seeds", seeds);
  f.attribute("/config", "merged_from", merged_from);

  copy_tree(r0, f, "/data");
  copy_tree(r0, f, "/model");

  // Per-chain datasets, shaped and chunked as the run makes them (run/archive_layout.hpp); those
  // some input lacks (trace fields of archives before the drift diagnostics) are left out.
  const io::Type store = run0.store_type;
  std::vector<run::layout::ChainDataset> chain_sets;
  for (const auto& d : run::layout::chain_datasets({C, D, P, R, store == io::Type::f32})) {
    if (all_have(inputs, d.path)) chain_sets.push_back(d);
  }
  for (const auto& d : chain_sets) {
    f.create_group(d.group);
    copy_attributes(r0, f, d.group);
    f.create_dataset(d.path, d.dtype, d.dims, d.chunk, d.nan_fill);
    copy_attributes(r0, f, d.path);
  }
  const std::vector<std::string>& stats = run::layout::sample_stat_fields();
  mpi::write_posterior_scales(f, C, D, P, stats);

  for (const auto& d : chain_sets) {
    if (d.group != "/trace" || R > 0) copy_chain_rows(inputs, f, d.path, d.dtype);
  }
  // The baseline networks' outputs on each evaluation set: /baseline/<set>/prediction [chain, row, output].
  for (const auto& name : r0.members("/baseline")) {
    const std::string prediction = "/baseline/" + name + "/prediction";
    if (!r0.is_group("/baseline/" + name) || !r0.exists(prediction)) continue;
    const auto shape = r0.dims(prediction);
    if (shape.size() != 3) continue;
    f.create_group("/baseline/" + name);
    f.create_dataset(prediction, io::Type::f64, {C, shape[1], shape[2]},
                     {1, std::max<std::int64_t>(shape[1], 1), shape[2]}, true);
    copy_attributes(r0, f, prediction);
    copy_chain_rows(inputs, f, prediction, io::Type::f64);
  }

  // /ensemble: votes add; regression means and variances combine by Chan's formula.
  f.create_group("/ensemble");
  std::vector<Votes> merged_votes;
  std::vector<ensemble::VoteAccumulator> vote_sets;
  std::vector<ensemble::MeanAccumulator> mean_sets;
  for (const auto& set : run0.sets) {
    const std::string g = "/ensemble/" + set;
    f.create_group(g);
    const std::int64_t rows = r0.exists("/data/" + set + "/x")
                                  ? r0.dims("/data/" + set + "/x").front()
                                  : r0.dims(g + (run0.classification ? "/votes" : "/mean")).front();
    if (run0.classification) {
      ensemble::VoteAccumulator acc(rows, run0.classes);
      for (const auto& in : inputs) {
        const auto v = in.reader->read_ints(g + "/votes");
        if (static_cast<Index>(v.size()) != rows * run0.classes)
          throw Error("'" + in.run.path + "': " + g + "/votes has an unexpected shape");
        acc.add_votes(Eigen::Map<const Votes>(v.data(), rows, run0.classes), set_members(*in.reader, g));
      }
      const Votes& votes = acc.votes();
      f.put(g + "/votes", std::vector<std::int64_t>(votes.data(), votes.data() + votes.size()), {rows, run0.classes});
      f.put(g + "/prediction", acc.majority(), {rows});
      const Matrix fraction = acc.fractions();
      f.put(g + "/fraction", std::vector<double>(fraction.data(), fraction.data() + fraction.size()),
            {rows, run0.classes});
      f.attribute(g, "members", acc.members());
      vote_sets.push_back(std::move(acc));
    } else {
      ensemble::MeanAccumulator acc(rows, run0.outputs);
      for (const auto& in : inputs) {
        const std::int64_t n = set_members(*in.reader, g);
        const Matrix mean = as_matrix(in.reader->read_doubles(g + "/mean"), rows, run0.outputs);
        const Matrix variance = as_matrix(in.reader->read_doubles(g + "/variance"), rows, run0.outputs);
        acc.merge(n, mean, variance * static_cast<double>(std::max<std::int64_t>(n - 1, 0)));
      }
      const Matrix mean = acc.mean(), variance = acc.variance();
      f.put(g + "/mean", std::vector<double>(mean.data(), mean.data() + mean.size()), {rows, run0.outputs});
      f.put(g + "/variance", std::vector<double>(variance.data(), variance.data() + variance.size()),
            {rows, run0.outputs});
      f.attribute(g, "members", acc.members());
      mean_sets.push_back(std::move(acc));
    }
  }
  if (r0.exists("/ensemble/test/tracked")) {
    const auto shape = r0.dims("/ensemble/test/tracked");
    f.create_dataset("/ensemble/test/tracked", io::Type::f64, {C, shape[1], shape[2]},
                     {1, std::max<std::int64_t>(shape[1], 1), shape[2]}, true);
    copy_chain_rows(inputs, f, "/ensemble/test/tracked", io::Type::f64);
    if (r0.exists("/ensemble/test/tracked_rows")) {
      f.put("/ensemble/test/tracked_rows", r0.read_ints("/ensemble/test/tracked_rows"),
            r0.dims("/ensemble/test/tracked_rows"));
    }
  }

  // /baseline per-chain metrics, /sample_stats/diverged_at_step and /metrics.
  const std::string metric = run0.classification ? "accuracy" : "mse";
  std::vector<std::string> baseline_columns;
  for (const std::string split : {"train", "test", "validation"}) {
    if (!r0.exists("/baseline/" + split + "_" + metric)) continue;
    baseline_columns.push_back(split + "_" + metric);
    if (!run0.classification) baseline_columns.push_back(split + "_r2");
    for (const char* score : {"nll", "brier", "ece"}) {
      if (r0.exists("/baseline/" + split + "_" + score)) baseline_columns.push_back(split + "_" + score);
    }
  }
  f.create_group(run::layout::kMetrics);
  for (const auto& column : baseline_columns) {
    const std::string p = "/baseline/" + column;
    if (!r0.exists(p)) continue;
    const auto values = concatenated<double>(inputs, p);
    f.put(p, values, {C});
    const auto [m, sd] = mean_sd(values);
    f.attribute(run::layout::kMetrics, "baseline_" + column + "_mean", m);
    f.attribute(run::layout::kMetrics, "baseline_" + column + "_sd", sd);
  }
  for (std::size_t s = 0; s < run0.sets.size(); ++s) {
    const std::string& set = run0.sets[s];
    if (!is_scored(set)) continue;
    const std::string y = "/data/" + set + "/y";
    if (!r0.exists(y)) continue;
    if (run0.classification) {
      const auto& acc = vote_sets[s];
      const double accuracy = acc.members() > 0 ? ensemble::accuracy(acc.majority(), r0.read_ints(y)) : std::nan("");
      f.attribute(run::layout::kMetrics, "ensemble_" + set + "_accuracy", accuracy);
    } else {
      const auto& acc = mean_sets[s];
      const Matrix truth = as_matrix(r0.read_doubles(y), acc.mean().rows(), acc.mean().cols());
      const bool any = acc.members() > 0;
      f.attribute(run::layout::kMetrics, "ensemble_" + set + "_mse",
                  any ? ensemble::mean_squared_error(view(acc.mean()), view(truth)) : std::nan(""));
      f.attribute(run::layout::kMetrics, "ensemble_" + set + "_r2",
                  any ? ensemble::r_squared(view(acc.mean()), view(truth)) : std::nan(""));
    }
  }
  merge_uncertainty(inputs, f, run0, vote_sets, mean_sets);
  merge_diagnostics(inputs, f, C);
  merge_deep_ensemble(inputs, f, run0);
  std::int64_t members = 0;
  for (const auto& in : inputs) members += in.reader->attribute_integer(run::layout::kMetrics, "members");
  f.attribute(run::layout::kMetrics, "members", members);
  std::vector<std::int64_t> diverged;
  for (const auto& in : inputs) {
    if (in.reader->exists("/sample_stats/diverged_at_step")) {
      const auto d = in.reader->read_ints("/sample_stats/diverged_at_step");
      diverged.insert(diverged.end(), d.begin(), d.end());
    } else {
      diverged.insert(diverged.end(), static_cast<std::size_t>(in.run.chains), -1);
    }
  }
  f.put("/sample_stats/diverged_at_step", diverged, {C});
  const bool any_diverged = std::any_of(diverged.begin(), diverged.end(), [](std::int64_t d) { return d >= 0; });
  f.attribute("/", "status", run::layout::final_status(any_diverged));
  f.mirror_attributes(run::layout::kMetrics);  // the scores under a checksum (attributes have none)
  f.attribute("/", "io_transfers", f.transfers());
  f.attribute("/", "io_collective_transfers", f.collective_transfers());
  f.close();
}

}  // namespace

void merge(const MergeOptions& o, std::ostream& out) {
  if (o.output.empty()) throw Error("merge: the output is missing: -o OUT.h5");
  if (o.archives.size() < 2)
    throw Error("merge: needs at least two archives (got " + std::to_string(o.archives.size()) + ")");
  std::error_code ec;
  for (const auto& a : o.archives) {
    if (fs::exists(o.output, ec) && fs::exists(a, ec) && fs::equivalent(o.output, a, ec)) {
      throw Error("merge: the output '" + o.output + "' is one of the inputs");
    }
  }
  if (fs::exists(o.output, ec) && !o.overwrite) {
    throw Error("merge: the output '" + o.output + "' exists; pass --overwrite to replace it");
  }
  const fs::path dir = fs::path(o.output).has_parent_path() ? fs::path(o.output).parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) throw Error("merge: the output's directory '" + dir.string() + "' does not exist");

  std::vector<Input> inputs(o.archives.size());
  for (std::size_t i = 0; i < o.archives.size(); ++i) {
    inputs[i].reader.emplace(o.archives[i]);
    inputs[i].run = load_run(*inputs[i].reader);
    const std::string status = status_of(*inputs[i].reader);
    if (!run::layout::is_complete(status)) {
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
    // The same run twice (or a copy of it) would count its trajectories twice.
    const auto run_id = [](const Input& in) {
      return in.reader->has_attribute("/", "run_id") ? in.reader->attribute_text("/", "run_id") : std::string();
    };
    for (std::size_t j = 0; j < i; ++j) {
      if (!run_id(inputs[i]).empty() && run_id(inputs[i]) == run_id(inputs[j])) {
        throw Error("merge: '" + o.archives[j] + "' and '" + o.archives[i] + "' are the same run (run id " +
                    run_id(inputs[i]) + "): its trajectories would be counted twice");
      }
    }
  }

  // Written next to the output and renamed at the end: no half-written archive under its name.
  const std::string partial = o.output + ".partial";
  try {
    write_archive(inputs, partial, o);
    fs::rename(partial, o.output);
  } catch (const std::exception& e) {
    fs::remove(partial, ec);
    throw Error("merge: writing '" + o.output + "' failed: " + e.what());
  }
  std::int64_t chains = 0;
  for (const auto& in : inputs) chains += in.run.chains;
  out << "merged " << inputs.size() << " archives (" << chains << " trajectories, chains renumbered 0.." << chains - 1
      << " in input order) into " << o.output << "\n";
}

}  // namespace simmer::analyze
