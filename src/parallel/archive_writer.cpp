#include "simmer/parallel/archive_writer.hpp"

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <numeric>

#include "simmer/core/digest.hpp"
#include "simmer/io/output_lock.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/run/archive_layout.hpp"

#ifndef SIMMER_VERSION
#define SIMMER_VERSION "unknown"
#endif

namespace simmer::parallel {

namespace layout = run::layout;

ArchiveShape ArchiveShape::of(const run::Problem& p) {
  ArchiveShape s;
  s.chains = p.run.trajectories;
  // Every stage's members and stored draws, stage after stage (draw d of a chain belongs to stage
  // d / draws_per_stage).
  s.members = p.chain_stages() * p.members_per_stage();
  s.draws = p.chain_stages() * p.draws_per_stage();
  s.trace_records = layout::trace_records(p.adam.epochs, p.total_steps(), p.run.trace_every);
  s.parameters = p.parameters;
  s.float32 = p.store.float32;
  return s;
}

layout::ArchiveCounts ArchiveShape::counts() const { return {chains, draws, parameters, trace_records, float32}; }

ArchiveWriter::ArchiveWriter(io::ParallelFile file, const run::Problem& p, MPI_Comm comm)
    : file_(std::move(file)), p_(&p), comm_(comm), shape_(ArchiveShape::of(p)) {
  MPI_Comm_rank(comm, &rank_);
}

ArchiveWriter ArchiveWriter::reopen(const run::Problem& p, MPI_Comm comm) {
  ArchiveWriter w(io::ParallelFile::open_write(p.run.output, comm), p, comm);
  w.file_.attribute(layout::kRoot, layout::kStatus, std::string(layout::kStatusRunning));
  w.file_.flush();
  return w;
}

ArchiveWriter ArchiveWriter::create(const run::Problem& p, const std::string& command_line, const std::string& run_id,
                                    MPI_Comm comm) {
  ArchiveWriter w(io::ParallelFile::create(p.run.output, comm, true), p, comm);
  // This run made the file (exclusively), so a failure before it is a whole archive removes it
  // (an HDF5 error, a full disk): the path is checked to be still that file. Unlinking needs no
  // collective call, so the failing rank does it alone and the error goes on to MPI_Abort.
  io::OutputWatch made(p.run.output);
  try {
    w.write_schema(command_line, run_id);
  } catch (...) {
    if (made.changed().empty()) ::unlink(p.run.output.c_str());
    throw;
  }
  return w;
}

void ArchiveWriter::write_schema(const std::string& command_line, const std::string& run_id) {
  const run::Problem& p = *p_;
  const MPI_Comm comm = comm_;
  auto& f = file_;
  const ArchiveShape& shape = shape_;
  const std::int64_t C = shape.chains, D = shape.draws, P = shape.parameters;
  int size = 1;
  MPI_Comm_size(comm, &size);
  // Root provenance. created_at is the same on all ranks (rank 0's clock, broadcast).
  long long now = static_cast<long long>(std::time(nullptr));
  MPI_Bcast(&now, 1, MPI_LONG_LONG, 0, comm);
  char stamp[64];
  const std::time_t tt = static_cast<std::time_t>(now);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&tt));
  f.attribute(layout::kRoot, layout::kSimmerVersion, std::string(SIMMER_VERSION));
  f.attribute(layout::kRoot, layout::kFormatVersion, layout::kArchiveFormat);
  f.attribute(layout::kRoot, layout::kCreatedAt, std::string(stamp));
  f.attribute(layout::kRoot, layout::kCommandLine, command_line);
  f.attribute(layout::kRoot, layout::kMpiRanks, static_cast<std::int64_t>(size));
  f.attribute(layout::kRoot, layout::kTrajectories, C);
  f.attribute(layout::kRoot, layout::kMode, train::to_string(p.mode));
  f.attribute(layout::kRoot, layout::kTask,
              to_string(p.classification ? data::Task::classification : data::Task::regression));
  f.attribute(layout::kRoot, layout::kPrecision, to_string(p.run.precision));  // the compute scalar (run.precision)
  f.attribute(layout::kRoot, layout::kRunId, run_id);
  f.attribute(layout::kRoot, layout::kStatus, std::string(layout::kStatusRunning));  // until the run ends
  f.put_strings(layout::kConfig, {p.config_ini});
  f.attribute(layout::kConfig, layout::kRunId, run_id);
  f.attribute(layout::kConfig, layout::kInputFiles, p.input_fingerprints);
  // The thermostat as it was resolved (Martyna masses follow from N_f, T and tau).
  std::string masses;
  for (int k = 0; k < p.nhc.chain_length; ++k) {
    char q[32];
    std::snprintf(q, sizeof q, "%.17g", p.nhc.masses.empty() ? 1.0 : p.nhc.masses[static_cast<std::size_t>(k)]);
    if (k > 0) masses += ',';
    masses += q;
  }
  f.attribute(layout::kRoot, layout::kThermostat, train::to_string(p.nhc.thermostat));
  f.attribute(layout::kRoot, layout::kThermostatMasses, masses);

  // /data: raw sets and scaling.
  f.create_group(layout::kData);
  for (const auto& s : p.sets) {
    const std::string g = layout::data_group(s.name);
    f.create_group(g);
    f.put(layout::data_x(s.name), std::vector<double>(s.x_raw.data(), s.x_raw.data() + s.x_raw.size()),
          {s.x_raw.rows(), s.x_raw.cols()});
    if (s.has_targets()) {
      if (p.classification)
        f.put(layout::data_y(s.name), s.labels, {static_cast<std::int64_t>(s.labels.size())});
      else
        f.put(layout::data_y(s.name), std::vector<double>(s.y.data(), s.y.data() + s.y.size()),
              {s.y.rows(), s.y.cols()});
    }
  }
  f.create_group(layout::kScaling);
  const auto put_row = [&](const std::string& path, const Eigen::RowVectorXd& v) {
    f.put(path, std::vector<double>(v.data(), v.data() + v.size()), {v.size()});
  };
  put_row(layout::kXMin, p.x_scaler.min());
  put_row(layout::kXMax, p.x_scaler.max());
  if (!p.classification) {
    put_row(layout::kYMin, p.y_scaler.min());
    put_row(layout::kYMax, p.y_scaler.max());
  }
  f.put_strings(layout::kFeatureNames, p.train.feature_names);
  f.put_strings(layout::kTargetNames, p.train.target_names);
  if (p.classification) f.put_strings(layout::kClassNames, p.train.class_names);
  f.attribute(layout::kData, layout::kRowsRead, p.rows_read);
  f.attribute(layout::kData, layout::kRowsDropped, p.rows_dropped);
  if (!p.rows_dropped_reasons.empty()) f.attribute(layout::kData, layout::kRowsDroppedReasons, p.rows_dropped_reasons);

  // /model: architecture and the flat parameter layout.
  const std::vector<model::TensorLayout> tensor_layout = model::network_layout(p.architecture);
  f.create_group(layout::kModel);
  f.attribute(layout::kModel, layout::kArchitecture, p.model_text.architecture);
  f.attribute(layout::kModel, layout::kActivation, p.model_text.activation);
  f.attribute(layout::kModel, layout::kOutput, p.model_text.output);
  f.attribute(layout::kModel, layout::kModelLoss, p.model_text.loss);
  f.attribute(layout::kModel, layout::kInit, p.model_text.init);
  f.attribute(layout::kModel, layout::kParameters, static_cast<std::int64_t>(P));
  f.attribute(layout::kModel, layout::kFlattening,
              std::string("layer by layer; dense: kernel [fan_in][fan_out] row-major, then bias; "
                          "y = act(x W + b); conv2d: kernel [kh][kw][in_channels][filters] "
                          "row-major, then bias; image rows are height x width x channels (HWC)"));
  if (!p.architecture.input_shape.empty()) {
    f.attribute(layout::kModel, layout::kPooling, p.model_text.pooling);
    std::string image;
    for (const Index d : p.architecture.input_shape) {
      if (!image.empty()) image += 'x';
      image += std::to_string(d);
    }
    f.attribute(layout::kModel, layout::kInputShape, image + " (height x width x channels)");
  }
  std::vector<std::string> names;
  std::vector<std::int64_t> offsets, shapes;
  for (const auto& t : tensor_layout) {
    names.push_back(t.name);
    offsets.push_back(t.offset);
  }
  const std::size_t max_rank = 4;
  for (const auto& t : tensor_layout) {
    for (std::size_t d = 0; d < max_rank; ++d) shapes.push_back(d < t.shape.size() ? t.shape[d] : 1);
  }
  const auto tensors = static_cast<std::int64_t>(tensor_layout.size());
  f.put_strings(layout::kTensorName, names);
  f.put(layout::kTensorOffset, offsets, {tensors});
  f.put(layout::kTensorShape, shapes, {tensors, static_cast<std::int64_t>(max_rank)});
  std::vector<std::int64_t> ranks;
  for (const auto& t : tensor_layout) ranks.push_back(static_cast<std::int64_t>(t.shape.size()));
  f.put(layout::kTensorRank, ranks, {tensors});

  // Per-chain datasets (run/archive_layout.hpp): chunks never span two chains, so no chunk is
  // shared by two ranks.
  for (const auto& d : layout::chain_datasets(shape.counts())) {
    f.create_group(d.group);
    f.create_dataset(d.path, d.dtype, d.dims, d.chunk, d.nan_fill);
  }
  f.attribute(layout::kPosteriorParams, layout::kStoreEvery, p.store.every);
  f.attribute(layout::kPosteriorParams, layout::kDrawsPerStage, p.draws_per_stage());
  f.attribute(layout::kTrace, layout::kPhaseMeaning, std::string("0 = Adam epoch, 1 = simmering step"));
  f.attribute(layout::kTrace, layout::kTrainLossMeaning,
              std::string("Adam: loss of the epoch's update; simmering: loss at the half-step position"));
  f.attribute(layout::kTrace, layout::kPositionMeaning,
              std::string("distance = |x - x0| and path_length = integral of |v| dt from the simmering start x0 "
                          "(NaN during Adam); param_rms = |x|/sqrt(N); param_max_abs = max |x_i|"));
  // Dimension scales so xarray sees named dimensions.
  write_posterior_scales(f, C, D, P, layout::sample_stat_fields());

  // /ensemble: the run's ensemble, rewritten by rank 0 at every gather (a ladder's rungs each in
  // /ladder/rung_<k>, and /ensemble written at the end with the candidate chosen).
  create_ensemble_group(f, p, layout::kEnsemble);
  if (!p.ladder.rungs.empty()) {
    f.create_group(layout::kLadder);
    for (std::int64_t k = 0; k < p.stages(); ++k) create_ensemble_group(f, p, layout::ladder_group(p.stage_name(k)));
    temperatures(p);
    f.attribute(layout::kLadder, layout::kStepsPerRung, p.run.steps);
    f.attribute(layout::kLadder, layout::kLadderMode, std::string(run::kLadderModeNames.name(p.ladder.mode)));
    f.attribute(
        layout::kLadder, layout::kMeaning,
        std::string(p.parallel_rungs()
                        ? "trajectory i simmers rung i mod K for simmer.steps steps (the rungs side by side; with "
                          "simmer.exchange_every > 0 neighbouring rungs swap configurations, so a trajectory "
                          "index is a temperature slot); rung k's members are the draws of its trajectories"
                        : "each trajectory simmers simmer.steps steps at each rung in turn, coldest first, "
                          "starting where the last rung ended; rung k's members are drawn from the last "
                          "ensemble.window steps of its stage and are /posterior/params draws [k "
                          "draws_per_stage, (k + 1) draws_per_stage)"));
  }
  if (!p.store.track.empty() && !p.classification) {
    const auto k = static_cast<std::int64_t>(p.store.track.size()) * p.outputs;
    f.create_dataset(layout::kTracked, io::Type::f64, {C, shape.members, k},
                     {1, std::max<std::int64_t>(shape.members, 1), k}, true);
    f.put(layout::kTrackedRows, p.store.track, {static_cast<std::int64_t>(p.store.track.size())});
  }
  f.create_group(layout::kMetrics);
  f.flush();
}

