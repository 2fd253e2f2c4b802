#include "simmer/model/dense.hpp"

#include "simmer/core/error.hpp"
#include "simmer/model/initializer.hpp"

namespace simmer::model {

Index TensorSpec::size() const {
  Index s = 1;
  for (const Index d : shape) s *= d;
  return s;
}

template <class S>
Index BasicLayer<S>::parameter_count() const {
  Index n = 0;
  for (const auto& t : tensors()) n += t.size();
  return n;
}

template <class S>
BasicDense<S>::BasicDense(Index fan_in, Index fan_out) : fan_in_(fan_in), fan_out_(fan_out) {
  if (fan_in <= 0 || fan_out <= 0) {
    throw Error("dense layer: fan_in and fan_out must be positive (got " + std::to_string(fan_in) + ", " +
                std::to_string(fan_out) + ")");
  }
}

template <class S>
std::vector<TensorSpec> BasicDense<S>::tensors() const {
  return {{"kernel", {fan_in_, fan_out_}}, {"bias", {fan_out_}}};
}

template <class S>
void BasicDense<S>::bind(const S* params, S* grads) {
  const Index nw = fan_in_ * fan_out_;
  new (&weight_) WeightMap(params, fan_in_, fan_out_);
  new (&bias_) Eigen::Map<const RowVectorOf<S>>(params + nw, fan_out_);
  new (&weight_grad_) WeightGradMap(grads, fan_in_, fan_out_);
  new (&bias_grad_) Eigen::Map<RowVectorOf<S>>(grads + nw, fan_out_);
}

template <class S>
void BasicDense<S>::initialize(S* params, Init scheme, Rng& rng) const {
  fill_weights(params, fan_in_, fan_out_, scheme, rng);
  std::fill(params + fan_in_ * fan_out_, params + fan_in_ * fan_out_ + fan_out_, S(0));
}

template <class S>
void BasicDense<S>::reserve(Index rows) {
  gemm_.reserve(rows, fan_out_, fan_in_);  // forward
  gemm_.reserve(fan_in_, fan_out_, rows);  // weight gradient
  gemm_.reserve(rows, fan_in_, fan_out_);  // input gradient
}

// The products are Eigen's (same kernel, blocking and results as `out.noalias() = in * W`),
// with the packing buffers kept in gemm_ instead of allocated per call.
template <class S>
void BasicDense<S>::forward(ConstBatchView in, BatchView out) {
  gemm(in.rows(), fan_out_, fan_in_, {in.data(), fan_in_, true}, {weight_.data(), fan_out_, true},
       {out.data(), fan_out_, true}, false, gemm_);
  out.rowwise() += bias_;
}

template <class S>
void BasicDense<S>::backward(ConstBatchView in, ConstBatchView /*out*/, BatchView grad_out, BatchView* grad_in) {
  // dW = inᵀ · dOut (inᵀ: the row-major batch seen column-major).
  gemm(fan_in_, fan_out_, in.rows(), {in.data(), fan_in_, false}, {grad_out.data(), fan_out_, true},
       {weight_grad_.data(), fan_out_, true}, false, gemm_);
  bias_grad_.noalias() = grad_out.colwise().sum();
  if (grad_in != nullptr) {
    gemm(in.rows(), fan_in_, fan_out_, {grad_out.data(), fan_out_, true}, {weight_.data(), fan_out_, false},
         {grad_in->data(), fan_in_, true}, false, gemm_);
  }
}

template class BasicLayer<double>;
template class BasicLayer<float>;
template class BasicDense<double>;
template class BasicDense<float>;

}  // namespace simmer::model
