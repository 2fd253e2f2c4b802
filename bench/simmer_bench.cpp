// simmer_bench: one full simmering step (full-batch gradient + NHC update) for the paper's
// networks and batch sizes, and an Eigen GEMM of the same run as the yardstick. Each case
// reports steps/s (items_per_second), its FLOP rate and the fraction of the GEMM's rate.
// Single-threaded by construction (Eigen without OpenMP): ranks are the parallelism.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "simmer/core/runtime.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/train/trajectory.hpp"

using namespace simmer;

namespace {

double g_gemm_flops_per_second = 0.0;  // set by BM_gemm, which runs first

void BM_gemm(benchmark::State& state) {
  const Index n = state.range(0);
  Matrix a = Matrix::Random(n, n), b = Matrix::Random(n, n), c(n, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(n * n * n);
  state.counters["flops"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

/// GEMM FLOP rate measured before the cases run (best of several 1024³ products), so each case
/// can report its fraction of it as a rate counter.
double measure_gemm_rate() {
  const Index n = 1024;
  Matrix a = Matrix::Random(n, n), b = Matrix::Random(n, n), c(n, n);
  c.noalias() = a * b;  // warm-up
  double best = 1e300;
  for (int r = 0; r < 8; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * static_cast<double>(n * n * n) / best;
}

/// Multiply-adds of one forward pass per sample for a dense stack.
double dense_macs(const std::vector<Index>& widths) {
  double macs = 0;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    macs += static_cast<double>(widths[i] * widths[i + 1]);
  }
  return macs;
}

void simmer_step(benchmark::State& state, const std::string& layers, model::Activation act,
                 model::LossKind loss, Index rows) {
  Rng rng(1);
  model::Network net = model::build_network({layers, act, model::Activation::linear});
  net.initialize(model::Init::glorot_normal, rng);
  Matrix x(rows, net.input_size());
  for (Index i = 0; i < x.size(); ++i) x.data()[i] = rng.uniform(-1, 1);
  Matrix y = Matrix::Zero(rows, net.output_size());
  for (Index i = 0; i < rows; ++i) {
    y(i, static_cast<Index>(rng.below(static_cast<std::uint64_t>(net.output_size())))) = 1.0;
  }
  train::NetworkObjective f(net, loss, x, y);
  train::NhcOptions opt;
  opt.time_step = 1e-4;
  train::Trajectory traj(f, opt, train::constant_schedule(1e-3),
                         train::NoseHooverChain(opt, net.parameter_count()).rest_start());
  for (auto _ : state) {
    benchmark::DoNotOptimize(traj.advance());
  }
  // forward + weight gradient + input gradient ≈ 3 GEMM-sized passes (the first layer's input
  // gradient is skipped, which this slightly over-counts for tiny input widths).
  const double flops = 3.0 * 2.0 * dense_macs(model::parse_widths(layers)) * static_cast<double>(rows);
  state.SetItemsProcessed(state.iterations());
  state.counters["flops"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["gemm_fraction"] = benchmark::Counter(
      flops / g_gemm_flops_per_second, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["params"] = static_cast<double>(net.parameter_count());
}

}  // namespace

BENCHMARK(BM_gemm)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simmer_step, sine_1_20_20_1_x65, "1-20-20-1", model::Activation::tanh,
                  model::LossKind::sse, 65);
BENCHMARK_CAPTURE(simmer_step, iris_2_100_50_50_3_x112, "2-100-50-50-3", model::Activation::tanh,
                  model::LossKind::cce, 112);
BENCHMARK_CAPTURE(simmer_step, autompg_6_64_64_1_x315, "6-64-64-1", model::Activation::tanh,
                  model::LossKind::mse, 315);
BENCHMARK_CAPTURE(simmer_step, higgs_28_512x4_1_x10000, "28-512-512-512-512-1",
                  model::Activation::elu, model::LossKind::bce, 10000)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(5.0);

int main(int argc, char** argv) {
  simmer::tune_allocator();
  g_gemm_flops_per_second = measure_gemm_rate();
  benchmark::AddCustomContext("gemm_1024_gflops", std::to_string(g_gemm_flops_per_second / 1e9));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