void ArchiveWriter::temperatures(const run::Problem& p) {
  if (p.ladder.rungs.empty()) return;
  std::string temperatures;
  for (std::int64_t k = 0; k < p.stages(); ++k) {
    char t[32];
    std::snprintf(t, sizeof t, "%.17g", p.stage_temperature(k));
    if (k > 0) temperatures += ',';
    temperatures += t;
    const std::string rung = layout::ladder_group(p.stage_name(k));
    file_.attribute(rung, layout::kTemperature, p.stage_temperature(k));
    file_.attribute(rung, layout::kTemperatureOverBayes, p.stage_temperature(k) / p.bayes_temperature);
  }
  file_.attribute(layout::kLadder, layout::kTemperatures, temperatures);
}

void ArchiveWriter::start_state(const std::vector<run::Chain*>& chains) {
  const run::Problem& p = *p_;
  std::vector<io::RowBlock> blocks;
  std::vector<double> x, v, base;
  for (const run::Chain* ch : chains) {
    blocks.push_back({ch->index(), 0, static_cast<std::int64_t>(shape_.parameters)});  // a [chain, param] row
    // Float64 copies (exact for a float32 run's values).
    const Vector params = ch->parameters_f64(), velocity = ch->velocities_f64();
    x.insert(x.end(), params.begin(), params.end());
    v.insert(v.end(), velocity.begin(), velocity.end());
    if (p.mode == train::StartMode::retrofit) {
      const Vector baseline = ch->baseline_f64();
      base.insert(base.end(), baseline.begin(), baseline.end());
    }
  }
  write_digested_rows(layout::kInitialParams, blocks, x);
  write_digested_rows(layout::kInitialVelocity, blocks, v);
  if (p.mode == train::StartMode::retrofit) write_digested_rows(layout::kBaselineParams, blocks, base);
}

