#pragma once
/// \file
/// Seeded, portable random numbers. The generator and the distributions are our own code so a
/// seed gives the same bits with any standard library; streams split one seed into independent
/// generators (trajectory i of a run uses stream i of the run seed).

#include <array>
#include <cstdint>
#include <vector>

namespace simmer {

/// xoshiro256** (Blackman & Vigna), seeded through SplitMix64. `stream(k)` applies k jumps of
/// 2^128 steps, so streams never overlap for any practical run length.
class Rng {
 public:
  using result_type = std::uint64_t;

  explicit Rng(std::uint64_t seed = 0, std::uint64_t stream = 0);

  /// Generator for substream `stream` of `seed` (same as Rng(seed, stream)).
  static Rng stream(std::uint64_t seed, std::uint64_t stream) { return Rng(seed, stream); }

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

 private:
  std::array<std::uint64_t, 4> s_{};
  bool has_spare_ = false;
  double spare_ = 0.0;
};

/// Fisher–Yates permutation of 0..n-1.
std::vector<std::int64_t> permutation(std::int64_t n, Rng& rng);
/// The same permutation written into `p` (allocates only when p's capacity is below n).
void permutation(std::int64_t n, Rng& rng, std::vector<std::int64_t>& p);

/// `count` distinct values of 0..n-1 in increasing order (uniform subset).
std::vector<std::int64_t> sample_without_replacement(std::int64_t n, std::int64_t count, Rng& rng);

}  // namespace simmer
