// simmer_sine: the noisy-sine retrofit case of SIMMERING.md §7 end to end on one process.
// Adam (2000 epochs) on a 1-20-20-1 tanh network, then simmering with T 0 -> 0.05 by 0.01 every
// 1000 steps, h = 0.002, 10000 steps; the ensemble is the last 3000 steps. Prints Adam's and the
// ensemble's test MSE. (simmer_mpi generalises this to any case, many trajectories and ranks.)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "simmer/core/runtime.hpp"
#include "simmer/core/error.hpp"
#include "simmer/data/dataset.hpp"
#include "simmer/data/scaler.hpp"
#include "simmer/data/sine.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/ensemble/sampling.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/train/adam.hpp"
#include "simmer/train/trajectory.hpp"

using namespace simmer;

namespace {

struct Options {
  std::uint64_t seed = 1;
  std::int64_t adam_epochs = 2000;
  std::int64_t steps = 10000;
  std::int64_t window = 3000;
};

void usage() {
  std::cout << "usage: simmer_sine [--seed N] [--adam-epochs N] [--steps N] [--window N]\n"
               "Noisy-sine retrofit case (SIMMERING.md §7): 101 points, 65 train / 36 test,\n"
               "1-20-20-1 tanh, SSE; Adam lr 0.002 full batch, then simmering h 0.002 with T\n"
               "0 -> 0.05 by 0.01 every 1000 steps; ensemble = mean over the last `window` steps.\n"
               "Defaults: seed 1, adam-epochs 2000, steps 10000, window 3000.\n";
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage();
      std::exit(0);
    }
    if (i + 1 >= argc) throw Error("option '" + arg + "' needs a value (see --help)");
    const std::string value = argv[++i];
    try {
      if (arg == "--seed") o.seed = std::stoull(value);
      else if (arg == "--adam-epochs") o.adam_epochs = std::stoll(value);
      else if (arg == "--steps") o.steps = std::stoll(value);
      else if (arg == "--window") o.window = std::stoll(value);
      else throw Error("unknown option '" + arg + "' (see --help)");
    } catch (const std::logic_error&) {
      throw Error("option '" + arg + "' = '" + value + "': not an integer");
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  tune_allocator();
  const Options opt = parse(argc, argv);
  const auto t0 = std::chrono::steady_clock::now();

  // The named streams of core/rng.hpp, as simmer_mpi uses them with run.seed = data.split_seed
  // = --seed (trajectory 0): the same seed gives the same data, network and members.
  const auto named = [&](RngPurpose purpose) { return Rng::named(opt.seed, 0, purpose); };
  Rng noise_rng = named(RngPurpose::data_noise);
  const data::Dataset all = data::make_noisy_sine({}, noise_rng);
  Rng split_rng = named(RngPurpose::data_split);
  const data::Split split = data::split_by_count(all.rows(), 65, 36, split_rng);
  const data::Dataset train = data::subset(all, split.train);
  const data::Dataset test = data::subset(all, split.test);
  const auto x_scaler = data::MinMaxScaler::fit(train.x);
  const auto y_scaler = data::MinMaxScaler::fit(train.y);
  const Matrix x_train = x_scaler.transform(train.x);
  const Matrix x_test = x_scaler.transform(test.x);

  model::Network net = model::build_network({"1-20-20-1", model::Activation::tanh,
                                             model::Activation::linear});
  Rng init_rng = named(RngPurpose::initialization);
  net.initialize(model::Init::glorot_normal, init_rng);
  train::NetworkObjective objective(net, model::LossKind::sse, x_train, train.y,
                                    y_scaler.scale(), y_scaler.offset());

  train::AdamOptions adam;
  adam.epochs = opt.adam_epochs;
  train::AdamState adam_state = train::AdamState::zeros(net.parameter_count());
  Rng minibatch_rng = named(RngPurpose::minibatch);
  train::train_adam(adam, adam_state, objective, minibatch_rng);
  const double adam_test_mse =
      ensemble::mean_squared_error(objective.predict(view(x_test)), view(test.y));
  const double adam_train_loss = objective.evaluate(net.parameters());

  train::NhcOptions nhc;
  nhc.time_step = 0.002;
  const train::StepRamp ramp{0.0, 0.05, 0.01, 1000};
  train::NoseHooverChain start_builder(nhc, net.parameter_count());
  train::Trajectory trajectory(objective, nhc, train::ramp_schedule(ramp),
                               start_builder.retrofit_start(net.parameters(), adam_state.previous));
  ensemble::SamplingOptions sampling;
  sampling.window = opt.window;
  Rng sample_rng = named(RngPurpose::sampling);
  const auto members = ensemble::select_sample_steps(opt.steps, sampling, sample_rng);
  ensemble::MeanAccumulator test_mean(x_test.rows(), 1);
  std::size_t next = 0;
  double last_loss = 0.0;
  for (std::int64_t s = 0; s < opt.steps; ++s) {
    last_loss = trajectory.advance().half_step_loss;
    if (next < members.size() && members[next] == s) {
      test_mean.add(objective.predict(view(x_test)));
      ++next;
    }
  }
  const double ensemble_test_mse =
      ensemble::mean_squared_error(view(test_mean.mean()), view(test.y));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf("noisy sine, seed %llu: %lld Adam epochs, %lld simmering steps, %lld members\n",
              static_cast<unsigned long long>(opt.seed), static_cast<long long>(opt.adam_epochs),
              static_cast<long long>(opt.steps), static_cast<long long>(test_mean.members()));
  std::printf("  Adam     train SSE %.4f   test MSE %.5f\n", adam_train_loss, adam_test_mse);
  std::printf("  ensemble last SSE  %.4f   test MSE %.5f\n", last_loss, ensemble_test_mse);
  std::printf("  wall time %.2f s\n", seconds);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "simmer_sine: error: " << e.what() << "\n";
  return 1;
}