void ArchiveWriter::write_digested_rows(const std::string& path, const std::vector<io::RowBlock>& blocks,
                                        const std::vector<double>& values) {
  file_.write_rows(path, blocks, values);
  // Each block is one trajectory's whole slab (its rows from 0; the reader digests the slab); the
  // values of a row follow from the total. Each trajectory's block comes from one rank (a group's
  // leader): the others' entries are 0, which OR-ing leaves out.
  std::int64_t rows = 0;
  for (const auto& b : blocks) {
    if (b.first != 0) throw Error("internal: rows digested by trajectory must start at row 0 of '" + path + "'");
    rows += b.count;
  }
  const std::size_t per_row = rows > 0 ? values.size() / static_cast<std::size_t>(rows) : 0;
  std::vector<std::uint64_t> digests(static_cast<std::size_t>(shape_.chains), 0);
  const double* at = values.data();
  for (const auto& b : blocks) {
    const std::size_t n = static_cast<std::size_t>(b.count) * per_row;
    Fnv1a h;
    h.add(at, n * sizeof(double));
    digests[static_cast<std::size_t>(b.chain)] = h.value;
    at += n;
  }
  MPI_Allreduce(MPI_IN_PLACE, digests.data(), static_cast<int>(digests.size()), MPI_UINT64_T, MPI_BOR, comm_);
  const std::string digest = layout::row_digest(path);
  file_.create_group(digest.substr(0, digest.rfind('/')));  // (and its parents)
  file_.put(digest, std::vector<std::int64_t>(digests.begin(), digests.end()), {shape_.chains});
  file_.attribute(digest, layout::kRowDigestOf, path);
}

