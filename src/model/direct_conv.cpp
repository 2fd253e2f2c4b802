#include "simmer/model/direct_conv.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <utility>

namespace simmer::model::direct {

namespace {

namespace ei = Eigen::internal;
template <class S>
using PacketOf = typename ei::packet_traits<S>::type;
/// Lanes of a SIMD packet of S (8 doubles or 16 floats on AVX-512).
template <class S>
constexpr Index kLanes = ei::packet_traits<S>::size;

/// Accumulators a kernel may keep: 24 of AVX-512's 32 registers (correlate_block<6, 4> then
/// has 24 accumulators + 4 row packets + 1 broadcast weight live), 12 of AVX's 16 (a block of
/// 3 filters × 4 packets can then spill a little: slower, not wrong).
constexpr int kRegisters = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS;
constexpr int kMaxOutputs = kRegisters >= 32 ? 6 : 4;  ///< filters per correlate block
constexpr int kMaxPackets = 4;                         ///< row packets per correlate block
constexpr int kMaxAccumulators = kRegisters >= 32 ? 24 : 12;

/// Keeps a loaded packet in a register. Without it GCC folds the load into each of the
/// multiply-adds that use it (one memory operand per FMA), which makes weights_block load-bound:
/// LeNet-5's first convolution over 10 000 images took 111–115 ms backward without it, 85–86
/// ms with it.
template <class Packet>
inline void keep_in_register(Packet& p) {
#if defined(__GNUC__) && defined(__AVX512F__)
  __asm__("" : "+v"(p));
#elif defined(__GNUC__) && (defined(__AVX__) || defined(__SSE2__))
  __asm__("" : "+x"(p));
#else
  (void)p;
#endif
}

/// One block of `GO` output planes × `NX` packets of output row y from column x0.
template <class S, int GO, int NX>
void correlate_block(const S* w, const S* init, Index inputs, Index outputs, Index k, ConstPlanes<S> in, Planes<S> out,
                     Index o0, Index y, Index x0) {
  using Packet = PacketOf<S>;
  constexpr Index P = kLanes<S>;
  Packet acc[GO][NX];
  for (int g = 0; g < GO; ++g) {
    const Packet start = init != nullptr ? ei::pset1<Packet>(init[o0 + g]) : ei::pset1<Packet>(0);
    for (int x = 0; x < NX; ++x) acc[g][x] = start;
  }
  const Index w_kx = inputs * outputs;  // weights of consecutive kx are this far apart
  for (Index i = 0; i < inputs; ++i) {
    const S* plane = in.data + i * in.plane_stride + y * in.row_stride + x0;
    for (Index ky = 0; ky < k; ++ky) {
      const S* row = plane + ky * in.row_stride;
      const S* wk = w + (ky * k * inputs + i) * outputs + o0;
      for (Index kx = 0; kx < k; ++kx) {
        Packet v[NX];
        for (int x = 0; x < NX; ++x) v[x] = ei::ploadu<Packet>(row + kx + x * P);
        const S* wkx = wk + kx * w_kx;
        for (int g = 0; g < GO; ++g) {
          const Packet weight = ei::pset1<Packet>(wkx[g]);
          for (int x = 0; x < NX; ++x) acc[g][x] = ei::pmadd(weight, v[x], acc[g][x]);
        }
      }
    }
  }
  for (int g = 0; g < GO; ++g) {
    S* dst = out.data + (o0 + g) * out.plane_stride + y * out.row_stride + x0;
    for (int x = 0; x < NX; ++x) ei::pstoreu(dst + x * P, acc[g][x]);
  }
}

template <class S>
using CorrelateBlock = void (*)(const S*, const S*, Index, Index, Index, ConstPlanes<S>, Planes<S>, Index, Index,
                                Index);

template <class S, int GO, int... X>
constexpr std::array<CorrelateBlock<S>, sizeof...(X)> correlate_row(std::integer_sequence<int, X...>) {
  return {&correlate_block<S, GO, X + 1>...};
}

template <class S, int... G>
constexpr auto correlate_table(std::integer_sequence<int, G...>) {
  return std::array<std::array<CorrelateBlock<S>, kMaxPackets>, sizeof...(G)>{
      correlate_row<S, G + 1>(std::make_integer_sequence<int, kMaxPackets>{})...};
}

/// kCorrelate[GO − 1][NX − 1] = correlate_block<GO, NX>.
template <class S>
constexpr auto kCorrelate = correlate_table<S>(std::make_integer_sequence<int, kMaxOutputs>{});

/// Kernel gradient of one input plane, one ky and `GO` output planes from o0, `KX` = k.
template <class S, int KX, int GO>
void weights_block(ConstPlanes<S> in, ConstPlanes<S> g, Index inputs, Index outputs, Index i, Index ky, Index o0,
                   Index rows, Index packets, S* dw) {
  using Packet = PacketOf<S>;
  constexpr Index P = kLanes<S>;
  Packet acc[KX][GO];
  for (int kx = 0; kx < KX; ++kx) {
    for (int o = 0; o < GO; ++o) acc[kx][o] = ei::pset1<Packet>(0);
  }
  for (Index y = 0; y < rows; ++y) {
    const S* row = in.data + i * in.plane_stride + (y + ky) * in.row_stride;
    const S* grad = g.data + o0 * g.plane_stride + y * g.row_stride;
    for (Index p = 0; p < packets; ++p) {
      Packet gv[GO];
      for (int o = 0; o < GO; ++o) gv[o] = ei::ploadu<Packet>(grad + o * g.plane_stride + p * P);
      for (int kx = 0; kx < KX; ++kx) {
        Packet v = ei::ploadu<Packet>(row + p * P + kx);
        keep_in_register(v);
        for (int o = 0; o < GO; ++o) acc[kx][o] = ei::pmadd(v, gv[o], acc[kx][o]);
      }
    }
  }
  for (int kx = 0; kx < KX; ++kx) {
    S* d = dw + ((ky * KX + kx) * inputs + i) * outputs + o0;
    for (int o = 0; o < GO; ++o) d[o] += ei::predux(acc[kx][o]);
  }
}

template <class S>
using WeightsBlock = void (*)(ConstPlanes<S>, ConstPlanes<S>, Index, Index, Index, Index, Index, Index, Index, S*);

/// Filters per weights_block for kernel size KX: KX·GO accumulators, GO gradient packets and
/// one input packet in registers.
constexpr int weights_outputs(int kx) { return std::clamp((kMaxAccumulators - 4) / kx, 1, 4); }
constexpr int kMaxWeightOutputs = 4;

template <class S, int KX, int... G>
constexpr std::array<WeightsBlock<S>, sizeof...(G)> weights_row(std::integer_sequence<int, G...>) {
  return {&weights_block<S, KX, G + 1>...};
}

template <class S, int... K>
constexpr auto weights_table(std::integer_sequence<int, K...>) {
  return std::array<std::array<WeightsBlock<S>, kMaxWeightOutputs>, sizeof...(K)>{
      weights_row<S, K + 1>(std::make_integer_sequence<int, kMaxWeightOutputs>{})...};
}

/// kWeights[KX − 1][GO − 1] = weights_block<KX, GO>.
template <class S>
constexpr auto kWeights = weights_table<S>(std::make_integer_sequence<int, static_cast<int>(kMaxKernel)>{});

}  // namespace

template <class S>
Index lanes() {
  return kLanes<S>;
}

template <class S>
Index round_up(Index n) {
  constexpr Index P = kLanes<S>;
  return (n + P - 1) / P * P;
}

template <class S>
void correlate(const S* w, const S* init, Index inputs, Index outputs, Index k, ConstPlanes<S> in, Planes<S> out,
               Index rows, Index cols) {
  constexpr Index P = kLanes<S>;
  const Index packets = round_up<S>(cols) / P;
  for (Index o0 = 0; o0 < outputs; o0 += kMaxOutputs) {
    const Index go = std::min<Index>(kMaxOutputs, outputs - o0);
    const Index per_block = std::clamp<Index>(kMaxAccumulators / go, 1, kMaxPackets);
    for (Index y = 0; y < rows; ++y) {
      for (Index p = 0; p < packets; p += per_block) {
        const Index nx = std::min(per_block, packets - p);
        kCorrelate<S>[static_cast<std::size_t>(go - 1)][static_cast<std::size_t>(nx - 1)](w, init, inputs, outputs, k,
                                                                                          in, out, o0, y, p * P);
      }
    }
  }
}

template <class S>
void correlate_weights(ConstPlanes<S> in, ConstPlanes<S> g, Index inputs, Index outputs, Index k, Index rows,
                       Index cols, S* dw) {
  constexpr Index P = kLanes<S>;
  const Index packets = round_up<S>(cols) / P;
  const auto& row = kWeights<S>[static_cast<std::size_t>(k - 1)];
  const Index per_block = weights_outputs(static_cast<int>(k));
  for (Index i = 0; i < inputs; ++i) {
    for (Index ky = 0; ky < k; ++ky) {
      for (Index o0 = 0; o0 < outputs; o0 += per_block) {
        const Index go = std::min(per_block, outputs - o0);
        row[static_cast<std::size_t>(go - 1)](in, g, inputs, outputs, i, ky, o0, rows, packets, dw);
      }
    }
  }
}

#define SIMMER_INSTANTIATE(S)                                                                                \
  template Index lanes<S>();                                                                                 \
  template Index round_up<S>(Index);                                                                         \
  template void correlate(const S*, const S*, Index, Index, Index, ConstPlanes<S>, Planes<S>, Index, Index); \
  template void correlate_weights(ConstPlanes<S>, ConstPlanes<S>, Index, Index, Index, Index, Index, S*);
SIMMER_INSTANTIATE(double)
SIMMER_INSTANTIATE(float)
#undef SIMMER_INSTANTIATE

}  // namespace simmer::model::direct
