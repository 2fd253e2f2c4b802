#pragma once
/// \file
/// Everything a run needs that follows from the configuration and the data alone, identical on
/// every rank: the split data in raw and scaled units, the evaluation sets, the scalers and
/// the model/loss settings. No MPI, no HDF5.

#include <string>
#include <vector>

#include "simmer/cli/config.hpp"
#include "simmer/data/dataset.hpp"
#include "simmer/data/scaler.hpp"
#include "simmer/ensemble/sampling.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/model/loss.hpp"
#include "simmer/train/adam.hpp"
#include "simmer/train/nhc.hpp"
#include "simmer/train/posterior.hpp"
#include "simmer/train/schedule.hpp"
#include "simmer/train/trajectory.hpp"

namespace simmer::app {

/// A set of inputs every ensemble member is evaluated on.
struct EvalSet {
  std::string name;                  ///< "train", "test", "points"
  Matrix x_raw;                      ///< raw units
  Matrix x;                          ///< scaled to the network's input range
  Matrix y;                          ///< raw targets (one-hot, or 0/1 for BCE); empty for points
  std::vector<std::int64_t> labels;  ///< classification truth (empty for points)
  [[nodiscard]] bool has_targets() const { return y.rows() > 0; }
  [[nodiscard]] Index rows() const { return x.rows(); }
};

struct Problem {
  cli::Config config;
  data::Dataset train;  ///< raw units
  data::Dataset test;
  data::MinMaxScaler x_scaler;
  data::MinMaxScaler y_scaler;  ///< regression only
  std::vector<EvalSet> sets;    ///< train, test, then optional points
  bool classification = false;
  Index outputs = 0;            ///< network outputs (classes, 1 for BCE, or targets)
  Index classes = 0;            ///< classification: classes that vote (2 for BCE's one logit)
  std::int64_t rows_read = 0;
  std::int64_t rows_dropped = 0;

  model::ArchitectureSpec architecture;
  model::LossKind loss = model::LossKind::sse;
  model::Init init = model::Init::glorot_normal;
  train::StartMode mode = train::StartMode::retrofit;
  train::AdamOptions adam;
  train::NhcOptions nhc;      ///< masses resolved (martyna), prior precisions filled
  train::StepRamp ramp;       ///< in loss units (temperature_unit = posterior already applied)
  train::StartVelocity start_velocity = train::StartVelocity::adam;
  ensemble::SamplingOptions sampling;
  Index parameters = 0;
  /// T_Bayes of the loss on the training set (NaN: a regression loss without simmer.noise_sd).
  double bayes_temperature = 0.0;
  /// sqrt(mean σ_i²) of the Gaussian prior (NaN without one).
  double prior_rms = 0.0;
  enum class CurvatureReport { off, start, start_end } curvature_report = CurvatureReport::start;

  /// Output un-scaling for the objective (empty for classification).
  Eigen::RowVectorXd output_scale;
  Eigen::RowVectorXd output_offset;
};

/// Loads and splits the data and checks it against the model (architecture input/output sizes,
/// tracked indices, extra points' columns). Throws simmer::Error naming the key and value.
Problem build_problem(const cli::Config& validated_config);

}  // namespace simmer::app