namespace {

/// A dataset written whole later: created unless it exists (a resumed run's, or one written at
/// every gather), so rewriting it leaves no dead space in the file.
void ensure_dataset(io::ParallelFile& f, const std::string& path, io::Type type,
                    const std::vector<std::int64_t>& dims) {
  if (!f.exists(path)) f.create_dataset(path, type, dims);
}

}  // namespace

void ArchiveWriter::create_ensemble_group(io::ParallelFile& f, const run::Problem& p, const std::string& group) {
  f.create_group(group);
  for (const auto& s : p.sets) {
    const std::string g = layout::join(group, s.name);
    f.create_group(g);
    if (p.classification) {
      ensure_dataset(f, layout::join(g, layout::kVotes), io::Type::i64, {s.rows(), p.classes});
      ensure_dataset(f, layout::join(g, layout::kPrediction), io::Type::i64, {s.rows()});
      ensure_dataset(f, layout::join(g, layout::kFraction), io::Type::f64, {s.rows(), p.classes});
    } else {
      ensure_dataset(f, layout::join(g, layout::kMean), io::Type::f64, {s.rows(), p.outputs});
      ensure_dataset(f, layout::join(g, layout::kVariance), io::Type::f64, {s.rows(), p.outputs});
    }
  }
}

void ArchiveWriter::rows(const std::vector<std::pair<std::int64_t, run::ChainRows>>& rows,
                         const std::vector<ensemble::PooledEnsemble>& pooled) {
  const run::Problem& p = *p_;
  std::vector<io::RowBlock> draw_blocks, trace_blocks;
  std::vector<double> params;
  std::vector<float> params32;
  const auto& stat_fields = layout::sample_stat_fields();
  const auto& trace_fields = layout::trace_fields();
  std::vector<std::vector<double>> stats(stat_fields.size()), trace(trace_fields.size());
  for (const auto& [index, r] : rows) {
    draw_blocks.push_back({index, r.draw_first, r.draw_count});
    params.insert(params.end(), r.params.begin(), r.params.end());
    params32.insert(params32.end(), r.params32.begin(), r.params32.end());
    for (std::size_t i = 0; i < r.stats.size(); ++i) stats[i % stats.size()].push_back(r.stats[i]);
    trace_blocks.push_back({index, r.trace_first, r.trace_count});
    for (std::size_t i = 0; i < r.trace.size(); ++i) trace[i % trace.size()].push_back(r.trace[i]);
  }
  if (p.store.float32) {
    file_.write_rows(layout::kPosteriorParams, draw_blocks, params32);
  } else {
    file_.write_rows(layout::kPosteriorParams, draw_blocks, params);
  }
  for (std::size_t i = 0; i < stat_fields.size(); ++i) {
    file_.write_rows(layout::sample_stat(stat_fields[i]), draw_blocks, stats[i]);
  }
  for (std::size_t i = 0; i < trace_fields.size(); ++i) {
    file_.write_rows(layout::trace_field(trace_fields[i]), trace_blocks, trace[i]);
  }
  if (!p.store.track.empty() && !p.classification) {
    // Every stage's tracked members of this gather, in one transfer (blocks sorted by chain).
    struct Tracked {
      io::RowBlock block;
      const double* rows;
    };
    std::vector<Tracked> tracked;
    const auto width = static_cast<std::int64_t>(p.store.track.size()) * p.outputs;
    if (rank_ == 0) {
      for (const auto& stage : pooled) {
        const double* next = stage.tracked_rows().data();
        for (const auto& b : stage.tracked_blocks()) {
          tracked.push_back({{b.trajectory, b.first, b.count}, next});
          next += b.count * width;
        }
      }
      std::stable_sort(tracked.begin(), tracked.end(),
                       [](const Tracked& a, const Tracked& b) { return a.block.chain < b.block.chain; });
    }
    std::vector<io::RowBlock> blocks;
    std::vector<double> values;
    for (const auto& t : tracked) {
      blocks.push_back(t.block);
      values.insert(values.end(), t.rows, t.rows + t.block.count * width);
    }
    file_.write_rows(layout::kTracked, blocks, values);
  }
}

