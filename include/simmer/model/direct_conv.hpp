#pragma once
/// \file
/// Direct 2-D correlation kernels on channel-planar images, vectorised along image rows.
///
/// im2col + GEMM is a poor fit for a convolution with few input channels and few filters
/// (LeNet-5's first layer: depth 25, 6 filters): every im2col value is written, packed and then
/// used by only 6 multiply-adds, so copying, not arithmetic, sets the speed. These kernels keep
/// a block of output rows × filters in SIMD registers and stream each shifted input row through
/// it, one packet load per kh·kw·filters multiply-adds of a row block — register-blocked like a
/// GEMM micro-kernel, with no im2col.
///
/// Planes: `count` planes, one per channel, of rows `row_stride` values apart; planes
/// `plane_stride` apart. Rows are processed in whole packets (lanes() values), so a plane's rows
/// must be readable (and, where stated, zero) past the image width up to the strides given.

#include "simmer/core/types.hpp"

namespace simmer::model::direct {

/// Values of S per SIMD packet (Eigen's packet on this build: 8 doubles or 16 floats with
/// AVX-512, 4 or 8 with AVX, 2 or 4 with SSE2).
template <class S>
[[nodiscard]] Index lanes();

/// n rounded up to a whole number of packets of S.
template <class S>
[[nodiscard]] Index round_up(Index n);

/// Largest kernel size correlate_weights() handles (its accumulators are unrolled over kx).
constexpr Index kMaxKernel = 7;

template <class S>
struct ConstPlanes {
  const S* data = nullptr;
  Index plane_stride = 0;
  Index row_stride = 0;
};

template <class S>
struct Planes {
  S* data = nullptr;
  Index plane_stride = 0;
  Index row_stride = 0;
};

/// out[o][y][x] = init[o] + Σ_{i, ky, kx} w[((ky·k + kx)·inputs + i)·outputs + o] ·
///                in[i][y + ky][x + kx]
/// for o < outputs, y < rows and x < round_up(cols). `init` may be null (zero). Reads `in` rows
/// up to round_up(cols) + k − 1 values; out's lanes from cols on get whatever those inputs give.
template <class S>
void correlate(const S* w, const S* init, Index inputs, Index outputs, Index k, ConstPlanes<S> in, Planes<S> out,
               Index rows, Index cols);

/// dw[((ky·k + kx)·inputs + i)·outputs + o] += Σ_{y < rows, x < round_up(cols)}
///     in[i][y + ky][x + kx] · g[o][y][x]
/// for k ≤ kMaxKernel. g's lanes from cols to round_up(cols) must be zero (they are summed);
/// `in` rows are read up to round_up(cols) + k − 1 values.
template <class S>
void correlate_weights(ConstPlanes<S> in, ConstPlanes<S> g, Index inputs, Index outputs, Index k, Index rows,
                       Index cols, S* dw);

}  // namespace simmer::model::direct
