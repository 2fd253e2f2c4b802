// The summary's trajectory health table, the loss's convergence diagnostics and the window's
// thermometers (summary_parts.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "simmer/ensemble/convergence.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/problem.hpp"
#include "simmer/train/configurational.hpp"
#include "summary_parts.hpp"

namespace simmer::posthoc::detail {

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

double real_attr(const io::ArchiveReader& r, const std::string& obj, const std::string& name) {
  return r.has_attribute(obj, name) ? r.attribute_real(obj, name) : std::nan("");
}

namespace {

namespace layout = run::layout;
using ensemble::bulk_ess;
using ensemble::Chains;
using ensemble::effective_sample_size;
using ensemble::format_diagnostic;
using ensemble::rank_rhat;
using ensemble::split_rhat;
using ensemble::usable_chains;

/// One temperature stage of one chain: consecutive stored draws at the same temperature.
struct Stage {
  double temperature = 0.0;
  std::size_t first = 0;  ///< index into the chain's written draws
  std::size_t count = 0;
};

std::vector<Stage> stages_of(const std::vector<double>& temperature) {
  std::vector<Stage> out;
  for (std::size_t i = 0; i < temperature.size(); ++i) {
    if (out.empty() || temperature[i] != out.back().temperature) out.push_back({temperature[i], i, 0});
    out.back().count += 1;
  }
  return out;
}

}  // namespace

void health(const io::ArchiveReader& r, const RunArchive& run, std::ostream& out) {
  const auto C = static_cast<std::size_t>(run.chains);
  const auto D = static_cast<std::size_t>(run.draws);
  const auto read = [&](const char* name) {
    const std::string path = layout::sample_stat(name);
    return r.exists(path) ? r.read_doubles(path) : std::vector<double>(C * D, std::nan(""));
  };
  const auto step = read(layout::kStep), temperature = read(layout::kTemperature), loss = read(layout::kLoss),
             kinetic = read(layout::kKineticTemperature), energy = read(layout::kExtendedEnergy);
  std::vector<std::int64_t> diverged(C, -1);
  if (r.exists(layout::kDivergedAtStep)) {
    const auto d = r.read_ints(layout::kDivergedAtStep);
    if (d.size() == C) diverged = d;
  }
  out << "\ntrajectory health (stored draws grouped by temperature stage; H_ext drift = max |H_ext - first| "
         "/ "
         "|first| over the last stage)\n";
  char buf[200];
  std::snprintf(buf, sizeof buf, "  %5s %9s %10s %6s %12s %9s %12s\n", "chain", "diverged", "T", "draws", "mean T_kin",
                "T_kin/T", "H_ext drift");
  out << buf;
  std::size_t most_stages = 0;
  Chains loss_chains(C), last_stage_loss(C);
  double last_temperature = std::nan("");
  std::vector<Chains> stage_loss;  // [stage][chain]: the draws of each temperature stage
  std::vector<double> stage_temperature;
  for (std::size_t c = 0; c < C; ++c) {
    std::vector<double> t, k, e;
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t i = c * D + d;
      if (!std::isfinite(step[i])) continue;  // unwritten row of a stopped trajectory
      t.push_back(temperature[i]);
      k.push_back(kinetic[i]);
      e.push_back(energy[i]);
      loss_chains[c].push_back(loss[i]);
    }
    const std::string div = diverged[c] >= 0 ? "step " + std::to_string(diverged[c]) : "-";
    const auto stages = stages_of(t);
    most_stages = std::max(most_stages, stages.size());
    if (stages.empty()) {
      std::snprintf(buf, sizeof buf, "  %5zu %9s %10s %6d %12s %9s %12s\n", c, div.c_str(), "-", 0, "-", "-", "-");
      out << buf;
    }
    for (std::size_t s = 0; s < stages.size(); ++s) {
      const Stage& st = stages[s];
      double sum = 0.0;
      for (std::size_t i = st.first; i < st.first + st.count; ++i) sum += k[i];
      const double mean = sum / static_cast<double>(st.count);
      const std::string ratio = st.temperature > 0.0 ? printf_string("%.4g", mean / st.temperature) : "-";
      std::string drift = "-";
      if (stage_loss.size() <= s) stage_loss.resize(s + 1, Chains(C));
      if (stage_temperature.size() <= s) stage_temperature.resize(s + 1, st.temperature);
      stage_loss[s][c].assign(loss_chains[c].begin() + static_cast<std::ptrdiff_t>(st.first),
                              loss_chains[c].begin() + static_cast<std::ptrdiff_t>(st.first + st.count));
      if (s + 1 == stages.size()) {
        last_temperature = st.temperature;
        last_stage_loss[c].assign(loss_chains[c].begin() + static_cast<std::ptrdiff_t>(st.first),
                                  loss_chains[c].begin() + static_cast<std::ptrdiff_t>(st.first + st.count));
        const double first = e[st.first];
        double worst = 0.0;
        for (std::size_t i = st.first; i < st.first + st.count; ++i) worst = std::max(worst, std::abs(e[i] - first));
        const double rel = first != 0.0 ? worst / std::abs(first) : worst;
        drift = std::isfinite(rel) ? printf_string("%.3g", rel) : "n/a";
      }
      std::snprintf(buf, sizeof buf, "  %5zu %9s %10.4g %6zu %12.5g %9s %12s\n", c, s == 0 ? div.c_str() : "",
                    st.temperature, st.count, mean, ratio.c_str(), drift.c_str());
      out << buf;
    }
  }
  // Split-R̂ and ESS of the loss over all stored draws and, when those span a temperature ramp
  // (where R̂ also sees the ramp), over the last stage's draws alone.
  // The rank-normalised R̂ and bulk ESS (Vehtari et al. 2021) follow on a line of their own, with
  // the bulk ESS per second of the run's wall time (the whole run's: Adam, every stage and I/O).
  const double wall = real_attr(r, layout::kRoot, layout::kWallSeconds);
  const auto diagnose = [&](const Chains& chains, const std::string& which) {
    const Chains usable = usable_chains(chains, 4);
    out << "  " << which << ": split-R̂ " << format_diagnostic(split_rhat(usable), 3) << ", ESS "
        << format_diagnostic(effective_sample_size(usable), 0);
    if (usable.size() >= 2) {
      out << " of " << usable.size() * usable.front().size() << " draws (" << usable.size() << " chains × "
          << usable.front().size() << ")\n";
      const double bulk = bulk_ess(usable);
      out << "    rank-normalised R̂ " << format_diagnostic(rank_rhat(usable), 3) << ", bulk ESS "
          << format_diagnostic(bulk, 0);
      if (std::isfinite(wall) && wall > 0.0 && std::isfinite(bulk)) {
        out << ", " << printf_string("%.3g", bulk / wall) << " per second of the run's " << printf_string("%.1f", wall)
            << " s";
      }
      out << "\n";
    } else {
      out << " (needs ≥ 2 trajectories with ≥ 4 stored draws)\n";
    }
  };
  out << "\nloss (/sample_stats/loss) across trajectories\n";
  if (r.exists(layout::kLadder) && r.has_attribute(layout::kLadder, layout::kLadderMode) &&
      r.attribute_text(layout::kLadder, layout::kLadderMode) == run::kLadderModeNames.name(run::LadderMode::parallel)) {
    // Parallel rungs: each trajectory index is one temperature for the whole run (replica
    // exchange swaps configurations, not temperatures), so the chains of one T are compared.
    std::vector<double> temperatures;
    std::vector<double> chain_temperature(C, std::nan(""));
    for (std::size_t c = 0; c < C; ++c) {
      for (std::size_t d = 0; d < D && !std::isfinite(chain_temperature[c]); ++d) {
        if (std::isfinite(step[c * D + d])) chain_temperature[c] = temperature[c * D + d];
      }
      if (std::isfinite(chain_temperature[c]) &&
          std::find(temperatures.begin(), temperatures.end(), chain_temperature[c]) == temperatures.end()) {
        temperatures.push_back(chain_temperature[c]);
      }
    }
    std::sort(temperatures.begin(), temperatures.end());
    for (std::size_t k = 0; k < temperatures.size(); ++k) {
      Chains at;
      for (std::size_t c = 0; c < C; ++c) {
        if (chain_temperature[c] == temperatures[k]) at.push_back(loss_chains[c]);
      }
      diagnose(at, "rung " + std::to_string(k) + ", T = " + printf_string("%.4g", temperatures[k]) + " (" +
                       std::to_string(at.size()) + " trajectories side by side)");
    }
    return;
  }
  diagnose(loss_chains, most_stages > 1 ? "all stored draws (" + std::to_string(most_stages) + " temperature stages)"
                                        : "all stored draws");
  if (most_stages > 1) {
    for (std::size_t st = 0; st + 1 < stage_loss.size(); ++st) {
      diagnose(stage_loss[st],
               "stage " + std::to_string(st + 1) + ", T = " + printf_string("%.4g", stage_temperature[st]));
    }
    diagnose(last_stage_loss, "last stage, T = " + printf_string("%.4g", last_temperature));
  }
}

