#include "simmer/model/dense.hpp"

#include "simmer/core/error.hpp"
#include "simmer/model/initializer.hpp"

namespace simmer::model {

Index TensorSpec::size() const {
  Index s = 1;
  for (const Index d : shape) s *= d;
  return s;
}

Index Layer::parameter_count() const {
  Index n = 0;
  for (const auto& t : tensors()) n += t.size();
  return n;
}

Dense::Dense(Index fan_in, Index fan_out) : fan_in_(fan_in), fan_out_(fan_out) {
  if (fan_in <= 0 || fan_out <= 0) {
    throw Error("dense layer: fan_in and fan_out must be positive (got " + std::to_string(fan_in) +
                ", " + std::to_string(fan_out) + ")");
  }
}

std::vector<TensorSpec> Dense::tensors() const {
  return {{"kernel", {fan_in_, fan_out_}}, {"bias", {fan_out_}}};
}

void Dense::bind(const double* params, double* grads) {
  const Index nw = fan_in_ * fan_out_;
  new (&weight_) WeightMap(params, fan_in_, fan_out_);
  new (&bias_) Eigen::Map<const Eigen::RowVectorXd>(params + nw, fan_out_);
  new (&weight_grad_) WeightGradMap(grads, fan_in_, fan_out_);
  new (&bias_grad_) Eigen::Map<Eigen::RowVectorXd>(grads + nw, fan_out_);
}

void Dense::initialize(double* params, Init scheme, Rng& rng) const {
  fill_weights(params, fan_in_, fan_out_, scheme, rng);
  std::fill(params + fan_in_ * fan_out_, params + fan_in_ * fan_out_ + fan_out_, 0.0);
}

void Dense::forward(ConstBatchView in, BatchView out) {
  out.noalias() = in * weight_;
  out.rowwise() += bias_;
}

void Dense::backward(ConstBatchView in, ConstBatchView /*out*/, BatchView grad_out,
                     BatchView* grad_in) {
  weight_grad_.noalias() = in.transpose() * grad_out;
  bias_grad_.noalias() = grad_out.colwise().sum();
  if (grad_in != nullptr) grad_in->noalias() = grad_out * weight_.transpose();
}

}  // namespace simmer::model
