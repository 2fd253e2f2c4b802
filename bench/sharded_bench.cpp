// simmer_bench_sharded: one simmering step of the HIGGS network (28-512×4-1 ELU, BCE, 10 000
// rows) with its full-batch gradient shared by the ranks of MPI_COMM_WORLD
// (run.ranks_per_trajectory = k = the rank count, run.gradient_chunks = 2 unless k is larger),
// in float64 and float32. Run it as `mpirun -n 1` (k = 1) and `mpirun -n 2` (k = 2) and compare
// the items_per_second; `exchange_ms` is the MPI_Allgather's wall time per step (waiting for the
// slowest rank included). Rank 0 reports (Google Benchmark's output and --benchmark_format=json);
// every rank runs the same fixed number of steps, since each step is collective.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <string>

#include "simmer/core/runtime.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/parallel/collectives.hpp"
#include "simmer/train/trajectory.hpp"

using namespace simmer;

namespace {

double g_gemm_rate[2] = {0.0, 0.0};  // float64, float32: FLOP/s of a 1024³ product, best of 5

template <class S>
double measure_gemm_rate() {
  using Matrix = MatrixOf<S>;
  const Index n = 1024;
  Matrix a = Matrix::Random(n, n), b = Matrix::Random(n, n), c(n, n);
  c.noalias() = a * b;
  double best = 1e300;
  for (int r = 0; r < 5; ++r) {
    const double t0 = MPI_Wtime();
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    best = std::min(best, MPI_Wtime() - t0);
  }
  return 2.0 * static_cast<double>(n * n * n) / best;
}

class Silent final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

template <class S>
void sharded_step(benchmark::State& state) {
  using Matrix = MatrixOf<S>;
  const Index rows = 10000;
  model::BasicNetwork<S> net =
      model::build_network<S>({"28-512-512-512-512-1", model::Activation::elu, model::Activation::linear});
  Rng rng(1);
  net.initialize(model::Init::glorot_normal, rng);
  Matrix x(rows, 28), y(rows, 1);
  for (Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<S>(rng.uniform(-1, 1));
  for (Index i = 0; i < rows; ++i) y(i, 0) = rng.uniform() < 0.5 ? S(0) : S(1);
  parallel::GroupGradients group(MPI_COMM_WORLD);
  train::BasicNetworkObjective<S> f(net, model::LossKind::bce, x, y);
  f.set_gradient_chunks(std::max(2, group.parts()), group.parts() > 1 ? &group : nullptr);
  train::NhcOptions opt;
  opt.time_step = 1e-4;
  train::BasicTrajectory<S> traj(f, opt, train::constant_schedule(1e-3),
                                 train::BasicNoseHooverChain<S>(opt, net.parameter_count()).rest_start());
  traj.advance();  // first touch of the buffers (page faults are no part of a step)
  const double exchange0 = group.seconds();
  const auto exchanges0 = group.exchanges();
  for (auto _ : state) benchmark::DoNotOptimize(traj.advance());
  state.SetItemsProcessed(state.iterations());
  const double per_step = (group.seconds() - exchange0) / static_cast<double>(state.iterations());
  state.counters["exchange_ms"] = 1e3 * per_step;
  state.counters["exchanges_per_step"] =
      static_cast<double>(group.exchanges() - exchanges0) / static_cast<double>(state.iterations());
  state.counters["ranks_per_trajectory"] = group.parts();
  // This rank's share of forward + weight gradient + input gradient, against its GEMM rate.
  const double macs = 28.0 * 512 + 3 * 512.0 * 512 + 512.0;
  const double flops = 3.0 * 2.0 * macs * static_cast<double>(rows) / group.parts();
  state.counters["gemm_fraction"] =
      benchmark::Counter(flops / g_gemm_rate[sizeof(S) == 4 ? 1 : 0], benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  simmer::tune_allocator();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  g_gemm_rate[0] = measure_gemm_rate<double>();
  g_gemm_rate[1] = measure_gemm_rate<float>();
  benchmark::RegisterBenchmark("sharded_step/higgs_28_512x4_1_x10000", sharded_step<double>)
      ->Iterations(20)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("sharded_step/higgs_28_512x4_1_x10000_f32", sharded_step<float>)
      ->Iterations(40)
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    Silent silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}