void ArchiveWriter::ensemble(const ensemble::PooledEnsemble& pooled, const std::string& group) {
  const run::Problem& p = *p_;
  for (std::size_t s = 0; s < p.sets.size(); ++s) {
    const std::string g = layout::join(group, p.sets[s].name);
    if (p.classification) {
      ensemble::VoteAccumulator::Votes votes;
      std::vector<std::int64_t> majority;
      Matrix fraction;
      if (rank_ == 0) {
        votes = pooled.votes(s).votes();
        majority = pooled.votes(s).majority();
        fraction = pooled.votes(s).fractions();
      }
      file_.write_from_root(layout::join(g, layout::kVotes), votes);
      file_.write_from_root(layout::join(g, layout::kPrediction), majority);
      file_.write_from_root(layout::join(g, layout::kFraction), fraction);
    } else {
      Matrix mean, var;
      if (rank_ == 0) {
        mean = pooled.means(s).mean();
        var = pooled.means(s).variance();
      }
      file_.write_from_root(layout::join(g, layout::kMean), mean);
      file_.write_from_root(layout::join(g, layout::kVariance), var);
    }
    std::int64_t m = rank_ == 0 ? pooled.members(s) : 0;
    MPI_Bcast(&m, 1, MPI_INT64_T, 0, comm_);
    file_.attribute(g, layout::kMembers, m);
  }
}

