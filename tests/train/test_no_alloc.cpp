// "No allocation per step": a simmering step and an Adam epoch, after warm-up, make no heap
// allocation. glibc lets the executable interpose malloc and friends; this binary counts them
// while a flag is set (its own test executable, so no other test pays for the counting).
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>

#include "simmer/model/architecture.hpp"
#include "simmer/model/pool.hpp"
#include "simmer/train/adam.hpp"
#include "simmer/train/trajectory.hpp"

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
}

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
void count() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
}
}  // namespace

extern "C" {
void* malloc(std::size_t n) {
  count();
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t s) {
  count();
  return __libc_calloc(n, s);
}
void* realloc(void* p, std::size_t n) {
  count();
  return __libc_realloc(p, n);
}
int posix_memalign(void** p, std::size_t align, std::size_t n) {
  count();
  *p = __libc_memalign(align, n);
  return *p == nullptr ? 12 : 0;
}
}

using namespace simmer;

/// Heap allocations during `steps` simmering steps and `epochs` more Adam epochs on `f`, after a
/// warm-up of 3 steps and `warm_epochs` epochs (thread-local scratch, first use).
template <class S>
static long hot_loop_allocations(train::BasicNetworkObjective<S>& f, Index params, Rng& rng, int warm_epochs, int steps,
                                 int epochs) {
  train::NhcOptions opt;
  opt.time_step = 1e-3;
  train::BasicTrajectory<S> traj(f, opt, train::ramp_schedule({0.0, 0.01, 0.001, 10}),
                                 train::BasicNoseHooverChain<S>(opt, params).rest_start());
  train::AdamOptions adam;
  adam.epochs = warm_epochs;
  train::BasicAdamState<S> state = train::BasicAdamState<S>::zeros(params);
  for (int s = 0; s < 3; ++s) traj.advance();
  train::train_adam(adam, state, f, rng);
  adam.epochs = warm_epochs + epochs;
  g_allocations = 0;
  g_counting = true;
  for (int s = 0; s < steps; ++s) traj.advance();
  train::train_adam(adam, state, f, rng);
  g_counting = false;
  return g_allocations.load();
}

TEST_CASE("the allocation counter sees Eigen and std allocations", "[alloc]") {
  g_allocations = 0;
  g_counting = true;
  {
    Vector v(1000);
    std::vector<double> w(10);
    v.setZero();
    w[0] = v(0);
  }
  g_counting = false;
  CHECK(g_allocations.load() == 2);
}

