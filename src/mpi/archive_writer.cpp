#include "simmer/mpi/archive_writer.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "simmer/model/architecture.hpp"
#include "simmer/run/archive_layout.hpp"

#ifndef SIMMER_VERSION
#define SIMMER_VERSION "unknown"
#endif

namespace simmer::mpi {

io::Type io_type(run::layout::Dtype t) {
  switch (t) {
    case run::layout::Dtype::f32:
      return io::Type::f32;
    case run::layout::Dtype::i64:
      return io::Type::i64;
    case run::layout::Dtype::f64:
      break;
  }
  return io::Type::f64;
}

ArchiveShape ArchiveShape::of(const run::Problem& p) {
  ArchiveShape s;
  s.chains = p.run.trajectories;
  s.members = ensemble::member_count(p.run.steps, p.sampling);
  s.draws = (s.members + p.store.every - 1) / p.store.every;
  s.trace_records = run::layout::trace_records(p.adam.epochs, p.run.steps, p.run.trace_every);
  s.parameters = p.parameters;
  s.float32 = p.store.float32;
  return s;
}

run::layout::ArchiveCounts ArchiveShape::counts() const { return {chains, draws, parameters, trace_records, float32}; }

ArchiveWriter::ArchiveWriter(io::ParallelFile file, const run::Problem& p, MPI_Comm comm)
    : file_(std::move(file)), p_(&p), comm_(comm), shape_(ArchiveShape::of(p)) {
  MPI_Comm_rank(comm, &rank_);
}

ArchiveWriter ArchiveWriter::reopen(const run::Problem& p, MPI_Comm comm) {
  ArchiveWriter w(io::ParallelFile::open_write(p.run.output, comm), p, comm);
  w.file_.attribute("/", "status", std::string(run::layout::kStatusRunning));
  w.file_.flush();
  return w;
}

ArchiveWriter ArchiveWriter::create(const run::Problem& p, const std::string& command_line, const std::string& run_id,
                                    MPI_Comm comm) {
  ArchiveWriter w(io::ParallelFile::create(p.run.output, comm, true), p, comm);
  auto& f = w.file_;
  const ArchiveShape& shape = w.shape_;
  const std::int64_t C = shape.chains, D = shape.draws, P = shape.parameters;
  int size = 1;
  MPI_Comm_size(comm, &size);
  // Root provenance. created_at is the same on all ranks (rank 0's clock, broadcast).
  long long now = static_cast<long long>(std::time(nullptr));
  MPI_Bcast(&now, 1, MPI_LONG_LONG, 0, comm);
  char stamp[64];
  const std::time_t tt = static_cast<std::time_t>(now);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&tt));
  f.attribute("/", "simmer_version", std::string(SIMMER_VERSION));
  f.attribute("/", "created_at", std::string(stamp));
  f.attribute("/", "command_line", command_line);
  f.attribute("/", "mpi_ranks", static_cast<std::int64_t>(size));
  f.attribute("/", "trajectories", C);
  f.attribute("/", "mode", train::to_string(p.mode));
  f.attribute("/", "task", std::string(p.classification ? "classification" : "regression"));
  f.attribute("/", "precision", to_string(p.run.precision));  // the compute scalar (run.precision)
  f.attribute("/", "run_id", run_id);
  f.attribute("/", "status", std::string(run::layout::kStatusRunning));  // until the run ends
  f.put_strings("/config", {p.config_ini});
  f.attribute("/config", "run_id", run_id);
  // The thermostat as it was resolved (Martyna masses follow from N_f, T and tau).
  std::string masses;
  for (int k = 0; k < p.nhc.chain_length; ++k) {
    char q[32];
    std::snprintf(q, sizeof q, "%.17g", p.nhc.masses.empty() ? 1.0 : p.nhc.masses[static_cast<std::size_t>(k)]);
    if (k > 0) masses += ',';
    masses += q;
  }
  f.attribute("/", "thermostat", train::to_string(p.nhc.thermostat));
  f.attribute("/", "thermostat_masses", masses);

  // /data: raw sets and scaling.
  f.create_group("/data");
  for (const auto& s : p.sets) {
    const std::string g = "/data/" + s.name;
    f.create_group(g);
    f.put(g + "/x", std::vector<double>(s.x_raw.data(), s.x_raw.data() + s.x_raw.size()),
          {s.x_raw.rows(), s.x_raw.cols()});
    if (s.has_targets()) {
      if (p.classification)
        f.put(g + "/y", s.labels, {static_cast<std::int64_t>(s.labels.size())});
      else
        f.put(g + "/y", std::vector<double>(s.y.data(), s.y.data() + s.y.size()), {s.y.rows(), s.y.cols()});
    }
  }
  f.create_group("/data/scaling");
  const auto put_row = [&](const std::string& path, const Eigen::RowVectorXd& v) {
    f.put(path, std::vector<double>(v.data(), v.data() + v.size()), {v.size()});
  };
  put_row("/data/scaling/x_min", p.x_scaler.min());
  put_row("/data/scaling/x_max", p.x_scaler.max());
  if (!p.classification) {
    put_row("/data/scaling/y_min", p.y_scaler.min());
    put_row("/data/scaling/y_max", p.y_scaler.max());
  }
  f.put_strings("/data/feature_names", p.train.feature_names);
  f.put_strings("/data/target_names", p.train.target_names);
  if (p.classification) f.put_strings("/data/class_names", p.train.class_names);
  f.attribute("/data", "rows_read", p.rows_read);
  f.attribute("/data", "rows_dropped", p.rows_dropped);
  if (!p.rows_dropped_reasons.empty()) f.attribute("/data", "rows_dropped_reasons", p.rows_dropped_reasons);

  // /model: architecture and the flat parameter layout.
  const std::vector<model::TensorLayout> layout = model::build_network(p.architecture).layout();
  f.create_group("/model");
  f.attribute("/model", "architecture", p.model_text.architecture);
  f.attribute("/model", "activation", p.model_text.activation);
  f.attribute("/model", "output", p.model_text.output);
  f.attribute("/model", "loss", p.model_text.loss);
  f.attribute("/model", "init", p.model_text.init);
  f.attribute("/model", "parameters", static_cast<std::int64_t>(P));
  f.attribute("/model", "flattening",
              std::string("layer by layer; dense: kernel [fan_in][fan_out] row-major, then bias; "
                          "y = act(x W + b); conv2d: kernel [kh][kw][in_channels][filters] "
                          "row-major, then bias; image rows are height x width x channels (HWC)"));
  if (!p.architecture.input_shape.empty()) {
    f.attribute("/model", "pooling", p.model_text.pooling);
    std::string image;
    for (const Index d : p.architecture.input_shape) {
      if (!image.empty()) image += 'x';
      image += std::to_string(d);
    }
    f.attribute("/model", "input_shape", image + " (height x width x channels)");
  }
  std::vector<std::string> names;
  std::vector<std::int64_t> offsets, shapes;
  for (const auto& t : layout) {
    names.push_back(t.name);
    offsets.push_back(t.offset);
  }
  const std::size_t max_rank = 4;
  for (const auto& t : layout) {
    for (std::size_t d = 0; d < max_rank; ++d) shapes.push_back(d < t.shape.size() ? t.shape[d] : 1);
  }
  const auto tensors = static_cast<std::int64_t>(layout.size());
  f.put_strings("/model/tensor_name", names);
  f.put("/model/tensor_offset", offsets, {tensors});
  f.put("/model/tensor_shape", shapes, {tensors, static_cast<std::int64_t>(max_rank)});
  std::vector<std::int64_t> ranks;
  for (const auto& t : layout) ranks.push_back(static_cast<std::int64_t>(t.shape.size()));
  f.put("/model/tensor_rank", ranks, {tensors});

  // Per-chain datasets (run/archive_layout.hpp): chunks never span two chains, so no chunk is
  // shared by two ranks.
  for (const auto& d : run::layout::chain_datasets(shape.counts())) {
    f.create_group(d.group);
    f.create_dataset(d.path, io_type(d.dtype), d.dims, d.chunk, d.nan_fill);
  }
  f.attribute("/posterior/params", "store_every", p.store.every);
  f.attribute("/trace", "phase_meaning", std::string("0 = Adam epoch, 1 = simmering step"));
  f.attribute("/trace", "train_loss_meaning",
              std::string("Adam: loss of the epoch's update; simmering: loss at the half-step position"));
  f.attribute("/trace", "position_meaning",
              std::string("distance = |x - x0| and path_length = integral of |v| dt from the simmering start x0 "
                          "(NaN during Adam); param_rms = |x|/sqrt(N); param_max_abs = max |x_i|"));
  // Dimension scales so xarray sees named dimensions.
  io::write_posterior_scales(f, C, D, P, run::layout::sample_stat_fields());

  // /ensemble: rewritten by rank 0 at every gather.
  f.create_group("/ensemble");
  for (const auto& s : p.sets) {
    const std::string g = "/ensemble/" + s.name;
    f.create_group(g);
    if (p.classification) {
      f.create_dataset(g + "/votes", io::Type::i64, {s.rows(), p.classes});
      f.create_dataset(g + "/prediction", io::Type::i64, {s.rows()});
      f.create_dataset(g + "/fraction", io::Type::f64, {s.rows(), p.classes});
    } else {
      f.create_dataset(g + "/mean", io::Type::f64, {s.rows(), p.outputs});
      f.create_dataset(g + "/variance", io::Type::f64, {s.rows(), p.outputs});
    }
  }
  if (!p.store.track.empty() && !p.classification) {
    const auto k = static_cast<std::int64_t>(p.store.track.size()) * p.outputs;
    f.create_dataset("/ensemble/test/tracked", io::Type::f64, {C, shape.members, k},
                     {1, std::max<std::int64_t>(shape.members, 1), k}, true);
    f.put("/ensemble/test/tracked_rows", p.store.track, {static_cast<std::int64_t>(p.store.track.size())});
  }
  f.create_group("/metrics");
  f.flush();
  return w;
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
  file_.write_rows("/initial/params", blocks, x);
  file_.write_rows("/initial/velocity", blocks, v);
  if (p.mode == train::StartMode::retrofit) file_.write_rows("/baseline/params", blocks, base);
}

