#pragma once
/// \file
/// Numeric types shared by every module. The network, its losses and gradients, Adam and the
/// integrator's particle update compute in a scalar chosen per run (run.precision: float64 or
/// float32); the templates below take it as `S`. Everything else — thermostat scalars, sums of
/// squares, energies, ensemble accumulators, data sets — is float64, the names without a suffix.

#include <Eigen/Core>
#include <cstdint>
#include <string>

#include "simmer/core/names.hpp"

namespace simmer {

using Index = Eigen::Index;

/// A flat vector of scalar S: parameters, velocities, gradients.
template <class S>
using VectorOf = Eigen::Matrix<S, Eigen::Dynamic, 1>;
/// A batch: one sample per row, features along the row (row-major, so a block of rows is
/// contiguous and a layer's per-sample tensor is one row).
template <class S>
using MatrixOf = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using RowVectorOf = Eigen::Matrix<S, 1, Eigen::Dynamic>;
/// Non-owning views of contiguous batches; every layer reads and writes through these.
template <class S>
using BatchViewOf = Eigen::Map<MatrixOf<S>>;
template <class S>
using ConstBatchViewOf = Eigen::Map<const MatrixOf<S>>;

using Vector = VectorOf<double>;
using Matrix = MatrixOf<double>;
using BatchView = BatchViewOf<double>;
using ConstBatchView = ConstBatchViewOf<double>;

/// The scalar names of a computation in S (Scalar, Vector, Matrix, BatchView, ConstBatchView) as
/// member aliases of a class template, so its members' signatures and bodies read as in float64.
#define SIMMER_SCALAR_TYPES(S)                \
  using Scalar = S;                           \
  using Vector = ::simmer::VectorOf<S>;       \
  using Matrix = ::simmer::MatrixOf<S>;       \
  using BatchView = ::simmer::BatchViewOf<S>; \
  using ConstBatchView = ::simmer::ConstBatchViewOf<S>

/// View of the first `rows` rows of a row-major matrix (contiguous, no copy).
template <class S>
BatchViewOf<S> top_rows(MatrixOf<S>& m, Index rows) {
  return {m.data(), rows, m.cols()};
}
template <class S>
ConstBatchViewOf<S> top_rows(const MatrixOf<S>& m, Index rows) {
  return {m.data(), rows, m.cols()};
}
template <class S>
ConstBatchViewOf<S> view(const MatrixOf<S>& m) {
  return {m.data(), m.rows(), m.cols()};
}
template <class S>
ConstBatchViewOf<S> view(const BatchViewOf<S>& m) {
  return {m.data(), m.rows(), m.cols()};
}

/// How many values of S hold `bytes` bytes (rounded up): scratch of other types (arg-max
/// indices, masks) in the units of a memory estimate.
template <class S>
constexpr Index values_for_bytes(Index bytes) {
  return (bytes + static_cast<Index>(sizeof(S)) - 1) / static_cast<Index>(sizeof(S));
}

/// The element type of an archive dataset: what the archive's schema (run/archive_layout.hpp)
/// declares and the HDF5 layer (io::Type) writes, one enum for both.
enum class Element { f64, f32, i64 };

/// The compute precision of a run (run.precision).
enum class Precision { float64, float32 };
inline constexpr Names<Precision, 2> kPrecisionNames{
    "precision", {{{Precision::float64, "float64"}, {Precision::float32, "float32"}}}};
inline Precision parse_precision(const std::string& name) { return kPrecisionNames.parse(name); }
inline std::string to_string(Precision p) { return std::string(kPrecisionNames.name(p)); }
/// Machine epsilon of the precision's scalar.
double epsilon(Precision p);

/// Runs `f` with a value of the precision's scalar type (0.0 or 0.0f): where a run's (or an
/// archive's) precision becomes a template argument. `f` is a generic lambda: [&](auto zero) { using S =
/// decltype(zero); ... }.
template <class F>
decltype(auto) with_scalar(Precision p, F&& f) {
  if (p == Precision::float32) return f(0.0f);
  return f(0.0);
}

}  // namespace simmer