void ArchiveWriter::baselines(const std::vector<run::Chain*>& chains) {
  const run::Problem& p = *p_;
  const std::int64_t C = shape_.chains;
  if (p.mode == train::StartMode::abinitio) {
    std::vector<io::RowBlock> blocks;
    std::vector<double> rows;
    for (const run::Chain* ch : chains) {
      if (!ch->has_baseline()) continue;
      blocks.push_back({ch->index(), 0, static_cast<std::int64_t>(shape_.parameters)});
      const Vector baseline = ch->baseline_f64();
      rows.insert(rows.end(), baseline.begin(), baseline.end());
    }
    write_digested_rows(layout::kBaselineParams, blocks, rows);
  }
  // The baseline network's outputs on every evaluation set (raw target units for regression,
  // logits for classification): Adam's fit on the extra points, for figures, with no network
  // re-evaluated afterwards. Rows of a trajectory without a baseline stay NaN.
  for (std::size_t set = 0; set < p.sets.size(); ++set) {
    const auto& s = p.sets[set];
    // (This may run again on a resumed archive: create_group keeps an existing group and
    // create_dataset replaces the dataset.)
    const std::string g = layout::baseline_set_group(s.name);
    file_.create_group(g);
    file_.create_dataset(layout::baseline_prediction(s.name), io::Type::f64, {C, s.rows(), p.outputs},
                         {1, std::max<std::int64_t>(s.rows(), 1), p.outputs}, true);
    std::vector<io::RowBlock> blocks;
    std::vector<double> rows;
    for (run::Chain* ch : chains) {
      if (!ch->has_baseline()) continue;
      const ConstBatchView pred = ch->baseline_prediction(set);
      rows.insert(rows.end(), pred.data(), pred.data() + pred.size());
      blocks.push_back({ch->index(), 0, s.rows()});
    }
    write_digested_rows(layout::baseline_prediction(s.name), blocks, rows);
    file_.attribute(layout::baseline_prediction(s.name), layout::kUnits,
                    std::string(!p.classification ? "target units [chain, row, output]"
                                : p.outputs == 1  ? "logit of class 1 [chain, row, 1]"
                                                  : "logits [chain, row, class]"));
  }
  file_.attribute(layout::kBaseline, layout::kBaselineKind,
                  std::string(p.mode == train::StartMode::retrofit ? "Adam end point of each trajectory"
                                                                   : "first ensemble member of each trajectory"));
}

EnsembleLayout EnsembleLayout::of(const run::Problem& p) {
  EnsembleLayout l;
  for (const auto& s : p.sets) {
    l.sets.push_back(s.name);
    l.rows.push_back(s.rows());
  }
  l.scored = p.scored_sets();
  l.classification = p.classification;
  l.classes = p.classes;
  l.outputs = p.outputs;
  l.chains = p.run.trajectories;
  return l;
}

