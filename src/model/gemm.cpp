#include "simmer/model/gemm.hpp"

#include <Eigen/Core>
#include <algorithm>

namespace simmer::model {

namespace {

/// Eigen's blocking description pointed at caller-owned buffers (Eigen 3.4 internals: the object
/// its product builds per call, minus the allocation).
class Blocking final : public Eigen::internal::level3_blocking<double, double> {
 public:
  Blocking(double* block_a, double* block_b, Index mc, Index nc, Index kc) {
    m_blockA = block_a;
    m_blockB = block_b;
    m_mc = mc;
    m_nc = nc;
    m_kc = kc;
  }
};

/// Eigen's cache blocking for this product, as its gemm_blocking_space computes it. A row-major
/// result is computed as the transposed column-major product.
struct BlockSizes {
  Index kc, mc, nc;
  [[nodiscard]] Index size_a() const { return kc * mc; }
  [[nodiscard]] Index size_b() const { return kc * nc; }
};

BlockSizes block_sizes(Index m, Index n, Index k, bool row_major_result) {
  BlockSizes s{k, row_major_result ? n : m, row_major_result ? m : n};
  Eigen::internal::computeProductBlockingSizes<double, double, 1, Index>(s.kc, s.mc, s.nc, 1);
  return s;
}

/// Where Eigen's product takes its coefficient-based or GEMV path (no packing buffers).
bool small_product(Index m, Index n, Index k) {
  return m + n + k < EIGEN_GEMM_TO_COEFFBASED_THRESHOLD || m == 1 || n == 1;
}

template <int Order>
using ConstOperandMap =
    Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Order>, 0, Eigen::OuterStride<>>;
template <int Order>
using ResultMap = Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Order>, 0, Eigen::OuterStride<>>;

template <int OrderA, int OrderB, int OrderC>
void product(Index m, Index n, Index k, GemmOperand a, GemmOperand b, GemmResult c, bool accumulate, double* block_a,
             double* block_b) {
  const ConstOperandMap<OrderA> lhs(a.data, m, k, Eigen::OuterStride<>(a.stride));
  const ConstOperandMap<OrderB> rhs(b.data, k, n, Eigen::OuterStride<>(b.stride));
  ResultMap<OrderC> dst(c.data, m, n, Eigen::OuterStride<>(c.stride));
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
  const BlockSizes s = block_sizes(m, n, k, OrderC == Eigen::RowMajor);
  Blocking blocking(block_a, block_b, s.mc, s.nc, s.kc);
  Eigen::internal::general_matrix_matrix_product<Index, double, OrderA, false, double, OrderB, false, OrderC, 1>::run(
      m, n, k, a.data, a.stride, b.data, b.stride, c.data, 1, c.stride, 1.0, blocking, nullptr);
}

template <int OrderA, int OrderB>
void product_c(Index m, Index n, Index k, GemmOperand a, GemmOperand b, GemmResult c, bool accumulate, double* block_a,
               double* block_b) {
  if (c.row_major) {
    product<OrderA, OrderB, Eigen::RowMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  } else {
    product<OrderA, OrderB, Eigen::ColMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  }
}

template <int OrderA>
void product_bc(Index m, Index n, Index k, GemmOperand a, GemmOperand b, GemmResult c, bool accumulate, double* block_a,
                double* block_b) {
  if (b.row_major) {
    product_c<OrderA, Eigen::RowMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  } else {
    product_c<OrderA, Eigen::ColMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  }
}

}  // namespace

std::pair<Index, Index> GemmWorkspace::needed(Index m, Index n, Index k, bool row_major_result) {
  if (m <= 0 || n <= 0 || k <= 0 || small_product(m, n, k)) return {0, 0};
  const BlockSizes s = block_sizes(m, n, k, row_major_result);
  return {s.size_a(), s.size_b()};
}

void GemmWorkspace::reserve(Index m, Index n, Index k, bool row_major_result) {
  const auto [a, b] = needed(m, n, k, row_major_result);
  if (block_a_.size() < a) block_a_.resize(a);
  if (block_b_.size() < b) block_b_.resize(b);
}

void gemm(Index m, Index n, Index k, GemmOperand a, GemmOperand b, GemmResult c, bool accumulate,
          GemmWorkspace& workspace) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate) {
      for (Index i = 0; i < (c.row_major ? m : n); ++i) {
        std::fill_n(c.data + i * c.stride, c.row_major ? n : m, 0.0);
      }
    }
    return;
  }
  workspace.reserve(m, n, k, c.row_major);  // a no-op when reserve() covered this product
  double* block_a = workspace.block_a_.data();
  double* block_b = workspace.block_b_.data();
  if (a.row_major) {
    product_bc<Eigen::RowMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  } else {
    product_bc<Eigen::ColMajor>(m, n, k, a, b, c, accumulate, block_a, block_b);
  }
}

}  // namespace simmer::model
