#include "simmer/model/gemm.hpp"

#include <Eigen/Core>
#include <algorithm>

namespace simmer::model {

namespace {

/// Eigen's blocking description pointed at caller-owned buffers (Eigen 3.4 internals: the object
/// its product builds per call, minus the allocation).
template <class S>
class Blocking final : public Eigen::internal::level3_blocking<S, S> {
 public:
  Blocking(S* block_a, S* block_b, Index mc, Index nc, Index kc) {
    this->m_blockA = block_a;
    this->m_blockB = block_b;
    this->m_mc = mc;
    this->m_nc = nc;
    this->m_kc = kc;
  }
};

/// Eigen's cache blocking for this product, as its gemm_blocking_space computes it. A row-major
/// result is computed as the transposed column-major product.
struct BlockSizes {
  Index kc, mc, nc;
  [[nodiscard]] Index size_a() const { return kc * mc; }
  [[nodiscard]] Index size_b() const { return kc * nc; }
};

template <class S>
BlockSizes block_sizes(Index m, Index n, Index k, bool row_major_result) {
  BlockSizes s{k, row_major_result ? n : m, row_major_result ? m : n};
  Eigen::internal::computeProductBlockingSizes<S, S, 1, Index>(s.kc, s.mc, s.nc, 1);
  return s;
}

/// Where Eigen's product takes its coefficient-based or GEMV path (no packing buffers).
bool small_product(Index m, Index n, Index k) {
  return m + n + k < EIGEN_GEMM_TO_COEFFBASED_THRESHOLD || m == 1 || n == 1;
}

template <class S, int Order>
using ConstOperandMap =
    Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Order>, 0, Eigen::OuterStride<>>;
template <class S, int Order>
using ResultMap = Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Order>, 0, Eigen::OuterStride<>>;

template <class S, int OrderA, int OrderB, int OrderC>
void product(Index m, Index n, Index k, GemmOperand<S> a, GemmOperand<S> b, GemmResult<S> c, bool accumulate,
             S* block_a, S* block_b) {
  const ConstOperandMap<S, OrderA> lhs(a.data, m, k, Eigen::OuterStride<>(a.stride));
  const ConstOperandMap<S, OrderB> rhs(b.data, k, n, Eigen::OuterStride<>(b.stride));
  ResultMap<S, OrderC> dst(c.data, m, n, Eigen::OuterStride<>(c.stride));
  if (small_product(m, n, k)) {
    // Eigen's own path for these shapes, so results are bit-identical to its product.
    if (accumulate) {
      dst.noalias() += lhs * rhs;
    } else {
      dst.noalias() = lhs * rhs;
    }
    return;
  }
  if (!accumulate) dst.setZero();  // the kernel accumulates (Eigen's product clears first too)
  const BlockSizes s = block_sizes<S>(m, n, k, OrderC == Eigen::RowMajor);
  Blocking<S> blocking(block_a, block_b, s.mc, s.nc, s.kc);
  Eigen::internal::general_matrix_matrix_product<Index, S, OrderA, false, S, OrderB, false, OrderC, 1>::run(
      m, n, k, a.data, a.stride, b.data, b.stride, c.data, 1, c.stride, S(1), blocking, nullptr);
}

template <class S, int OrderA, int OrderB>
void product_c(Index m, Index n, Index k, GemmOperand<S> a, GemmOperand<S> b, GemmResult<S> c, bool accumulate,
               S* block_a, S* block_b) {
  if (c.row_major) {
    product<S, OrderA, OrderB, Eigen::RowMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  } else {
    product<S, OrderA, OrderB, Eigen::ColMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  }
}

template <class S, int OrderA>
void product_bc(Index m, Index n, Index k, GemmOperand<S> a, GemmOperand<S> b, GemmResult<S> c, bool accumulate,
                S* block_a, S* block_b) {
  if (b.row_major) {
    product_c<S, OrderA, Eigen::RowMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  } else {
    product_c<S, OrderA, Eigen::ColMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  }
}

}  // namespace

template <class S>
std::pair<Index, Index> GemmWorkspace<S>::needed(Index m, Index n, Index k, bool row_major_result) {
  if (m <= 0 || n <= 0 || k <= 0 || small_product(m, n, k)) return {0, 0};
  const BlockSizes s = block_sizes<S>(m, n, k, row_major_result);
  return {s.size_a(), s.size_b()};
}

template <class S>
void GemmWorkspace<S>::reserve(Index m, Index n, Index k, bool row_major_result) {
  const auto [a, b] = needed(m, n, k, row_major_result);
  if (block_a_.size() < a) block_a_.resize(a);
  if (block_b_.size() < b) block_b_.resize(b);
}

template <class S>
void gemm(Index m, Index n, Index k, GemmOperand<S> a, GemmOperand<S> b, GemmResult<S> c, bool accumulate,
          GemmWorkspace<S>& workspace) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate) {
      for (Index i = 0; i < (c.row_major ? m : n); ++i) {
        std::fill_n(c.data + i * c.stride, c.row_major ? n : m, S(0));
      }
    }
    return;
  }
  workspace.reserve(m, n, k, c.row_major);  // a no-op when reserve() covered this product
  S* block_a = workspace.block_a_.data();
  S* block_b = workspace.block_b_.data();
  if (a.row_major) {
    product_bc<S, Eigen::RowMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  } else {
    product_bc<S, Eigen::ColMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  }
}

template class GemmWorkspace<double>;
template class GemmWorkspace<float>;
template void gemm(Index, Index, Index, GemmOperand<double>, GemmOperand<double>, GemmResult<double>, bool,
                   GemmWorkspace<double>&);
template void gemm(Index, Index, Index, GemmOperand<float>, GemmOperand<float>, GemmResult<float>, bool,
                   GemmWorkspace<float>&);

}  // namespace simmer::model
