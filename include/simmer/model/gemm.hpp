#pragma once
/// \file
/// C = A·B (or C += A·B) through Eigen's GEMM kernel, with the packing buffers owned by the
/// caller. Eigen's own product allocates them on the heap at every call once they pass its
/// 128 KB stack limit (a 400 × 120 kernel already does), which a layer's hot loop must not;
/// a GemmWorkspace sized once in reserve() keeps them. Same kernel, same blocking, same results
/// as `c.noalias() = a * b`.

#include <utility>

#include "simmer/core/types.hpp"

namespace simmer::model {

/// A dense operand in memory: element (i, j) at data[i·stride + j] (row-major) or
/// data[i + j·stride] (column-major). A transposed row-major matrix is column-major.
template <class S>
struct GemmOperand {
  const S* data = nullptr;
  Index stride = 0;
  bool row_major = true;
};

/// The product's destination, as GemmOperand.
template <class S>
struct GemmResult {
  S* data = nullptr;
  Index stride = 0;
  bool row_major = true;
};

/// Packing buffers for products up to the sizes given to reserve().
template <class S>
class GemmWorkspace {
 public:
  /// Grow the buffers for an m × k by k × n product with a result of this storage order
  /// (idempotent; allocates only when they grow). Never in the hot loop.
  void reserve(Index m, Index n, Index k, bool row_major_result = true);
  /// Values (scalars S) the two buffers need for that product, without allocating: the packed
  /// left and right panels (Eigen's cache blocking; zero for the small products that need none).
  [[nodiscard]] static std::pair<Index, Index> needed(Index m, Index n, Index k, bool row_major_result = true);
  /// Values held now.
  [[nodiscard]] Index size() const { return block_a_.size() + block_b_.size(); }

 private:
  template <class T>
  friend void gemm(Index, Index, Index, GemmOperand<T>, GemmOperand<T>, GemmResult<T>, bool, GemmWorkspace<T>&);
  VectorOf<S> block_a_;
  VectorOf<S> block_b_;
};

/// C (m × n) = A (m × k) · B (k × n), or C += A·B when `accumulate`. Uses `workspace`'s buffers
/// (growing them if reserve() did not cover this product, which allocates).
template <class S>
void gemm(Index m, Index n, Index k, GemmOperand<S> a, GemmOperand<S> b, GemmResult<S> c, bool accumulate,
          GemmWorkspace<S>& workspace);

}  // namespace simmer::model
