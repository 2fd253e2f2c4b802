#include "simmer/run/budget.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <string>

#include "simmer/core/error.hpp"
#include "simmer/ensemble/sampling.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/chain.hpp"

namespace simmer::run {
namespace {

constexpr std::int64_t kDouble = 8;

std::int64_t matrix_bytes(const Matrix& m) { return static_cast<std::int64_t>(m.size()) * kDouble; }

}  // namespace

ResourceEstimate estimate_resources(const Problem& p, int world_size) {
  ResourceEstimate e;
  // The network's sizes, its layers built once in the run's precision (layer scratch is counted in values
  // of that scalar): parameters, inputs, every layer's output width and scratch for the rows a
  // trajectory's network holds (activation_rows: one block of rows with gradient chunks).
  const std::int64_t held = activation_rows(p);
  std::int64_t P = 0, inputs = 0, layer_values = 0, scratch_values = 0;
  with_scalar(p.run.precision, [&](auto zero) {
    using S = decltype(zero);
    // The layers alone: estimating a network too large for the node must not allocate it.
    const auto layers = model::build_layers<S>(p.architecture);
    P = model::parameter_count(model::layout_of(layers));
    inputs = layers.front()->input_size();
    for (const auto& layer : layers) {
      layer_values += layer->output_size();
      scratch_values += layer->scratch_values(held);
    }
  });
  e.parameters = P;
  e.trajectories = p.run.trajectories;
  const std::int64_t ranks = std::max(1, world_size);
  e.trajectories_per_rank = (e.trajectories + ranks - 1) / ranks;

  // The members and which of them are stored, as the chains select them (trajectory 0's
  // draw; every trajectory samples the same count): each stage's members, every store.every-th
  // of a stage stored.
  Rng probe_rng = Rng::named(p.run.seed, 0, RngPurpose::sampling);
  const std::int64_t stages = p.chain_stages();
  std::vector<std::int64_t> stored_steps;
  for (std::int64_t k = 0; k < stages; ++k) {
    const auto steps = ensemble::select_sample_steps(p.run.steps, p.sampling, probe_rng);
    for (std::size_t m = 0; m < steps.size(); ++m) {
      if (static_cast<std::int64_t>(m) % std::max<std::int64_t>(1, p.store.every) == 0) {
        stored_steps.push_back(k * p.run.steps + steps[m]);
      }
    }
  }
  e.members_per_trajectory = stages * p.members_per_stage();
  const std::int64_t every = std::max<std::int64_t>(1, p.store.every);
  e.store_every = every;
  e.stored_per_trajectory = stages * p.draws_per_stage();
  const std::int64_t gather = p.run.gather_interval > 0 ? p.run.gather_interval : p.run.steps;
  {
    std::int64_t interval = -1, in_interval = 0;
    for (const std::int64_t step : stored_steps) {
      const std::int64_t k = step / std::max<std::int64_t>(gather, 1);
      if (k != interval) {
        interval = k;
        in_interval = 0;
      }
      e.stored_per_gather = std::max(e.stored_per_gather, ++in_interval);
    }
  }
  const std::int64_t value_bytes = p.store.float32 ? 4 : 8;

  // Data: every rank holds the raw split, and each evaluation set raw and scaled.
  std::int64_t data_bytes =
      matrix_bytes(p.train.x) + matrix_bytes(p.train.y) + matrix_bytes(p.test.x) + matrix_bytes(p.test.y);
  std::int64_t max_rows = 0, eval_values = 0, eval_outputs = 0;
  for (const auto& s : p.sets) {
    data_bytes += matrix_bytes(s.x_raw) + matrix_bytes(s.x) + matrix_bytes(s.y);
    if (p.run.precision == Precision::float32) data_bytes += (matrix_bytes(s.x) + matrix_bytes(s.y)) / 2;  // x32, y32
    max_rows = std::max<std::int64_t>(max_rows, s.rows());
    eval_values += s.rows() * (p.classification ? p.classes : p.outputs);
    eval_outputs += s.rows() * p.outputs;
  }

  // Archive.
  const std::int64_t C = e.trajectories, D = e.stored_per_trajectory;
  // The per-chain datasets as the run creates them (run/archive_layout.hpp).
  std::int64_t chain_bytes = 0;
  const layout::ArchiveCounts counts{C, D, P, layout::trace_records(p.adam.epochs, p.total_steps(), p.run.trace_every),
                                     p.store.float32};
  for (const auto& d : layout::chain_datasets(counts)) {
    chain_bytes += d.bytes();
    if (d.path == layout::kPosteriorParams) e.posterior_bytes = d.bytes();
  }
  const std::int64_t tracked =
      p.classification
          ? 0
          : C * e.members_per_trajectory * static_cast<std::int64_t>(p.store.track.size()) * p.outputs * kDouble;
  std::int64_t data_in_archive = 0;
  for (const auto& s : p.sets) data_in_archive += matrix_bytes(s.x_raw) + matrix_bytes(s.y);
  // The drift diagnostics (/diagnostics, and each trajectory's state in the checkpoint): the
  // members' series, and per block of the window an ensemble of the train and test sets, plus
  // the pooled probabilities or coverage counts.
  std::int64_t scored_values = 0;
  for (std::size_t s = 0; s < p.scored_sets(); ++s) {
    scored_values += p.sets[s].rows() * (p.classification ? p.classes : p.outputs);
  }
  // Per stage (one without a ladder). The archive's ensemble arrays: /ensemble, /deep_ensemble
  // (retrofit), a ladder's /ladder/rung_<k> and, with a validation set, /stacked.
  const std::int64_t per_stage = std::max<std::int64_t>(stages, 1);
  const std::int64_t ensembles =
      1 + (p.has_deep_ensemble() ? 1 : 0) + (stages >= 2 ? stages + (p.has_validation() ? 1 : 0) : 0);
  const std::int64_t diagnostics_state =
      5 * e.members_per_trajectory * kDouble +
      per_stage * ((2 * p.diagnostics.blocks + 3) * scored_values * kDouble + 2 * P * kDouble);
  e.archive_bytes = chain_bytes + tracked + data_in_archive +
                    ensembles * (3 * eval_values * kDouble + 2 * scored_values * kDouble) + (1LL << 20) +
                    per_stage * C * (2 * p.diagnostics.blocks + 40) * kDouble +           // /diagnostics
                    C * eval_outputs * kDouble +                                          // /baseline/<set>/prediction
                    (p.classification ? 0 : ensembles * C * 2 * eval_outputs * kDouble);  // the mixture's components
  // Checkpoint: per trajectory parameters, velocities, baseline, its running aggregates and
  // its diagnostics.
  e.checkpoint_bytes = C * (3 * P * kDouble + 2 * per_stage * eval_values * kDouble + diagnostics_state) + (64LL << 10);

  // One trajectory's working set: parameters and gradient, the integrator's velocities and
  // gradient, the baseline, Adam's two moments and previous iterate; every layer's activation
  // and delta buffer for the largest set, and the layers' scratch.
  // In the compute precision (run.precision); the diagnostics are float64 whatever it is.
  const std::int64_t scalar = p.run.precision == Precision::float32 ? 4 : 8;
  e.network_bytes = 8 * P * scalar + 2 * held * layer_values * scalar + scratch_values * scalar +
                    2 * max_rows * (p.outputs + inputs) * scalar + diagnostics_state;
  // The members buffered between gathers, and their concatenation for the collective write.
  e.buffer_bytes = 2 * e.trajectories_per_rank * e.stored_per_gather * P * value_bytes;
  const std::int64_t worker = kProcessBaseBytes + data_bytes + e.trajectories_per_rank * e.network_bytes +
                              std::max(e.buffer_bytes, e.trajectories_per_rank * eval_outputs * kDouble);
  // Rank 0 also gathers every trajectory's checkpoint state and the tracked predictions.
  const std::int64_t root = worker + e.checkpoint_bytes + 2 * C * eval_values * kDouble;
  e.peak_rank_bytes = std::max(worker, root);
  e.worker_rank_bytes = worker;
  e.root_rank_bytes = root;
  return e;
}

std::string human_bytes(std::int64_t bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  auto v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000.0 && u < 5) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.3g %s", v, units[u]);
  return buf;
}

