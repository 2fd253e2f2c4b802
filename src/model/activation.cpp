#include "simmer/model/activation.hpp"

#include <Eigen/Core>
#include <cmath>
#include <type_traits>

#include "simmer/core/error.hpp"

namespace simmer::model {

template <class S>
void fast_tanh(const S* in, S* out, Index n) {
  using Array = Eigen::Array<S, Eigen::Dynamic, 1>;
  if constexpr (std::is_same_v<S, float>) {
    // Eigen's float tanh is a vectorised rational approximation accurate to a few ulp.
    Eigen::Map<Array>(out, n) = Eigen::Map<const Array>(in, n).tanh();
    return;
  }
  // tanh|x| = (1 - e) / (1 + e) with e = exp(-2|x|) vectorises through Eigen's pexp. Near 0 the
  // subtraction loses digits, so |x| < 0.02 uses the odd series to x^7 (truncation < 1e-15
  // relative there).
  const Eigen::Map<const Array> x(in, n);
  Eigen::Map<Array> y(out, n);
  constexpr Index kBlock = 256;  // keeps the temporaries on the stack, in L1
  for (Index start = 0; start < n; start += kBlock) {
    const Index len = std::min(kBlock, n - start);
    const auto xs = x.segment(start, len);
    Eigen::Array<S, Eigen::Dynamic, 1, 0, kBlock, 1> a = xs.abs();
    Eigen::Array<S, Eigen::Dynamic, 1, 0, kBlock, 1> e = (S(-2) * a).exp();
    const auto big = (S(1) - e) / (S(1) + e);
    const auto x2 = xs * xs;
    const auto small = a * (S(1) + x2 * (S(-1.0 / 3.0) + x2 * (S(2.0 / 15.0) + x2 * S(-17.0 / 315.0))));
    y.segment(start, len) = (a < S(0.02)).select(small, big) * xs.sign();
  }
}

template <class S>
void activate(Activation a, const S* in, S* out, Index n) {
  using Array = Eigen::Array<S, Eigen::Dynamic, 1>;
  const Eigen::Map<const Array> x(in, n);
  Eigen::Map<Array> y(out, n);
  const S zero(0), one(1);
  switch (a) {
    case Activation::linear:
      if (out != in) y = x;
      break;
    case Activation::tanh:
      fast_tanh(in, out, n);
      break;
    case Activation::relu:
      y = x.max(zero);
      break;
    // max(x,0) + exp(min(x,0)) - 1: no select, so Eigen vectorises the exp (select would
    // evaluate it one scalar at a time).
    case Activation::elu:
      y = x.max(zero) + (x.min(zero).exp() - one);
      break;
    case Activation::sigmoid:
      y = one / (one + (-x).exp());
      break;
  }
}

template <class S>
void activation_gradient(Activation a, const S* y_values, const S* grad_out, S* grad_in, Index n) {
  using Array = Eigen::Array<S, Eigen::Dynamic, 1>;
  const Eigen::Map<const Array> y(y_values, n);
  const Eigen::Map<const Array> g(grad_out, n);
  Eigen::Map<Array> gi(grad_in, n);
  const S zero(0), one(1);
  switch (a) {
    case Activation::linear:
      if (grad_in != grad_out) gi = g;
      break;
    case Activation::tanh:
      gi = g * (one - y * y);
      break;
    case Activation::relu:
      gi = (y > zero).select(g, zero);
      break;
    // f'(x) = 1 for x > 0, y + 1 otherwise; both are min(y, 0) + 1.
    case Activation::elu:
      gi = g * (y.min(zero) + one);
      break;
    case Activation::sigmoid:
      gi = g * y * (one - y);
      break;
  }
}

template <class S>
BasicActivationLayer<S>::BasicActivationLayer(Activation a, Index size) : activation_(a), size_(size) {
  if (size <= 0) throw Error("activation layer: size must be positive");
}

template <class S>
void BasicActivationLayer<S>::forward(ConstBatchView in, BatchView out) {
  activate(activation_, in.data(), out.data(), in.size());
}

template <class S>
void BasicActivationLayer<S>::backward(ConstBatchView /*in*/, ConstBatchView out, BatchView grad_out,
                                       BatchView* grad_in) {
  if (grad_in == nullptr) return;
  activation_gradient(activation_, out.data(), grad_out.data(), grad_in->data(), out.size());
}

#define SIMMER_INSTANTIATE(S)                                                   \
  template void fast_tanh(const S*, S*, Index);                                 \
  template void activate(Activation, const S*, S*, Index);                      \
  template void activation_gradient(Activation, const S*, const S*, S*, Index); \
  template class BasicActivationLayer<S>;
SIMMER_INSTANTIATE(double)
SIMMER_INSTANTIATE(float)
#undef SIMMER_INSTANTIATE

}  // namespace simmer::model
