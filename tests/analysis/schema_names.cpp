// Prints the archive schema's names as the C++ side declares them (run/archive_layout.hpp,
// run/metrics.hpp), one per line as "<kind> <name>", for tests/analysis/test_schema_names.py to
// compare with the names the Python tools read:
//   metric <task> <name>   every /metrics attribute of a retrofit with a validation set
//                          (task: classification or regression)
//   verdict <name>         the verdict's count key without "trajectories_" (not_mixed)
//   dataset <path>         per-chain datasets and /diagnostics/<field>
//   status <value>         the root attribute `status` at a run's end (or while it runs)
#include <cstdio>
#include <string>

#include "simmer/run/archive_layout.hpp"
#include "simmer/run/metrics.hpp"

int main() {
  namespace layout = simmer::run::layout;
  for (const bool classification : {true, false}) {
    layout::MetricsShape shape;
    shape.classification = classification;
    shape.scored_sets = {"train", "test", "validation"};
    shape.deep_ensemble = true;
    for (const auto& key : layout::metric_keys(shape)) {
      std::printf("metric %s %s\n", classification ? "classification" : "regression", key.c_str());
    }
  }
  const std::string count_prefix = "trajectories_";
  for (const auto& entry : simmer::ensemble::kVerdictNames.table) {
    std::printf("verdict %s\n", layout::verdict_count_key(entry.name).substr(count_prefix.size()).c_str());
  }
  for (const auto& d : layout::chain_datasets({1, 1, 1, 1, false})) std::printf("dataset %s\n", d.path.c_str());
  for (const auto& name : layout::diagnostic_fields()) std::printf("dataset /diagnostics/%s\n", name.c_str());
  for (const char* status : {layout::kStatusRunning, layout::kStatusComplete, layout::kStatusCompleteDiverged,
                             layout::kStatusStopped, layout::kStatusRefusedUnstable, layout::kStatusRefusedTooHot}) {
    std::printf("status %s\n", status);
  }
  return 0;
}