std::string describe(const ResourceEstimate& e) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "estimate: archive %s (/posterior/params %s: %lld x %lld draws x %lld params), "
                "checkpoint %s; peak memory %s per rank (%lld trajectory(ies) x %s, stored members "
                "between gathers %s)\n",
                human_bytes(e.archive_bytes).c_str(), human_bytes(e.posterior_bytes).c_str(),
                static_cast<long long>(e.trajectories), static_cast<long long>(e.stored_per_trajectory),
                static_cast<long long>(e.parameters), human_bytes(e.checkpoint_bytes).c_str(),
                human_bytes(e.peak_rank_bytes).c_str(), static_cast<long long>(e.trajectories_per_rank),
                human_bytes(e.network_bytes).c_str(), human_bytes(e.buffer_bytes).c_str());
  return buf;
}

std::int64_t free_bytes(const std::string& directory) {
  struct statvfs s {};
  if (::statvfs(directory.c_str(), &s) != 0) return -1;
  return static_cast<std::int64_t>(s.f_bavail) * static_cast<std::int64_t>(s.f_frsize);
}

namespace {

/// The first number in a one-line file ("max" or a missing file: -1).
std::int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word.empty() || !std::isdigit(static_cast<unsigned char>(word[0]))) return -1;
  try {
    return static_cast<std::int64_t>(std::stoll(word));
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

NodeMemory node_memory() {
  NodeMemory m;
  {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::int64_t kb = 0;
    std::string unit;
    while (in >> key >> kb >> unit) {
      if (key == "MemAvailable:") {
        m.bytes = kb * 1024;
        m.source = "MemAvailable in /proc/meminfo";
        break;
      }
    }
  }
  // cgroup v2 (the job's own group, as SLURM's task/cgroup sets it), then v1.
  const auto consider = [&](std::int64_t limit, std::int64_t usage, const std::string& source) {
    if (limit <= 0 || limit >= (std::int64_t{1} << 60)) return;
    const std::int64_t left = limit - std::max<std::int64_t>(usage, 0);
    if (m.bytes < 0 || left < m.bytes) {
      m.bytes = std::max<std::int64_t>(left, 0);
      m.source = source;
    }
  };
  std::string group;
  {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("0::", 0) == 0) group = line.substr(3);
    }
  }
  if (!group.empty()) {
    const std::string dir = "/sys/fs/cgroup" + group;
    consider(read_number(dir + "/memory.max"), read_number(dir + "/memory.current"), "cgroup " + dir + "/memory.max");
  }
  consider(read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
           read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes"), "cgroup memory.limit_in_bytes");
  return m;
}

