#include "simmer/model/activation.hpp"

#include <Eigen/Core>
#include <cmath>

#include "simmer/core/error.hpp"

namespace simmer::model {

Activation parse_activation(const std::string& name) {
  if (name == "linear") return Activation::linear;
  if (name == "tanh") return Activation::tanh;
  if (name == "relu") return Activation::relu;
  if (name == "elu") return Activation::elu;
  if (name == "sigmoid") return Activation::sigmoid;
  throw Error("unknown activation '" + name + "' (choices: tanh, relu, elu, sigmoid, linear)");
}

std::string to_string(Activation a) {
  switch (a) {
    case Activation::linear:
      return "linear";
    case Activation::tanh:
      return "tanh";
    case Activation::relu:
      return "relu";
    case Activation::elu:
      return "elu";
    case Activation::sigmoid:
      return "sigmoid";
  }
  return "?";
}

void fast_tanh(const double* in, double* out, Index n) {
  // tanh|x| = (1 - e) / (1 + e) with e = exp(-2|x|) vectorises through Eigen's pexp. Near 0 the
  // subtraction loses digits, so |x| < 0.02 uses the odd series to x^7 (truncation < 1e-15
  // relative there).
  const Eigen::Map<const Eigen::ArrayXd> x(in, n);
  Eigen::Map<Eigen::ArrayXd> y(out, n);
  constexpr Index kBlock = 256;  // keeps the temporaries on the stack, in L1
  for (Index start = 0; start < n; start += kBlock) {
    const Index len = std::min(kBlock, n - start);
    const auto xs = x.segment(start, len);
    Eigen::Array<double, Eigen::Dynamic, 1, 0, kBlock, 1> a = xs.abs();
    Eigen::Array<double, Eigen::Dynamic, 1, 0, kBlock, 1> e = (-2.0 * a).exp();
    const auto big = (1.0 - e) / (1.0 + e);
    const auto x2 = xs * xs;
    const auto small = a * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0))));
    y.segment(start, len) = (a < 0.02).select(small, big) * xs.sign();
  }
}

void activate(Activation a, const double* in, double* out, Index n) {
  const Eigen::Map<const Eigen::ArrayXd> x(in, n);
  Eigen::Map<Eigen::ArrayXd> y(out, n);
  switch (a) {
    case Activation::linear:
      if (out != in) y = x;
      break;
    case Activation::tanh:
      fast_tanh(in, out, n);
      break;
    case Activation::relu:
      y = x.max(0.0);
      break;
    // max(x,0) + exp(min(x,0)) - 1: no select, so Eigen vectorises the exp (select would
    // evaluate it one scalar at a time).
    case Activation::elu:
      y = x.max(0.0) + (x.min(0.0).exp() - 1.0);
      break;
    case Activation::sigmoid:
      y = 1.0 / (1.0 + (-x).exp());
      break;
  }
}

void activation_gradient(Activation a, const double* y_values, const double* grad_out, double* grad_in, Index n) {
  const Eigen::Map<const Eigen::ArrayXd> y(y_values, n);
  const Eigen::Map<const Eigen::ArrayXd> g(grad_out, n);
  Eigen::Map<Eigen::ArrayXd> gi(grad_in, n);
  switch (a) {
    case Activation::linear:
      if (grad_in != grad_out) gi = g;
      break;
    case Activation::tanh:
      gi = g * (1.0 - y * y);
      break;
    case Activation::relu:
      gi = (y > 0.0).select(g, 0.0);
      break;
    // f'(x) = 1 for x > 0, y + 1 otherwise; both are min(y, 0) + 1.
    case Activation::elu:
      gi = g * (y.min(0.0) + 1.0);
      break;
    case Activation::sigmoid:
      gi = g * y * (1.0 - y);
      break;
  }
}

ActivationLayer::ActivationLayer(Activation a, Index size) : activation_(a), size_(size) {
  if (size <= 0) throw Error("activation layer: size must be positive");
}

void ActivationLayer::forward(ConstBatchView in, BatchView out) {
  activate(activation_, in.data(), out.data(), in.size());
}

void ActivationLayer::backward(ConstBatchView /*in*/, ConstBatchView out, BatchView grad_out, BatchView* grad_in) {
  if (grad_in == nullptr) return;
  activation_gradient(activation_, out.data(), grad_out.data(), grad_in->data(), out.size());
}

}  // namespace simmer::model