void ArchiveWriter::rows(const std::vector<std::pair<std::int64_t, run::ChainRows>>& rows,
                         const ensemble::PooledEnsemble& pooled) {
  const run::Problem& p = *p_;
  std::vector<io::RowBlock> draw_blocks, trace_blocks;
  std::vector<double> params;
  std::vector<float> params32;
  const auto& stat_fields = run::layout::sample_stat_fields();
  const auto& trace_fields = run::layout::trace_fields();
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
    file_.write_rows("/posterior/params", draw_blocks, params32);
  } else {
    file_.write_rows("/posterior/params", draw_blocks, params);
  }
  for (std::size_t i = 0; i < stat_fields.size(); ++i) {
    file_.write_rows("/sample_stats/" + stat_fields[i], draw_blocks, stats[i]);
  }
  for (std::size_t i = 0; i < trace_fields.size(); ++i) {
    file_.write_rows("/trace/" + trace_fields[i], trace_blocks, trace[i]);
  }
  if (!p.store.track.empty() && !p.classification) {
    std::vector<io::RowBlock> blocks;
    if (rank_ == 0) {
      for (const auto& b : pooled.tracked_blocks()) blocks.push_back({b.trajectory, b.first, b.count});
    }
    file_.write_rows("/ensemble/test/tracked", blocks, pooled.tracked_rows());
  }
}