void write_components(io::ParallelFile& f, const std::string& g, Index rows, const EnsembleLayout& l,
                      const std::vector<ensemble::MeanAccumulator>* parts) {
  const std::int64_t C = l.chains;
  std::vector<std::int64_t> members;
  std::vector<double> mean, variance;
  if (parts != nullptr) {
    if (static_cast<std::int64_t>(parts->size()) != C) throw Error("internal: one mixture component per trajectory");
    const auto cells = static_cast<std::size_t>(rows * l.outputs);
    mean.reserve(static_cast<std::size_t>(C) * cells);
    variance.reserve(mean.capacity());
    for (const auto& p : *parts) {
      members.push_back(p.members());
      const auto n = static_cast<double>(p.members());
      for (Index i = 0; i < rows; ++i) {
        for (Index o = 0; o < l.outputs; ++o) {
          mean.push_back(n > 0 ? p.mean()(i, o) : std::nan(""));
          variance.push_back(n > 0 ? p.m2()(i, o) / n : std::nan(""));
        }
      }
    }
  }
  const std::string members_path = layout::join(g, layout::kTrajectoryMembers);
  const std::string mean_path = layout::join(g, layout::kTrajectoryMean);
  const std::string variance_path = layout::join(g, layout::kTrajectoryVariance);
  ensure_dataset(f, members_path, io::Type::i64, {C});
  ensure_dataset(f, mean_path, io::Type::f64, {C, rows, l.outputs});
  ensure_dataset(f, variance_path, io::Type::f64, {C, rows, l.outputs});
  f.write_from_root(members_path, members);
  f.write_from_root(mean_path, mean);
  f.write_from_root(variance_path, variance);
}

void write_candidate(io::ParallelFile& f, MPI_Comm comm, const EnsembleLayout& l, const std::string& group,
                     const ensemble::Candidate* c) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if ((rank == 0) != (c != nullptr)) throw Error("internal: a candidate is written from rank 0's");
  f.create_group(group);
  for (std::size_t s = 0; s < l.sets.size(); ++s) {
    const std::string g = layout::join(group, l.sets[s]);
    f.create_group(g);
    const Index rows = l.rows[s];
    const bool scored = s < l.scored;
    if (l.classification) {
      ensemble::VoteAccumulator::Votes votes;
      std::vector<std::int64_t> majority;
      Matrix fraction;
      if (c != nullptr) {
        votes = c->votes.at(s).votes();
        majority = c->votes[s].majority();
        fraction = c->votes[s].fractions();
      }
      const std::string votes_path = layout::join(g, layout::kVotes);
      const std::string prediction_path = layout::join(g, layout::kPrediction);
      const std::string fraction_path = layout::join(g, layout::kFraction);
      ensure_dataset(f, votes_path, io::Type::i64, {rows, l.classes});
      ensure_dataset(f, prediction_path, io::Type::i64, {rows});
      ensure_dataset(f, fraction_path, io::Type::f64, {rows, l.classes});
      f.write_from_root(votes_path, votes);
      f.write_from_root(prediction_path, majority);
      f.write_from_root(fraction_path, fraction);
      if (scored) {
        const std::string probability_path = layout::join(g, layout::kProbability);
        ensure_dataset(f, probability_path, io::Type::f64, {rows, l.classes});
        f.write_from_root(probability_path, c != nullptr ? c->probability.at(s) : Matrix());
        const std::string entropy_path = layout::join(g, layout::kMemberEntropy);
        ensure_dataset(f, entropy_path, io::Type::f64, {rows});
        f.write_from_root(entropy_path, c != nullptr ? c->member_entropy.at(s) : Matrix());
      }
    } else {
      Matrix mean, var;
      if (c != nullptr) {
        mean = c->means.at(s).mean();
        var = c->means[s].variance();
      }
      const std::string mean_path = layout::join(g, layout::kMean);
      const std::string variance_path = layout::join(g, layout::kVariance);
      ensure_dataset(f, mean_path, io::Type::f64, {rows, l.outputs});
      ensure_dataset(f, variance_path, io::Type::f64, {rows, l.outputs});
      f.write_from_root(mean_path, mean);
      f.write_from_root(variance_path, var);
      if (scored) {
        const std::string below_path = layout::join(g, layout::kCoverageBelow);
        const std::string equal_path = layout::join(g, layout::kCoverageEqual);
        ensure_dataset(f, below_path, io::Type::i64, {rows, l.outputs});
        ensure_dataset(f, equal_path, io::Type::i64, {rows, l.outputs});
        const std::vector<std::int64_t> none;
        f.write_from_root(below_path, c != nullptr ? c->coverage.at(s).below() : none);
        f.write_from_root(equal_path, c != nullptr ? c->coverage.at(s).equal() : none);
        f.attribute(below_path, layout::kMeaning,
                    std::string("members whose prediction is below the truth (coverage_equal: equal), per value"));
      }
      write_components(f, g, rows, l, c != nullptr ? &c->components.at(s) : nullptr);
    }
    // The networks (the stacked candidates' accumulators count each k_c times: candidate.hpp).
    std::int64_t m = c != nullptr ? c->members : 0;
    MPI_Bcast(&m, 1, MPI_INT64_T, 0, comm);
    f.attribute(g, layout::kMembers, m);
  }
  if (!l.classification) {
    // σ² and its source, once the candidate is complete.
    std::int64_t source = c != nullptr && c->noise.known() ? static_cast<std::int64_t>(c->noise.source) : -1;
    MPI_Bcast(&source, 1, MPI_INT64_T, 0, comm);
    if (source >= 0) {
      const std::string path = layout::join(group, layout::kNoiseVariance);
      ensure_dataset(f, path, io::Type::f64, {l.outputs});
      f.write_from_root(path, c != nullptr ? c->noise.variance : Matrix());
      f.attribute(path, layout::kNoiseSource,
                  std::string(ensemble::kNoiseSourceNames.name(static_cast<ensemble::NoiseSource>(source))));
      f.attribute(path, layout::kMeaning,
                  std::string("the noise variance per output: the mean squared residual of the ensemble's mean on "
                              "the set noise_source names; the predictive law of a value is the mixture of "
                              "N(trajectory_mean, trajectory_variance + noise_variance) weighted by "
                              "trajectory_members (docs/ANALYZE.md)"));
    }
  }
  std::string name = c != nullptr ? c->name : std::string();
  std::int64_t size = static_cast<std::int64_t>(name.size());
  MPI_Bcast(&size, 1, MPI_INT64_T, 0, comm);
  name.resize(static_cast<std::size_t>(size));
  MPI_Bcast(name.data(), static_cast<int>(size), MPI_CHAR, 0, comm);
  f.attribute(group, layout::kCandidate, name);
}

