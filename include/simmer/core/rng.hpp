#pragma once
/// \file
/// Seeded, portable random numbers. The generator and the distributions are our own code so a
/// seed gives the same bits with any standard library; streams split one seed into independent
/// generators (trajectory i of a run uses stream i of the run seed).

#include <array>
#include <cstdint>
#include <vector>

namespace simmer {

/// What a random stream is for. Every (seed, trajectory, purpose) has a stream of its own, so
/// the consumers are independent: drawing more for one purpose changes no other (as HOOMD-blue's
/// RNGIdentifiers). The one list of simmer's random streams; the value is part of the stream's
/// identity, so never renumber an entry (append new ones).
enum class RngPurpose : std::uint64_t {
  initialization = 1,     ///< a trajectory's initial network (run.seed)
  sampling = 2,           ///< which window steps are members (ensemble.count / fraction)
  minibatch = 3,          ///< Adam's mini-batch order
  stability = 4,          ///< the stability check's power-iteration start vector
  curvature = 5,          ///< the curvature report's Lanczos probes
  start_velocity = 6,     ///< thermal start velocities (simmer.start_velocity = thermal)
  thermostat = 7,         ///< the Langevin thermostat's noise
  jitter = 8,             ///< simmer.start_jitter
  data_split = 9,         ///< the train/test split (data.split_seed, trajectory 0)
  data_noise = 10,        ///< the noisy sine's noise (data.split_seed, trajectory 0)
  validation_split = 11,  ///< the validation rows held out of the training split (data.split_seed)
  exchange = 12,          ///< replica exchange: replica set g's decisions (run.seed, "trajectory" g = the set)
  configurational = 13,   ///< the configurational temperature's Hutchinson probes (simmer.configurational_every)
  mass_curvature = 14,    ///< simmer.parameter_masses = curvature: the warm-up's Hutchinson probes
  predictive = 15,        ///< export --predictive: draw k's sampled outcomes (run.seed, "trajectory" k)
};

/// xoshiro256** (Blackman & Vigna), seeded through SplitMix64. `stream(k)` applies k jumps of
/// 2^128 steps, so streams never overlap for any practical run length.
class Rng {
 public:
  using result_type = std::uint64_t;

  explicit Rng(std::uint64_t seed = 0, std::uint64_t stream = 0);

  /// Generator for substream `stream` of `seed` (same as Rng(seed, stream)).
  static Rng stream(std::uint64_t seed, std::uint64_t stream) { return Rng(seed, stream); }

  /// The stream of `purpose` for trajectory `trajectory` of `seed`: substream `trajectory` of
  /// a seed mixed from (seed, purpose) by SplitMix64.
  static Rng named(std::uint64_t seed, std::uint64_t trajectory, RngPurpose purpose);

  std::uint64_t next();
  std::uint64_t operator()() { return next(); }
  static constexpr std::uint64_t min() { return 0; }
  static constexpr std::uint64_t max() { return ~std::uint64_t{0}; }

  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Standard normal (Marsaglia polar method, spare value kept).
  double normal();
  /// Uniform integer in [0, n) without modulo bias.
  std::uint64_t below(std::uint64_t n);

  /// Advance 2^128 steps.
  void jump();

  /// Full generator state (for checkpoints).
  struct State {
    std::array<std::uint64_t, 4> s{};
    bool has_spare = false;
    double spare = 0.0;
  };
  [[nodiscard]] State state() const { return {s_, has_spare_, spare_}; }
  void set_state(const State& st) {
    s_ = st.s;
    has_spare_ = st.has_spare;
    spare_ = st.spare;
  }
  /// The state as checkpoint fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    State st = state();
    ar(st.s, st.has_spare, st.spare);
    if constexpr (Ar::loading) set_state(st);
  }

 private:
  std::array<std::uint64_t, 4> s_{};
  bool has_spare_ = false;
  double spare_ = 0.0;
};

/// `n` standard normals into `out`, in float precision and vectorised: Box–Muller on the two
/// 24-bit uniforms of one 64-bit draw per pair (u₁ ∈ (0, 1] from its top bits, u₂ ∈ [0, 1) from the
/// next 24), r = sqrt(−2 ln u₁) and θ = 2π u₂ giving r cos θ and r sin θ, in blocks of 64 pairs
/// (each block's cosines, then its sines). For noise drawn on every parameter at every step (the
/// massive Nosé–Hoover–Langevin thermostat), where Rng::normal's scalar polar method costs as much
/// as a small network's gradient; |z| ≤ sqrt(48 ln 2) ≈ 5.77, a tail of 8e-9 left out. Uses
/// Eigen's vectorised log, sin and cos, so the bits may differ between CPUs (as a GEMM's do);
/// consumes ceil(n/2) draws and never the spare normal.
void fill_normal_f32(Rng& rng, float* out, std::int64_t n);

/// Fisher–Yates permutation of 0..n-1.
std::vector<std::int64_t> permutation(std::int64_t n, Rng& rng);
/// The same permutation written into `p` (allocates only when p's capacity is below n).
void permutation(std::int64_t n, Rng& rng, std::vector<std::int64_t>& p);

/// `count` distinct values of 0..n-1 in increasing order (uniform subset).
std::vector<std::int64_t> sample_without_replacement(std::int64_t n, std::int64_t count, Rng& rng);

}  // namespace simmer