void ArchiveWriter::ensemble(const ensemble::PooledEnsemble& pooled) {
  const run::Problem& p = *p_;
  for (std::size_t s = 0; s < p.sets.size(); ++s) {
    const std::string g = "/ensemble/" + p.sets[s].name;
    if (p.classification) {
      ensemble::VoteAccumulator::Votes votes;
      std::vector<std::int64_t> majority;
      Matrix fraction;
      if (rank_ == 0) {
        votes = pooled.votes(s).votes();
        majority = pooled.votes(s).majority();
        fraction = pooled.votes(s).fractions();
      }
      file_.write_from_root(g + "/votes", votes.data(), io::Type::i64);
      file_.write_from_root(g + "/prediction", majority.data(), io::Type::i64);
      file_.write_from_root(g + "/fraction", fraction.data(), io::Type::f64);
    } else {
      Matrix mean, var;
      if (rank_ == 0) {
        mean = pooled.means(s).mean();
        var = pooled.means(s).variance();
      }
      file_.write_from_root(g + "/mean", mean.data(), io::Type::f64);
      file_.write_from_root(g + "/variance", var.data(), io::Type::f64);
    }
    std::int64_t m = rank_ == 0 ? pooled.members(s) : 0;
    MPI_Bcast(&m, 1, MPI_INT64_T, 0, comm_);
    file_.attribute(g, "members", m);
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
    file_.write_rows("/baseline/params", blocks, rows);
  }
  // The baseline network's outputs on every evaluation set (raw target units for regression,
  // logits for classification): Adam's fit on the extra points, for figures, with no network
  // re-evaluated afterwards. Rows of a trajectory without a baseline stay NaN.
  for (std::size_t set = 0; set < p.sets.size(); ++set) {
    const auto& s = p.sets[set];
    // (This may run again on a resumed archive: create_group keeps an existing group and
    // create_dataset replaces the dataset.)
    const std::string g = "/baseline/" + s.name;
    file_.create_group(g);
    file_.create_dataset(g + "/prediction", io::Type::f64, {C, s.rows(), p.outputs},
                         {1, std::max<std::int64_t>(s.rows(), 1), p.outputs}, true);
    std::vector<io::RowBlock> blocks;
    std::vector<double> rows;
    for (run::Chain* ch : chains) {
      if (!ch->has_baseline()) continue;
      const ConstBatchView pred = ch->baseline_prediction(set);
      rows.insert(rows.end(), pred.data(), pred.data() + pred.size());
      blocks.push_back({ch->index(), 0, s.rows()});
    }
    file_.write_rows(g + "/prediction", blocks, rows);
    file_.attribute(g + "/prediction", "units",
                    std::string(!p.classification ? "target units [chain, row, output]"
                                : p.outputs == 1  ? "logit of class 1 [chain, row, 1]"
                                                  : "logits [chain, row, class]"));
  }
  file_.attribute("/baseline", "kind",
                  std::string(p.mode == train::StartMode::retrofit ? "Adam end point of each trajectory"
                                                                   : "first ensemble member of each trajectory"));
}

