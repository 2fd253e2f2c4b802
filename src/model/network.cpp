#include "simmer/model/network.hpp"

#include <utility>

#include "simmer/core/error.hpp"

namespace simmer::model {

template <class S>
std::vector<TensorLayout> layout_of(const std::vector<LayerPtrOf<S>>& layers) {
  if (layers.empty()) throw Error("network: no layers");
  std::vector<TensorLayout> out;
  Index offset = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (i > 0 && layers[i]->input_size() != layers[i - 1]->output_size()) {
      throw Error("network: layer " + std::to_string(i) + " (" + layers[i]->kind() + ") takes " +
                  std::to_string(layers[i]->input_size()) + " inputs but the layer before gives " +
                  std::to_string(layers[i - 1]->output_size()));
    }
    for (const auto& t : layers[i]->tensors()) {
      out.push_back({"layer" + std::to_string(i) + "_" + layers[i]->kind() + "/" + t.name, offset, t.shape});
      offset += t.size();
    }
  }
  return out;
}

Index parameter_count(const std::vector<TensorLayout>& layout) {
  Index n = 0;
  for (const auto& t : layout) {
    Index size = 1;
    for (const Index d : t.shape) size *= d;
    n += size;
  }
  return n;
}

template <class S>
BasicNetwork<S>::BasicNetwork(std::vector<LayerPtrOf<S>> layers) : layers_(std::move(layers)) {
  const Index total = model::parameter_count(layout_of(layers_));
  params_ = Vector::Zero(total);
  grads_ = Vector::Zero(total);
  bind_layers();
  activations_.resize(layers_.size());
  deltas_.resize(layers_.size());
}

template <class S>
void BasicNetwork<S>::bind_layers() {
  if (params_.size() != grads_.size()) {
    throw Error("network: parameter vector resized to " + std::to_string(params_.size()) + " values; the network has " +
                std::to_string(grads_.size()));
  }
  Index offset = 0;
  for (auto& layer : layers_) {
    layer->bind(params_.data() + offset, grads_.data() + offset);
    offset += layer->parameter_count();
  }
  bound_params_ = params_.data();
  bound_grads_ = grads_.data();
}

template <class S>
Index BasicNetwork<S>::input_size() const {
  return layers_.front()->input_size();
}
template <class S>
Index BasicNetwork<S>::output_size() const {
  return layers_.back()->output_size();
}

template <class S>
std::vector<TensorLayout> BasicNetwork<S>::layout() const {
  return layout_of(layers_);
}

template <class S>
void BasicNetwork<S>::initialize(Init scheme, Rng& rng) {
  Index offset = 0;
  for (auto& layer : layers_) {
    layer->initialize(params_.data() + offset, scheme, rng);
    offset += layer->parameter_count();
  }
}

template <class S>
void BasicNetwork<S>::reserve(Index rows) {
  if (rows <= capacity_) return;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    activations_[i].resize(rows, layers_[i]->output_size());
    deltas_[i].resize(rows, layers_[i]->output_size());
    layers_[i]->reserve(rows);
  }
  capacity_ = rows;
}

template <class S>
ConstBatchViewOf<S> BasicNetwork<S>::forward(ConstBatchView x) {
  if (x.cols() != input_size()) {
    throw Error("network: input has " + std::to_string(x.cols()) + " columns, the network takes " +
                std::to_string(input_size()));
  }
  rows_ = x.rows();
  reserve(rows_);
  if (params_.data() != bound_params_ || grads_.data() != bound_grads_) bind_layers();
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    ConstBatchView in = i == 0 ? x : top_rows(std::as_const(activations_[i - 1]), rows_);
    layers_[i]->forward(in, top_rows(activations_[i], rows_));
  }
  return top_rows(std::as_const(activations_.back()), rows_);
}

template <class S>
BatchViewOf<S> BasicNetwork<S>::output_gradient_buffer(Index rows) {
  reserve(rows);
  return top_rows(deltas_.back(), rows);
}

template <class S>
void BasicNetwork<S>::backward(ConstBatchView x, BatchView grad_output) {
  if (params_.data() != bound_params_ || grads_.data() != bound_grads_) bind_layers();
  for (std::size_t i = layers_.size(); i-- > 0;) {
    ConstBatchView in = i == 0 ? x : top_rows(std::as_const(activations_[i - 1]), rows_);
    ConstBatchView out = top_rows(std::as_const(activations_[i]), rows_);
    BatchView grad_out = i + 1 == layers_.size() ? grad_output : top_rows(deltas_[i], rows_);
    if (i == 0) {
      layers_[i]->backward(in, out, grad_out, nullptr);
    } else {
      BatchView grad_in = top_rows(deltas_[i - 1], rows_);
      layers_[i]->backward(in, out, grad_out, &grad_in);
    }
  }
}

template class BasicNetwork<double>;
template class BasicNetwork<float>;
template std::vector<TensorLayout> layout_of<double>(const std::vector<LayerPtrOf<double>>&);
template std::vector<TensorLayout> layout_of<float>(const std::vector<LayerPtrOf<float>>&);

}  // namespace simmer::model
