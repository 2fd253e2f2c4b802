// The name of every axis of every dataset of the archive (archive_paths.hpp: axis_name), so that
// netCDF readers see named dimensions everywhere (io::ParallelFile::name_axes attaches them).
#include <string>
#include <string_view>
#include <vector>

#include "simmer/run/archive_paths.hpp"

namespace simmer::run::layout {
namespace {

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    const auto end = path.find('/');
    if (!path.empty()) out.push_back(path.substr(0, end));
    path = end == std::string_view::npos ? std::string_view() : path.substr(end);
  }
  return out;
}

bool starts(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

/// The axes of one dataset, by its name within an ensemble's set group (/ensemble/test/<name>).
std::vector<const char*> ensemble_axes(std::string_view name) {
  if (name == kTrajectoryMembers) return {kChainAxis};
  if (name == kTrajectoryMean || name == kTrajectoryVariance) return {kChainAxis, kRowAxis, kOutputAxis};
  if (name == kVotes || name == kFraction || name == kProbability) return {kRowAxis, kClassAxis};
  if (name == kPrediction || name == kMemberEntropy) return {kRowAxis};
  if (name == "tracked") return {kChainAxis, kMemberAxis, kPointAxis};  // kTracked, kTrackedRows
  if (name == "tracked_rows") return {kPointAxis};
  return {kRowAxis, kOutputAxis};  // mean, variance, coverage_below, coverage_equal
}

/// The axes of a dataset at `parts` (its path's components), or none when no rule names it.
std::vector<const char*> axes_of(const std::vector<std::string_view>& parts, int rank) {
  if (parts.empty()) return {};
  const std::string_view top = parts.front(), name = parts.back();
  const std::size_t depth = parts.size();
  const bool ensemble_group = top == "ensemble" || top == "deep_ensemble" || top == kStackedName ||
                              (top == "ladder" && depth >= 2 && starts(parts[1], kRungPrefix));
  const std::size_t set_depth = top == "ladder" ? 4 : 3;  // /ladder/rung_k/<set>/<name>
  const bool diagnostics = top == "diagnostics" || (top == "ladder" && depth == 4 && parts[2] == kDiagnosticsName);
  if (depth == 1 && name == "config") return {kTextAxis};
  if (name == "attribute_names" || name == "attribute_values") return {kAttributeAxis};  // any group's mirror
  if (diagnostics) {
    if (starts(name, "pooled_block_") || name == kBlockFirstStep) return {kBlockAxis};
    if (starts(name, "series_")) return {kChainAxis, kMemberAxis};
    if (rank == 2 && starts(name, "block_")) return {kChainAxis, kBlockAxis};
    return {kChainAxis};
  }
  if (ensemble_group && depth == set_depth) return ensemble_axes(name);
  if (ensemble_group && name == kNoiseVariance) return {kOutputAxis};
  if (top == "ladder") {
    if (name == "round_trips" || name == "configuration_held") return {kChainAxis};
    if (name == "exchange_loss" || name == "exchange_swapped") return {kExchangeRoundAxis, kChainAxis};
    if (starts(name, "exchange_")) return {kPairAxis};
  }
  if (top == "data") {
    if (name == "feature_names" || (depth == 3 && (name == "x_min" || name == "x_max"))) return {kFeatureAxis};
    if (name == "target_names" || (depth == 3 && (name == "y_min" || name == "y_max"))) return {kTargetAxis};
    if (name == "class_names") return {kClassAxis};
    if (name == "x") return {kRowAxis, kFeatureAxis};
    if (name == "y") return {kRowAxis, kTargetAxis};
  }
  if (top == "baseline" || top == "initial") {
    if (name == "params" || name == "velocity") return {kChainAxis, kParamAxis};
    if (name == kPrediction) return {kChainAxis, kRowAxis, kOutputAxis};
    return {kChainAxis};
  }
  if (top == "trace") return {kChainAxis, kRecordAxis};
  if (top == "origin" || top == "checksums") return {kChainAxis};
  if (top == "sample_stats") return {kChainAxis, kDrawAxis};
  if (top == "posterior") return {kChainAxis, kDrawAxis, kParamAxis};
  if (top == "selection") return {kCandidateAxis};
  if (top == "model")
    return name == "tensor_shape" ? std::vector<const char*>{kTensorAxis, kTensorAxisAxis}
                                  : std::vector<const char*>{kTensorAxis};
  return {};
}

}  // namespace

std::string axis_name(const std::string& path, int axis, int rank) {
  const auto parts = components(path);
  const auto axes = axes_of(parts, rank);
  if (axis >= 0 && static_cast<std::size_t>(axis) < axes.size()) return axes[static_cast<std::size_t>(axis)];
  // No rule: still a name, never netCDF's phony_dim (tests/analysis/test_netcdf.py fails on it).
  return std::string(parts.empty() ? "dataset" : parts.back()) + kUnnamedAxisSuffix + std::to_string(axis);
}

}  // namespace simmer::run::layout