void ArchiveWriter::candidate(const std::string& group, const ensemble::Candidate* c) {
  write_candidate(file_, comm_, EnsembleLayout::of(*p_), group, c);
}

void write_posterior_scales(io::ParallelFile& f, std::int64_t chains, std::int64_t draws, std::int64_t params,
                            const std::vector<std::string>& stats) {
  const auto ids = [](std::int64_t n) {  // integer coordinates: pandas indexes chain 0, not 0.0
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    std::iota(v.begin(), v.end(), std::int64_t{0});
    return v;
  };
  const std::string chain = layout::join(layout::kPosterior, layout::kChainAxis);
  const std::string draw = layout::join(layout::kPosterior, layout::kDrawAxis);
  const std::string param = layout::join(layout::kPosterior, layout::kParamAxis);
  f.put(chain, ids(chains), {chains});
  f.put(draw, ids(draws), {draws});
  f.put(param, ids(params), {params});
  f.attach_scale(chain, layout::kChainAxis, {{layout::kPosteriorParams, 0}});
  f.attach_scale(draw, layout::kDrawAxis, {{layout::kPosteriorParams, 1}});
  f.attach_scale(param, layout::kParamAxis, {{layout::kPosteriorParams, 2}});
  const std::string stat_chain = layout::sample_stat(layout::kChainAxis);
  const std::string stat_draw = layout::sample_stat(layout::kDrawAxis);
  f.put(stat_chain, ids(chains), {chains});
  f.put(stat_draw, ids(draws), {draws});
  std::vector<std::pair<std::string, unsigned>> axes0, axes1;
  for (const auto& n : stats) {
    axes0.emplace_back(layout::sample_stat(n), 0U);
    axes1.emplace_back(layout::sample_stat(n), 1U);
  }
  f.attach_scale(stat_chain, layout::kChainAxis, axes0);
  f.attach_scale(stat_draw, layout::kDrawAxis, axes1);
}

}  // namespace simmer::parallel
