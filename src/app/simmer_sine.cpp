// simmer_sine: the noisy-sine retrofit case of docs/METHOD.md §7 end to end on one process, as one
// run::Chain: Adam (2000 epochs) on a 1-20-20-1 tanh network, then simmering with T 0 -> 0.05 by
// 0.01 every 1000 steps, h = 0.002, 10000 steps; the ensemble is the last 3000 steps. Prints
// Adam's and the ensemble's test MSE and the trajectory's stationarity verdict. The same seed
// gives the same numbers as simmer_mpi --config jobs/sine_retrofit.ini with run.seed =
// data.split_seed = seed (simmer_mpi generalises this to any case, many trajectories and ranks).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "simmer/cli/config.hpp"
#include "simmer/cli/problem.hpp"
#include "simmer/core/error.hpp"
#include "simmer/core/runtime.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/run/chain.hpp"
#include "sine_job.hpp"

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
               "Noisy-sine retrofit case (docs/METHOD.md §7): 101 points, 65 train / 36 test,\n"
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
      if (arg == "--seed")
        o.seed = std::stoull(value);
      else if (arg == "--adam-epochs")
        o.adam_epochs = std::stoll(value);
      else if (arg == "--steps")
        o.steps = std::stoll(value);
      else if (arg == "--window")
        o.window = std::stoll(value);
      else
        throw Error("unknown option '" + arg + "' (see --help)");
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

  // The paper's sine case (jobs/sine_retrofit.ini, compiled in); the seed picks data and network.
  cli::Config config;
  cli::apply_ini(kSineJob, "jobs/sine_retrofit.ini", config);
  config.run.trajectories = 1;
  config.run.seed = opt.seed;
  config.data.split_seed = opt.seed;
  config.adam.epochs = opt.adam_epochs;
  config.run.steps = opt.steps;
  config.ensemble.window = opt.window;
  config.simmer.diagnostics.blocks = std::min<std::int64_t>(5, opt.window);
  config.simmer.diagnostics.curvature_report = run::DiagnosticsOptions::CurvatureReport::off;
  const run::Problem problem = cli::build_problem(cli::validated(config, 1));

  run::Chain64 chain(problem, 0);
  chain.train_adam();
  const run::ChainReport adam = chain.report();  // the baseline is Adam's end point
  chain.advance_to(opt.steps);
  const ensemble::EnsemblePartial partial = chain.take_partials().front();  // the one simmering stage
  const ensemble::MeanAccumulator& test_mean = partial.means[1];
  const auto& test = problem.sets[1];
  const double ensemble_test_mse = ensemble::mean_squared_error(view(test_mean.mean()), view(test.y));
  const run::ChainReport report = chain.report();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf("noisy sine, seed %llu: %lld Adam epochs, %lld simmering steps, %lld members\n",
              static_cast<unsigned long long>(opt.seed), static_cast<long long>(opt.adam_epochs),
              static_cast<long long>(opt.steps), static_cast<long long>(test_mean.members()));
  std::printf("  Adam     train SSE %.4f   test MSE %.5f\n", adam.stages.front().start_loss, adam.baseline[1].metric);
  std::printf("  ensemble last SSE  %.4f   test MSE %.5f\n", partial.last_loss, ensemble_test_mse);
  std::printf("  stationarity: %s (%s)\n", ensemble::to_string(report.stages.front().summary.verdict).c_str(),
              report.stages.front().summary.reason.c_str());
  std::printf("  wall time %.2f s\n", seconds);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "simmer_sine: error: " << e.what() << "\n";
  return 1;
}
