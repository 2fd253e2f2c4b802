#include "simmer/train/objective.hpp"

#include <utility>

#include "simmer/core/error.hpp"

namespace simmer::train {

NetworkObjective::NetworkObjective(model::Network& net, model::LossKind loss, const Matrix& x, const Matrix& y,
                                   Eigen::RowVectorXd output_scale, Eigen::RowVectorXd output_offset)
    : net_(&net), loss_(loss), x_(&x), y_(&y), scale_(std::move(output_scale)), offset_(std::move(output_offset)) {
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
  net.reserve(x.rows());
  raw_.resize(x.rows(), y.cols());
}

void NetworkObjective::load(const Vector& params) {
  if (&params != &net_->parameters()) net_->parameters() = params;
}

double NetworkObjective::loss_on(ConstBatchView x, ConstBatchView y, bool with_gradient) {
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
  raw.array() = (out.array().rowwise() * scale_.array()).rowwise() + offset_.array();
  if (!with_gradient) return model::loss_value(loss_, view(raw), y);
  BatchView g = net_->output_gradient_buffer(rows);
  const double value = model::loss_value_and_gradient(loss_, view(raw), y, g);
  g.array().rowwise() *= scale_.array();
  net_->backward(x, g);
  return value;
}

double NetworkObjective::evaluate_with_gradient(const Vector& params, Vector& grad) {
  load(params);
  const double value = loss_on(view(*x_), view(*y_), true);
  if (&grad != &net_->gradient()) grad = net_->gradient();
  return value;
}

double NetworkObjective::evaluate(const Vector& params) {
  load(params);
  return loss_on(view(*x_), view(*y_), false);
}

double NetworkObjective::evaluate_batch_with_gradient(const std::vector<std::int64_t>& rows) {
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

ConstBatchView NetworkObjective::predict(ConstBatchView x) {
  ConstBatchView out = net_->forward(x);
  if (!scaled_) return out;
  if (raw_.rows() < x.rows()) raw_.resize(x.rows(), out.cols());
  BatchView raw = top_rows(raw_, x.rows());
  raw.array() = (out.array().rowwise() * scale_.array()).rowwise() + offset_.array();
  return {raw.data(), raw.rows(), raw.cols()};
}

}  // namespace simmer::train
