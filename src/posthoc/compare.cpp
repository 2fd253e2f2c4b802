// simmer_analyze compare: PSIS-LOO and WAIC of each candidate ensemble of a run (each rung of a
// ladder, or the one simmering stage) from its stored draws' log-likelihood of the training rows,
// beside the validation score that chose the run's ensemble (docs/ANALYZE.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/ensemble/model_comparison.hpp"
#include "simmer/ensemble/selection.hpp"
#include "simmer/posthoc/commands.hpp"
#include "simmer/posthoc/run_archive.hpp"
#include "simmer/run/archive_layout.hpp"

namespace simmer::posthoc {
namespace {

namespace layout = run::layout;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Candidate {
  std::string name;
  double temperature_over_bayes = kNaN;
  std::vector<NetworkRow> draws;
  ensemble::Elpd loo, waic;
  double validation_loss = kNaN;
};

/// The candidates and their stored draws: each rung of a ladder (rung_draws), or without one every
/// draw.
std::vector<Candidate> candidates(const io::ArchiveReader& r, const RunArchive& run) {
  const auto written = written_draws(r, run);
  const auto rungs = static_cast<std::int64_t>(run.config.simmer.ladder.rungs.size());
  std::vector<Candidate> out;
  if (rungs < 2) {
    Candidate c;
    c.name = layout::kSimmeringName;
    if (r.has_attribute(layout::kMetrics, layout::kTemperatureOverBayes)) {
      c.temperature_over_bayes = r.attribute_real(layout::kMetrics, layout::kTemperatureOverBayes);
    }
    c.draws = written;
    out.push_back(std::move(c));
    return out;
  }
  for (std::int64_t k = 0; k < rungs; ++k) {
    Candidate c;
    c.name = layout::rung_name(k);
    const std::string group = layout::ladder_group(c.name);
    if (r.has_attribute(group, layout::kTemperatureOverBayes)) {
      c.temperature_over_bayes = r.attribute_real(group, layout::kTemperatureOverBayes);
    }
    c.draws = rung_draws(run, written, k);
    out.push_back(std::move(c));
  }
  return out;
}

std::string number(double v, const char* format = "%.3f") {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

void compare(const CompareOptions& o, std::ostream& out) {
  const io::ArchiveReader r(o.archive);
  const RunArchive run = load_run(r);
  const std::string warning = check_complete(r, "compare", stored_draws_held(r, run), o.allow_incomplete);
  if (!warning.empty()) std::cerr << "simmer_analyze compare: " << warning << "\n";
  std::vector<Candidate> cands = candidates(r, run);
  // The validation score each candidate was chosen by (/selection, a ladder with a validation set).
  if (r.exists(layout::selection_column(layout::kCandidate)) &&
      r.exists(layout::selection_column(layout::kValidationLoss))) {
    const auto names = r.read_strings(layout::selection_column(layout::kCandidate));
    const auto loss = r.read_doubles(layout::selection_column(layout::kValidationLoss));
    for (auto& c : cands) {
      const auto it = std::find(names.begin(), names.end(), c.name);
      if (it != names.end()) c.validation_loss = loss.at(static_cast<std::size_t>(it - names.begin()));
    }
  }
  std::string meaning;
  for (auto& c : cands) {
    if (c.draws.size() < 2) {
      throw Error("compare: '" + o.archive + "': " + c.name + " has " + std::to_string(c.draws.size()) +
                  " stored draw(s); PSIS-LOO and WAIC need at least 2");
    }
    const TrainingLogLikelihood ll = training_log_likelihood(r, run, c.draws);
    meaning = ll.meaning;
    c.loo = ensemble::psis_loo(ll.values);
    c.waic = ensemble::waic(ll.values);
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < cands.size(); ++i) {
    if (cands[i].loo.elpd > cands[best].loo.elpd) best = i;
  }
  const std::string chosen = r.has_attribute(layout::kMetrics, layout::kEnsembleName)
                                 ? r.attribute_text(layout::kMetrics, layout::kEnsembleName)
                                 : std::string();
  // az.compare's `weight` (its default method, stacking): the weights of one mixture of the
  // candidates' leave-one-out predictive densities that maximise Σ_i log Σ_k w_k exp(elpd_loo_ik).
  std::vector<std::vector<double>> pointwise;
  for (const auto& c : cands) pointwise.push_back(c.loo.pointwise);
  const std::vector<double> weight = ensemble::stack(pointwise).weights;
  const auto rows = cands.front().loo.pointwise.size();
  out << "compare: PSIS-LOO and WAIC of " << cands.size() << " candidate(s) of " << o.archive << " on its " << rows
      << " training rows (log scale, higher is better; " << meaning << "; r_eff = 1: draws taken as independent)\n";
  char line[400];
  std::snprintf(line, sizeof line, "%-11s %9s %6s %11s %8s %8s %10s %8s %7s %7s %11s %8s %8s %11s\n", "candidate",
                "T/T_Bayes", "draws", "elpd_loo", "se", "p_loo", "elpd_diff", "dse", "weight", "k>good", "elpd_waic",
                "se", "p_waic", "valid_loss");
  out << line;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const Candidate& c = cands[i];
    const double diff = c.loo.elpd - cands[best].loo.elpd;
    const double dse = i == best ? 0.0 : ensemble::difference_se(c.loo.pointwise, cands[best].loo.pointwise);
    std::snprintf(line, sizeof line, "%-11s %9s %6zu %11s %8s %8s %10s %8s %7s %7lld %11s %8s %8s %11s", c.name.c_str(),
                  number(c.temperature_over_bayes, "%.3g").c_str(), c.draws.size(), number(c.loo.elpd).c_str(),
                  number(c.loo.se).c_str(), number(c.loo.p).c_str(), number(diff).c_str(), number(dse).c_str(),
                  number(weight[i], "%.3f").c_str(), static_cast<long long>(c.loo.k_above), number(c.waic.elpd).c_str(),
                  number(c.waic.se).c_str(), number(c.waic.p).c_str(), number(c.validation_loss, "%.5g").c_str());
    out << line << (i == best ? "  <- best elpd_loo" : "") << (c.name == chosen ? "  <- the run's ensemble" : "")
        << "\n";
  }
  for (const Candidate& c : cands) {
    if (c.loo.k_above > 0) {
      const double worst = *std::max_element(c.loo.pareto_k.begin(), c.loo.pareto_k.end());
      out << "warning: " << c.name << ": " << c.loo.k_above << " of " << rows << " rows have Pareto k-hat above "
          << number(c.loo.good_k, "%.2f") << " (largest " << number(worst, "%.2f")
          << "): PSIS-LOO is unreliable for them (more draws, or K-fold cross-validation)\n";
    }
    if (c.waic.variance_warning) {
      out << "warning: " << c.name
          << ": some row's log-density varies by more than 0.4 over the draws: WAIC may fail (prefer PSIS-LOO)\n";
    }
  }
  if (!chosen.empty() && chosen != cands[best].name) {
    out << "note: the run's ensemble (" << chosen
        << ", chosen on the validation rows) is not the best by PSIS-LOO on the training rows (" << cands[best].name
        << ")\n";
  }
  if (o.output.empty()) return;
  OutputFile file("compare", o.output, out, {o.archive});
  std::ostream& csv = file.stream();
  csv << "candidate,temperature_over_bayes,draws,elpd_loo,se_loo,p_loo,elpd_diff,dse,weight,k_above,max_k,elpd_"
         "waic,se_waic,p_waic,validation_loss\n";
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const Candidate& c = cands[i];
    const double dse = i == best ? 0.0 : ensemble::difference_se(c.loo.pointwise, cands[best].loo.pointwise);
    csv << c.name << "," << csv_number(c.temperature_over_bayes) << "," << c.draws.size() << ","
        << csv_number(c.loo.elpd) << "," << csv_number(c.loo.se) << "," << csv_number(c.loo.p) << ","
        << csv_number(c.loo.elpd - cands[best].loo.elpd) << "," << csv_number(dse) << "," << csv_number(weight[i])
        << "," << c.loo.k_above << "," << csv_number(*std::max_element(c.loo.pareto_k.begin(), c.loo.pareto_k.end()))
        << "," << csv_number(c.waic.elpd) << "," << csv_number(c.waic.se) << "," << csv_number(c.waic.p) << ","
        << csv_number(c.validation_loss) << "\n";
  }
  file.close();
}

}  // namespace simmer::posthoc