std::int64_t node_peak_bytes(const ResourceEstimate& e, int ranks_on_node, bool hosts_root) {
  const std::int64_t workers = std::max(0, ranks_on_node - (hosts_root ? 1 : 0));
  return workers * e.worker_rank_bytes + (hosts_root ? e.root_rank_bytes : 0);
}

void check_memory(const ResourceEstimate& e, std::int64_t need, int ranks_on_node, std::int64_t limit,
                  const std::string& limit_source, const std::string& limit_text) {
  if (limit <= 0 || need <= limit) return;
  throw FieldError("RunOptions.memory_limit", limit_text,
                   "the run needs about " + human_bytes(need) + " of memory on this node (" +
                       std::to_string(ranks_on_node) + " rank(s); the busiest " + human_bytes(e.peak_rank_bytes) +
                       ", of which one trajectory's network and buffers " + human_bytes(e.network_bytes) + " x " +
                       std::to_string(e.trajectories_per_rank) + ") but the limit is " + human_bytes(limit) + " (" +
                       limit_source +
                       "); use fewer ranks per node, a smaller model.architecture, a smaller "
                       "run.gather_interval or a larger ensemble.store_every, or set run.memory_limit "
                       "(off to skip this check)");
}

void check_room(const ResourceEstimate& e, const std::string& output, std::int64_t available) {
  if (available < 0) return;
  // A checkpoint is written to a temporary file and renamed over the last one: two at the peak.
  const std::int64_t need = e.archive_bytes + 2 * e.checkpoint_bytes;
  if (need <= available) return;
  throw FieldError("RunOptions.output", output,
                   "the run needs about " + human_bytes(need) + " (archive " + human_bytes(e.archive_bytes) +
                       ", checkpoint " + human_bytes(e.checkpoint_bytes) + ") but its file system has " +
                       human_bytes(available) + " free; store fewer networks (a larger ensemble.store_every than " +
                       std::to_string(e.store_every) + "), in float32 (ensemble.store_dtype), or write elsewhere");
}

}  // namespace simmer::run