void ArchiveWriter::uncertainty_partials(const std::vector<Matrix>& probability,
                                         const std::vector<ensemble::CoverageCounter>& coverage) {
  // What the pooled uncertainty scores came from, so simmer_analyze merge can pool again: the
  // members' mean class probabilities, or where each truth fell among the member predictions.
  const run::Problem& p = *p_;
  for (std::size_t s = 0; s < 2; ++s) {
    const auto& set = p.sets[s];
    const std::string g = "/ensemble/" + set.name;
    if (p.classification) {
      file_.create_dataset(g + "/probability", io::Type::f64, {set.rows(), p.classes});
      file_.write_from_root(g + "/probability", rank_ == 0 ? probability[s].data() : nullptr, io::Type::f64);
    } else {
      file_.create_dataset(g + "/coverage_below", io::Type::i64, {set.rows(), p.outputs});
      file_.create_dataset(g + "/coverage_equal", io::Type::i64, {set.rows(), p.outputs});
      file_.write_from_root(g + "/coverage_below", rank_ == 0 ? coverage[s].below().data() : nullptr, io::Type::i64);
      file_.write_from_root(g + "/coverage_equal", rank_ == 0 ? coverage[s].equal().data() : nullptr, io::Type::i64);
      file_.attribute(g + "/coverage_below", "meaning",
                      std::string("members whose prediction is below the truth (coverage_equal: equal), per value"));
    }
  }
}

}  // namespace simmer::mpi
