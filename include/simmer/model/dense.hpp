#pragma once
/// \file
/// Fully connected layer y = x·W + b. Storage (stable; the archive's layout depends on it):
/// W as [fan_in][fan_out] row-major, then b [fan_out].

#include "simmer/model/gemm.hpp"
#include "simmer/model/layer.hpp"

namespace simmer::model {

template <class S>
class BasicDense final : public BasicLayer<S> {
 public:
  SIMMER_SCALAR_TYPES(S);
  BasicDense(Index fan_in, Index fan_out);
  [[nodiscard]] std::string kind() const override { return "dense"; }
  [[nodiscard]] Index input_size() const override { return fan_in_; }
  [[nodiscard]] Index output_size() const override { return fan_out_; }
  [[nodiscard]] std::vector<TensorSpec> tensors() const override;
  void bind(const S* params, S* grads) override;
  void initialize(S* params, Init scheme, Rng& rng) const override;
  /// Sizes the GEMM packing buffers (Eigen's product would allocate them per call from
  /// 400 × 120 kernels on).
  void reserve(Index rows) override;
  void forward(ConstBatchView in, BatchView out) override;
  void backward(ConstBatchView in, ConstBatchView out, BatchView grad_out, BatchView* grad_in) override;

 private:
  using WeightMap = Eigen::Map<const Matrix>;
  using WeightGradMap = Eigen::Map<Matrix>;
  Index fan_in_;
  Index fan_out_;
  WeightMap weight_{nullptr, 0, 0};
  Eigen::Map<const RowVectorOf<S>> bias_{nullptr, 0};
  WeightGradMap weight_grad_{nullptr, 0, 0};
  Eigen::Map<RowVectorOf<S>> bias_grad_{nullptr, 0};
  GemmWorkspace<S> gemm_;
};

using Dense = BasicDense<double>;

}  // namespace simmer::model
