#pragma once
/// \file
/// Numeric types shared by every module. simmer computes in float64 throughout.

#include <Eigen/Core>
#include <cstdint>

namespace simmer {

using Index = Eigen::Index;

/// A flat vector: parameters, velocities, gradients.
using Vector = Eigen::VectorXd;

/// A batch: one sample per row, features along the row (row-major, so a block of rows is
/// contiguous and a layer's per-sample tensor is one row).
using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Non-owning views of contiguous batches; every layer reads and writes through these.
using BatchView = Eigen::Map<Matrix>;
using ConstBatchView = Eigen::Map<const Matrix>;

/// View of the first `rows` rows of a row-major matrix (contiguous, no copy).
inline BatchView top_rows(Matrix& m, Index rows) { return {m.data(), rows, m.cols()}; }
inline ConstBatchView top_rows(const Matrix& m, Index rows) { return {m.data(), rows, m.cols()}; }
inline ConstBatchView view(const Matrix& m) { return {m.data(), m.rows(), m.cols()}; }
inline ConstBatchView view(const BatchView& m) { return {m.data(), m.rows(), m.cols()}; }

}  // namespace simmer