void thermometers(const std::vector<double>& h, const std::vector<double>& temperature,
                  const std::vector<double>& kinetic, const std::vector<double>& configurational,
                  const std::vector<double>& configurational_stderr, const std::vector<double>& chain,
                  std::ostream& out) {
  std::string ratios, off;  // off: at most three of the trajectories off by more than the tolerance
  std::size_t off_count = 0, counted = 0;
  double h_lo = INFINITY, h_hi = -INFINITY, k_lo = INFINITY, k_hi = -INFINITY;
  for (std::size_t c = 0; c < configurational.size() && c < temperature.size(); ++c) {
    const double ratio = configurational[c] / temperature[c];
    if (!std::isfinite(ratio)) continue;
    const auto who =
        std::to_string(c < chain.size() ? static_cast<std::int64_t>(chain[c]) : static_cast<std::int64_t>(c));
    const double error = c < configurational_stderr.size() ? configurational_stderr[c] / temperature[c] : std::nan("");
    // %g: a ratio far from 1 (T = 1e-300) in a few digits, not hundreds
    ratios += (ratios.empty() ? "" : " ") + printf_string("%.4g", ratio) +
              (std::isfinite(error) ? printf_string("+-%.2g", error) : std::string());
    ++counted;
    if (train::configurational_off(ratio, error) && ++off_count <= 3) {
      off += (off.empty() ? "" : ", ") + who;
    }
    h_lo = std::min(h_lo, h[c]);
    h_hi = std::max(h_hi, h[c]);
    k_lo = std::min(k_lo, kinetic[c] / temperature[c]);
    k_hi = std::max(k_hi, kinetic[c] / temperature[c]);
  }
  if (ratios.empty()) return;
  out << "  thermometers over the window: h " << printf_string("%.4g", h_lo)
      << (h_hi > h_lo ? "-" + printf_string("%.4g", h_hi) : std::string()) << ", T_kin/T "
      << printf_string("%.4g", k_lo) << "-" << printf_string("%.4g", k_hi)
      << "; T_conf/T per trajectory (configurational: <|grad U|^2> / <tr Hess U>, 1 when the positions follow "
         "exp(-U/T)): "
      << ratios << "\n";
  if (!off.empty()) {
    out << "  warning: T_conf/T more than " << printf_string("%.0f", 100.0 * train::kConfigurationalTolerance)
        << "% (and twice its standard error, where archived) from 1 in " << off_count << " of " << counted
        << " trajectories (" << (off_count > 3 ? "e.g. " : "") << off
        << (off_count > 3 ? ", ...; each one's ratio is on the line above" : "")
        << "): not equilibrated, or a step that biases the sampled law (docs/MIXING.md)\n";
  }
}

}  // namespace simmer::posthoc::detail
