#include "simmer/train/objective.hpp"

#include <algorithm>
#include <utility>

#include "simmer/core/error.hpp"

namespace simmer::train {

template <class S>
BasicNetworkObjective<S>::BasicNetworkObjective(model::BasicNetwork<S>& net, model::LossKind loss, const Matrix& x,
                                                const Matrix& y, Eigen::RowVectorXd output_scale,
                                                Eigen::RowVectorXd output_offset)
    : net_(&net), loss_(loss), x_(&x), y_(&y), scale_(output_scale.cast<S>()), offset_(output_offset.cast<S>()) {
  if (x.cols() != net.input_size()) {
    throw Error("objective: data has " + std::to_string(x.cols()) + " input columns but the network takes " +
                std::to_string(net.input_size()));
  }
  if (y.cols() != net.output_size()) {
    throw Error("objective: data has " + std::to_string(y.cols()) + " target columns but the network gives " +
                std::to_string(net.output_size()));
  }
  if (x.rows() != y.rows()) throw Error("objective: x and y row counts differ");
  scaled_ = scale_.size() > 0;
  if (scaled_ && (scale_.size() != y.cols() || offset_.size() != y.cols())) {
    throw Error("objective: output scale/offset size differs from the number of outputs");
  }
  if (net.capacity() == 0) net.reserve(x.rows());  // a caller that reserved (fewer rows) knows better
  raw_.resize(x.rows(), y.cols());
}

template <class S>
void BasicNetworkObjective<S>::load(const Vector& params) {
  if (&params != &net_->parameters()) net_->parameters() = params;
}

template <class S>
void BasicNetworkObjective<S>::unscale(ConstBatchView out, BatchView raw) const {
  raw.array() = (out.array().rowwise() * scale_.array()).rowwise() + offset_.array();
}

template <class S>
double BasicNetworkObjective<S>::loss_on(ConstBatchView x, ConstBatchView y, bool with_gradient) {
  const Index rows = x.rows();
  ConstBatchView out = net_->forward(x);
  if (!scaled_) {
    if (!with_gradient) return model::loss_value(loss_, out, y);
    BatchView g = net_->output_gradient_buffer(rows);
    const double value = model::loss_value_and_gradient(loss_, out, y, g);
    net_->backward(x, g);
    return value;
  }
  if (raw_.rows() < rows) raw_.resize(rows, out.cols());
  BatchView raw = top_rows(raw_, rows);
  unscale(out, raw);
  if (!with_gradient) return model::loss_value(loss_, view(raw), y);
  BatchView g = net_->output_gradient_buffer(rows);
  const double value = model::loss_value_and_gradient(loss_, view(raw), y, g);
  g.array().rowwise() *= scale_.array();
  net_->backward(x, g);
  return value;
}

template <class S>
double BasicNetworkObjective<S>::evaluate_with_gradient(const Vector& params, Vector& grad) {
  load(params);
  if (chunks_ > 1 || combiner_ != nullptr) return chunked(true, &grad);
  const double value = loss_on(view(*x_), view(*y_), true);
  if (&grad != &net_->gradient()) grad = net_->gradient();
  return value;
}

template <class S>
double BasicNetworkObjective<S>::evaluate(const Vector& params) {
  load(params);
  if (chunks_ > 1 || combiner_ != nullptr) return chunked(false, nullptr);
  return loss_on(view(*x_), view(*y_), false);
}

template <class S>
void BasicNetworkObjective<S>::set_gradient_chunks(Index chunks, GradientCombiner* combiner) {
  const Index parts = combiner != nullptr ? combiner->parts() : 1;
  const auto power_of_two = [](Index v) { return v >= 1 && (v & (v - 1)) == 0; };
  if (!power_of_two(chunks) || chunks > x_->rows()) {
    throw Error("option 'run.gradient_chunks' = '" + std::to_string(chunks) +
                "': must be a power of two no larger than the " + std::to_string(x_->rows()) + " training rows");
  }
  if (!power_of_two(parts) || chunks % parts != 0) {
    throw Error("option 'run.gradient_chunks' = '" + std::to_string(chunks) + "': must be a multiple of the " +
                std::to_string(parts) + " ranks that share a trajectory (run.ranks_per_trajectory, a power of two)");
  }
  chunks_ = chunks;
  combiner_ = combiner;
  const Index n = net_->parameter_count() + 1;
  slots_.setZero(n, chunks / parts);
  parts_.setZero(n, parts);
}

namespace {

/// Σ of the first `count` columns (a power of two) into column 0, pairwise: (0+1)+(2+3), ... —
/// the same tree for any split of the columns into aligned power-of-two blocks.
template <class M>
void tree_sum(M& m, Index count, Index first, Index rows) {
  for (Index stride = 1; stride < count; stride *= 2) {
    for (Index i = 0; i + stride < count; i += 2 * stride) {
      m.col(i).segment(first, rows) += m.col(i + stride).segment(first, rows);
    }
  }
}

}  // namespace

template <class S>
ConstBatchViewOf<S> BasicNetworkObjective<S>::predict_shared(ConstBatchView x) {
  if (chunks_ == 1 && combiner_ == nullptr) return predict(x);
  const Index n = x.rows(), outputs = net_->output_size();
  const Index parts = combiner_ != nullptr ? combiner_->parts() : 1;
  const Index part = combiner_ != nullptr ? combiner_->part() : 0;
  const Index per = chunks_ / parts;
  const Index block_max = (n + chunks_ - 1) / chunks_;  // block c: rows [c n / chunks, (c+1) n / chunks)
  const Index count = per * block_max * outputs;        // one part's blocks, padded to equal size
  const auto grow = [](std::vector<S>& v, std::size_t size) {
    if (v.size() < size) v.resize(size);
  };
  grow(shared_local_, static_cast<std::size_t>(count));
  grow(shared_all_, static_cast<std::size_t>(count * parts));
  if (shared_out_.rows() < n || shared_out_.cols() != outputs)
    shared_out_.resize(std::max(n, shared_out_.rows()), outputs);
  const auto block_rows = [&](Index c) { return std::pair<Index, Index>{c * n / chunks_, (c + 1) * n / chunks_}; };
  for (Index j = 0; j < per; ++j) {
    const auto [r0, r1] = block_rows(part * per + j);
    if (r1 == r0) continue;
    const ConstBatchView pred = predict(ConstBatchView(x.data() + r0 * x.cols(), r1 - r0, x.cols()));
    std::copy(pred.data(), pred.data() + pred.size(), shared_local_.data() + j * block_max * outputs);
  }
  const S* all = shared_local_.data();
  if (combiner_ != nullptr) {
    combiner_->all_parts(shared_local_.data(), count, shared_all_.data());
    all = shared_all_.data();
  }
  for (Index c = 0; c < chunks_; ++c) {  // block c sits in part c / per, slot c % per
    const auto [r0, r1] = block_rows(c);
    const S* from = all + (c / per) * count + (c % per) * block_max * outputs;
    std::copy(from, from + (r1 - r0) * outputs, shared_out_.data() + r0 * outputs);
  }
  return {shared_out_.data(), n, outputs};
}

template <class S>
double BasicNetworkObjective<S>::chunked(bool with_gradient, Vector* grad) {
  const Index n = x_->rows();
  const Index parts = combiner_ != nullptr ? combiner_->parts() : 1;
  const Index part = combiner_ != nullptr ? combiner_->part() : 0;
  const Index per = chunks_ / parts;
  const Index params = net_->parameter_count();
  // With the gradient every row of a slot is used; without, only the value (the last row), and
  // the exchange sends that alone.
  const Index used = with_gradient ? params + 1 : 1;
  const Index first = with_gradient ? 0 : params;
  // sse sums over rows; the other losses are means, so a block's share is its rows / n.
  const bool sum_loss = loss_ == model::LossKind::sse;
  for (Index j = 0; j < per; ++j) {
    const Index c = part * per + j;
    const Index r0 = c * n / chunks_, r1 = (c + 1) * n / chunks_;
    const ConstBatchView xb(x_->data() + r0 * x_->cols(), r1 - r0, x_->cols());
    const ConstBatchView yb(y_->data() + r0 * y_->cols(), r1 - r0, y_->cols());
    const double weight = sum_loss ? 1.0 : static_cast<double>(r1 - r0) / static_cast<double>(n);
    const double value = loss_on(xb, yb, with_gradient);
    if (with_gradient) slots_.col(j).head(params) = static_cast<S>(weight) * net_->gradient();
    slots_(params, j) = static_cast<S>(weight * value);
  }
  tree_sum(slots_, per, first, used);
  const S* result = slots_.col(0).data() + first;
  if (combiner_ != nullptr) {
    combiner_->all_parts(result, used, parts_.data());
    // parts_ is (params + 1) × parts but the exchange packed `used` values per part.
    if (used != params + 1) {
      for (Index p = parts - 1; p >= 0; --p) parts_(params, p) = parts_.data()[p * used];
    }
    tree_sum(parts_, parts, first, used);
    result = parts_.col(0).data() + first;
  }
  if (with_gradient) {
    if (grad != &net_->gradient()) *grad = Eigen::Map<const Vector>(result, params);
    net_->gradient() = Eigen::Map<const Vector>(result, params);
  }
  return result[used - 1];
}

template <class S>
double BasicNetworkObjective<S>::evaluate_batch_with_gradient(const std::vector<std::int64_t>& rows) {
  const auto n = static_cast<Index>(rows.size());
  if (batch_x_.rows() < n) {
    batch_x_.resize(n, x_->cols());
    batch_y_.resize(n, y_->cols());
  }
  for (Index i = 0; i < n; ++i) {
    batch_x_.row(i) = x_->row(rows[static_cast<std::size_t>(i)]);
    batch_y_.row(i) = y_->row(rows[static_cast<std::size_t>(i)]);
  }
  return loss_on(top_rows(std::as_const(batch_x_), n), top_rows(std::as_const(batch_y_), n), true);
}

template <class S>
ConstBatchViewOf<S> BasicNetworkObjective<S>::predict(ConstBatchView x) {
  const Index rows = x.rows();
  // With gradient chunks the network holds the activations of one block of rows (so a rank's
  // memory falls with the chunk count) and a larger set passes through it a block at a time.
  const Index block = chunks_ > 1 && net_->capacity() > 0 ? net_->capacity() : rows;
  if (rows <= block) {
    ConstBatchView out = net_->forward(x);
    if (!scaled_) return out;
    if (raw_.rows() < rows) raw_.resize(rows, out.cols());
    BatchView raw = top_rows(raw_, rows);
    unscale(out, raw);
    return {raw.data(), raw.rows(), raw.cols()};
  }
  if (raw_.rows() < rows) raw_.resize(rows, net_->output_size());
  for (Index r0 = 0; r0 < rows; r0 += block) {
    const Index n = std::min(block, rows - r0);
    const ConstBatchView out = net_->forward(ConstBatchView(x.data() + r0 * x.cols(), n, x.cols()));
    BatchView raw(raw_.data() + r0 * raw_.cols(), n, raw_.cols());
    if (scaled_) {
      unscale(out, raw);
    } else {
      raw = out;
    }
  }
  return {raw_.data(), rows, raw_.cols()};
}

template class BasicNetworkObjective<double>;
template class BasicNetworkObjective<float>;

}  // namespace simmer::train