template <class S>
static long mlp_allocations(model::LossKind loss, Index chunks) {
  using Matrix = MatrixOf<S>;
  const Index outputs = loss == model::LossKind::bce ? 1 : 3;
  Rng rng(4);
  model::BasicNetwork<S> net = model::build_network<S>(
      {"2-100-50-50-" + std::to_string(outputs), model::Activation::tanh, model::Activation::linear});
  net.initialize(model::Init::glorot_normal, rng);
  Matrix x(112, 2), y = Matrix::Zero(112, outputs);
  for (Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<S>(rng.uniform(-1, 1));
  for (Index i = 0; i < 112; ++i) y(i, static_cast<Index>(rng.below(static_cast<std::uint64_t>(outputs)))) = 1;
  Eigen::RowVectorXd scale, offset;
  if (loss == model::LossKind::sse || loss == model::LossKind::mse) {
    scale = Eigen::RowVectorXd::Constant(outputs, 3.0);
    offset = Eigen::RowVectorXd::Constant(outputs, 1.0);
  }
  train::BasicNetworkObjective<S> f(net, loss, x, y, scale, offset);
  f.set_gradient_chunks(chunks);
  return hot_loop_allocations(f, net.parameter_count(), rng, 3, 50, 50);
}

TEST_CASE("a simmering step and an Adam epoch allocate nothing", "[alloc]") {
  const auto loss = GENERATE(model::LossKind::sse, model::LossKind::mse, model::LossKind::cce, model::LossKind::bce);
  const Index chunks = GENERATE(1, 4);  // 4: the full batch as a tree sum of row blocks (sharded gradients)
  INFO("loss " << model::to_string(loss) << ", seed 4, gradient chunks " << chunks);
  CHECK(mlp_allocations<double>(loss, chunks) == 0);
}

TEST_CASE("float32: a simmering step and an Adam epoch allocate nothing", "[alloc][float32]") {
  const auto loss = GENERATE(model::LossKind::sse, model::LossKind::mse, model::LossKind::cce, model::LossKind::bce);
  const Index chunks = GENERATE(1, 4);
  INFO("loss " << model::to_string(loss) << ", seed 4, gradient chunks " << chunks << ", float32");
  CHECK(mlp_allocations<float>(loss, chunks) == 0);
}

TEST_CASE("massive Nose-Hoover-Langevin with parameter masses: a step allocates nothing", "[alloc][nhl]") {
  Rng rng(4);
  model::Network net =
      model::build_network<double>({"2-100-50-50-1", model::Activation::tanh, model::Activation::linear});
  net.initialize(model::Init::glorot_normal, rng);
  Matrix x(112, 2), y(112, 1);
  for (Index i = 0; i < x.size(); ++i) x.data()[i] = rng.uniform(-1, 1);
  for (Index i = 0; i < y.size(); ++i) y.data()[i] = rng.uniform(-1, 1);
  train::NetworkObjective f(net, model::LossKind::mse, x, y, Eigen::RowVectorXd(), Eigen::RowVectorXd());
  train::NhcOptions opt;
  opt.time_step = 1e-3;
  opt.thermostat = train::Thermostat::massive_nose_hoover_langevin;
  opt.parameter_masses = Vector::Constant(net.parameter_count(), 2.0);
  train::Trajectory traj(f, opt, train::ramp_schedule({0.01, 0.01, 0.0, 10}),
                         train::NoseHooverChain(opt, net.parameter_count()).thermal_start(0.01, rng));
  traj.set_noise(&rng);
  for (int s = 0; s < 3; ++s) traj.advance();
  g_allocations = 0;
  g_counting = true;
  for (int s = 0; s < 50; ++s) traj.advance();
  g_counting = false;
  CHECK(g_allocations.load() == 0);
}

TEST_CASE("Adam with mini-batches allocates nothing per epoch", "[alloc]") {
  // 112 rows in batches of 32: three full batches and a partial one per epoch. train_adam keeps
  // the epoch's shuffled order and the batch's row list from epoch to epoch, so a call
  // allocates those two once whatever its number of epochs.
  // (CCE's per-row scratch used to be re-allocated whenever the batch size changed.)
  const auto loss = GENERATE(model::LossKind::mse, model::LossKind::cce, model::LossKind::bce);
  INFO("loss " << model::to_string(loss) << ", seed 5");
  const Index outputs = loss == model::LossKind::bce ? 1 : 3;
  Rng rng(5);
  model::Network net = model::build_network(
      {"2-100-50-50-" + std::to_string(outputs), model::Activation::tanh, model::Activation::linear});
  net.initialize(model::Init::glorot_normal, rng);
  Matrix x(112, 2), y = Matrix::Zero(112, outputs);
  for (Index i = 0; i < x.size(); ++i) x.data()[i] = rng.uniform(-1, 1);
  for (Index i = 0; i < 112; ++i) {
    y(i, static_cast<Index>(rng.below(static_cast<std::uint64_t>(outputs)))) = 1;
  }
  train::NetworkObjective f(net, loss, x, y);
  train::AdamOptions adam;
  adam.batch_size = 32;
  adam.epochs = 3;
  train::AdamState state = train::AdamState::zeros(net.parameter_count());
  train::train_adam(adam, state, f, rng);  // warm-up: the objective's batch buffers, the network
  const auto allocations_of = [&](int epochs) {
    adam.epochs = state.epoch + epochs;
    g_allocations = 0;
    g_counting = true;
    train::train_adam(adam, state, f, rng);
    g_counting = false;
    return g_allocations.load();
  };
  const long one = allocations_of(1);
  const long fifty = allocations_of(50);
  CHECK(one <= 2);
  CHECK(fifty == one);
}

TEST_CASE("LeNet-5's image layers allocate nothing in forward and backward", "[alloc]") {
  // The two conv blocks (direct and im2col convolutions with their activations and pooling)
  // and flatten, on a batch that splits into a partial last chunk. The dense head is left out
  // here: see below.
  const auto pooling = GENERATE(model::PoolKind::average, model::PoolKind::max);
  // relu: average pooling keeps a byte mask instead of the activations.
  const auto activation = GENERATE(model::Activation::tanh, model::Activation::relu);
  INFO("pooling " << model::to_string(pooling) << ", " << model::to_string(activation) << ", seed 6");
  Rng rng(6);
  model::Network net = model::build_lenet5(28, 28, 1, 10, activation, pooling);
  net.initialize(model::Init::glorot_uniform, rng);
  const Index rows = 5;
  net.reserve(rows);
  const auto& layers = net.layers();
  std::vector<Matrix> values(1, Matrix(rows, net.input_size()));
  for (Index i = 0; i < values[0].size(); ++i) values[0].data()[i] = rng.uniform(-1, 1);
  std::vector<Matrix> grads(1, Matrix(rows, net.input_size()));
  for (const auto& layer : layers) {
    values.emplace_back(rows, layer->output_size());
    grads.emplace_back(rows, layer->output_size());
  }
  std::size_t head = 0;  // the first dense layer (kind() builds a string: not while counting)
  while (head < layers.size() && layers[head]->kind() != "dense") ++head;
  for (int pass = 0; pass < 2; ++pass) {  // the first pass is warm-up
    g_allocations = 0;
    g_counting = pass == 1;
    for (std::size_t i = 0; i < head; ++i) {
      BatchView out(values[i + 1].data(), rows, values[i + 1].cols());
      layers[i]->forward(view(values[i]), out);
      BatchView grad_out(grads[i + 1].data(), rows, grads[i + 1].cols());
      grad_out.setOnes();
      BatchView grad_in(grads[i].data(), rows, grads[i].cols());
      layers[i]->backward(view(values[i]), view(values[i + 1]), grad_out, &grad_in);
    }
    g_counting = false;
  }
  CHECK(g_allocations.load() == 0);
}

// Eigen's own product allocates its packing buffers per call above 128 kB (LeNet-5's 400 × 120
// layer on a batch); Dense and Conv2D take them from a GemmWorkspace sized in reserve().
TEST_CASE("LeNet-5: a simmering step and an Adam epoch allocate nothing", "[alloc]") {
  const auto pooling = GENERATE(model::PoolKind::average, model::PoolKind::max);
  INFO("pooling " << model::to_string(pooling) << ", seed 8");
  Rng rng(8);
  model::Network net = model::build_lenet5(28, 28, 1, 10, model::Activation::tanh, pooling);
  net.initialize(model::Init::glorot_uniform, rng);
  const Index rows = 16;
  Matrix x(rows, 28 * 28), y = Matrix::Zero(rows, 10);
  for (Index i = 0; i < x.size(); ++i) x.data()[i] = rng.uniform(-1, 1);
  for (Index i = 0; i < rows; ++i) y(i, static_cast<Index>(rng.below(10))) = 1;
  train::NetworkObjective f(net, model::LossKind::cce, x, y);
  CHECK(hot_loop_allocations(f, net.parameter_count(), rng, 2, 5, 5) == 0);
}

TEST_CASE("float32 LeNet-5: a simmering step and an Adam epoch allocate nothing", "[alloc][float32]") {
  const auto pooling = GENERATE(model::PoolKind::average, model::PoolKind::max);
  INFO("pooling " << model::to_string(pooling) << ", seed 8, float32");
  Rng rng(8);
  model::BasicNetwork<float> net = model::build_lenet5<float>(28, 28, 1, 10, model::Activation::tanh, pooling);
  net.initialize(model::Init::glorot_uniform, rng);
  const Index rows = 16;
  MatrixOf<float> x(rows, 28 * 28), y = MatrixOf<float>::Zero(rows, 10);
  for (Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(rng.uniform(-1, 1));
  for (Index i = 0; i < rows; ++i) y(i, static_cast<Index>(rng.below(10))) = 1;
  train::BasicNetworkObjective<float> f(net, model::LossKind::cce, x, y);
  CHECK(hot_loop_allocations(f, net.parameter_count(), rng, 2, 5, 5) == 0);
}
