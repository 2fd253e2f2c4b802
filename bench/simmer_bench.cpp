// simmer_bench: one full simmering step (full-batch gradient + NHC update) for the paper's
// networks and batch sizes, in float64 and float32 (run.precision), and an Eigen GEMM of each
// precision of the same run as the yardstick. Each case reports steps/s (items_per_second), its
// FLOP rate and the fraction of the GEMM rate of its precision (gemm_fraction).
// Single-threaded by construction (Eigen without OpenMP): ranks are the parallelism.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "simmer/core/runtime.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/model/conv_block.hpp"
#include "simmer/model/pool.hpp"
#include "simmer/train/trajectory.hpp"

using namespace simmer;

namespace {

double g_gemm_flops_per_second[2] = {0.0, 0.0};  // float64, float32: measured before the cases

template <class S>
double& gemm_rate() {
  return g_gemm_flops_per_second[sizeof(S) == 4 ? 1 : 0];
}

template <class S>
void BM_gemm(benchmark::State& state) {
  using Matrix = MatrixOf<S>;
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
template <class S>
double measure_gemm_rate() {
  using Matrix = MatrixOf<S>;
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

/// Times simmering steps of `net` (initialised here) on `rows` uniform random inputs with random
/// one-hot targets under `loss`, and reports steps/s, the FLOP rate of `flops` per step and its
/// fraction of the GEMM rate. `untimed_first_step`: one step before timing, for networks whose
/// first pass touches hundreds of MB of activation and gradient buffers for the first time
/// (those page faults, seconds on a VM, are no part of a step).
template <class S>
void time_steps(benchmark::State& state, model::BasicNetwork<S>& net, model::LossKind loss, Index rows, double flops,
                bool untimed_first_step, train::Thermostat thermostat = train::Thermostat::nose_hoover_chain) {
  using Matrix = MatrixOf<S>;
  Rng rng(1);
  net.initialize(model::Init::glorot_normal, rng);
  Matrix x(rows, net.input_size());
  for (Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<S>(rng.uniform(-1, 1));
  Matrix y = Matrix::Zero(rows, net.output_size());
  for (Index i = 0; i < rows; ++i) {
    y(i, static_cast<Index>(rng.below(static_cast<std::uint64_t>(net.output_size())))) = 1.0;
  }
  train::BasicNetworkObjective<S> f(net, loss, x, y);
  train::NhcOptions opt;
  opt.time_step = 1e-4;
  opt.thermostat = thermostat;
  train::BasicTrajectory<S> traj(f, opt, train::constant_schedule(1e-3),
                                 train::BasicNoseHooverChain<S>(opt, net.parameter_count()).rest_start());
  Rng noise(2);
  traj.set_noise(&noise);
  if (untimed_first_step) traj.advance();
  for (auto _ : state) {
    benchmark::DoNotOptimize(traj.advance());
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["flops"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["gemm_fraction"] =
      benchmark::Counter(flops / gemm_rate<S>(), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["params"] = static_cast<double>(net.parameter_count());
}

template <class S>
void simmer_step(benchmark::State& state, const std::string& layers, model::Activation act, model::LossKind loss,
                 Index rows, train::Thermostat thermostat) {
  model::BasicNetwork<S> net = model::build_network<S>({layers, act, model::Activation::linear});
  // forward + weight gradient + input gradient ≈ 3 GEMM-sized passes (the first layer's input
  // gradient is skipped, which this slightly over-counts for tiny input widths).
  const double flops = 3.0 * 2.0 * dense_macs(model::parse_widths(layers)) * static_cast<double>(rows);
  time_steps(state, net, loss, rows, flops, false, thermostat);
}

/// Multiply-adds per sample of one layer's GEMM in the forward pass: a dense kernel's
/// fan_in·fan_out, a convolution's out pixels · kh·kw·c_in·filters (the kernel's size times the
/// output positions). Zero for layers without a kernel.
template <class S>
double layer_macs(const model::BasicLayer<S>& layer) {
  if (const auto* block = dynamic_cast<const model::BasicConvBlock<S>*>(&layer)) {
    return layer_macs(block->conv());  // the convolution's outputs, before pooling
  }
  const auto tensors = layer.tensors();
  if (tensors.empty() || tensors.front().shape.empty()) return 0.0;
  const auto& kernel = tensors.front();
  const Index outputs_per_position = kernel.shape.back();
  return static_cast<double>(layer.output_size() / outputs_per_position) * static_cast<double>(kernel.size());
}

/// LeNet-5 (28×28×1 → 10 classes, CCE) on a batch of `rows` images: one simmering step.
/// FLOPs counted: 2·MACs of every conv/dense GEMM for the forward pass and for the weight
/// gradient, plus the input-gradient GEMM for every layer but the first (the network skips
/// that one). Bias adds, im2col/col2im, activations and pooling are work but not counted.
template <class S>
void lenet_step(benchmark::State& state, model::Activation act, model::PoolKind pooling, Index rows) {
  model::BasicNetwork<S> net = model::build_lenet5<S>(28, 28, 1, 10, act, pooling);
  double macs = 0.0;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    macs += (i == 0 ? 2.0 : 3.0) * layer_macs(*net.layers()[i]);
  }
  time_steps(state, net, model::LossKind::cce, rows, 2.0 * macs * static_cast<double>(rows), true);
}

/// Every case in S; names end in `suffix` ("" for float64, "_f32" for float32).
template <class S>
void register_cases(const std::string& suffix) {
  using model::Activation, model::LossKind, model::PoolKind;
  benchmark::RegisterBenchmark(("BM_gemm" + suffix).c_str(), BM_gemm<S>)->Arg(1024)->Unit(benchmark::kMillisecond);
  const auto mlp = [&](const std::string& name, const std::string& layers, Activation act, LossKind loss, Index rows,
                       train::Thermostat thermostat = train::Thermostat::nose_hoover_chain) {
    // The default thermostat's cases keep their names; another's end in its name.
    const std::string tail = thermostat == train::Thermostat::nose_hoover_chain
                                 ? ""
                                 : "_" + std::string(train::kThermostatNames.name(thermostat));
    return benchmark::RegisterBenchmark(("simmer_step/" + name + tail + suffix).c_str(), [=](benchmark::State& st) {
      simmer_step<S>(st, layers, act, loss, rows, thermostat);
    });
  };
  mlp("sine_1_20_20_1_x65", "1-20-20-1", Activation::tanh, LossKind::sse, 65);
  mlp("iris_2_100_50_50_3_x112", "2-100-50-50-3", Activation::tanh, LossKind::cce, 112);
  mlp("autompg_6_64_64_1_x315", "6-64-64-1", Activation::tanh, LossKind::mse, 315);
  for (const auto thermostat : {train::Thermostat::langevin, train::Thermostat::massive_nose_hoover_langevin}) {
    mlp("sine_1_20_20_1_x65", "1-20-20-1", Activation::tanh, LossKind::sse, 65, thermostat);
    mlp("autompg_6_64_64_1_x315", "6-64-64-1", Activation::tanh, LossKind::mse, 315, thermostat);
  }
  mlp("higgs_28_512x4_1_x10000", "28-512-512-512-512-1", Activation::elu, LossKind::bce, 10000)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(5.0);
  // ReLU with average pooling is jobs/mnist_retrofit.ini's network; max pooling the common variant.
  for (const auto& [name, pooling] : {std::pair{"avg", PoolKind::average}, std::pair{"max", PoolKind::max}}) {
    const PoolKind pool = pooling;
    benchmark::RegisterBenchmark(("lenet_step/lenet5_28x28x1_relu_" + std::string(name) + "_x10000" + suffix).c_str(),
                                 [=](benchmark::State& st) { lenet_step<S>(st, Activation::relu, pool, 10000); })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(5.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  simmer::tune_allocator();
  gemm_rate<double>() = measure_gemm_rate<double>();
  gemm_rate<float>() = measure_gemm_rate<float>();
  benchmark::AddCustomContext("gemm_1024_gflops", std::to_string(gemm_rate<double>() / 1e9));
  benchmark::AddCustomContext("gemm_1024_gflops_f32", std::to_string(gemm_rate<float>() / 1e9));
  register_cases<double>("");
  register_cases<float>("_f32");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
