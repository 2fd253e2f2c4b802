#include "simmer/core/rng.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace simmer {
namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

constexpr std::uint64_t rotl(std::uint64_t x, int k) {
  return (x << static_cast<unsigned>(k)) | (x >> static_cast<unsigned>(64 - k));
}

}  // namespace

Rng::Rng(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t sm = seed;
  for (auto& word : s_) word = splitmix64(sm);
  for (std::uint64_t k = 0; k < stream; ++k) jump();
}

Rng Rng::named(std::uint64_t seed, std::uint64_t trajectory, RngPurpose purpose) {
  std::uint64_t x = seed ^ (0xd1b54a32d192ed03ULL * static_cast<std::uint64_t>(purpose));
  return Rng(splitmix64(x), trajectory);
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17U;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

void Rng::jump() {
  static constexpr std::array<std::uint64_t, 4> kJump = {0x180ec6d33cfd0abaULL, 0xd5a61266f0c9392cULL,
                                                         0xa9582618e03fc9aaULL, 0x39abdc4529b1661cULL};
  std::array<std::uint64_t, 4> acc{};
  for (const std::uint64_t word : kJump) {
    for (unsigned b = 0; b < 64; ++b) {
      if (word & (std::uint64_t{1} << b)) {
        for (std::size_t i = 0; i < 4; ++i) acc[i] ^= s_[i];
      }
      next();
    }
  }
  s_ = acc;
  has_spare_ = false;
}

double Rng::uniform() { return static_cast<double>(next() >> 11U) * 0x1.0p-53; }

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u = 0.0;
  double v = 0.0;
  double r2 = 0.0;
  do {
    u = 2.0 * uniform() - 1.0;
    v = 2.0 * uniform() - 1.0;
    r2 = u * u + v * v;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  spare_ = v * f;
  has_spare_ = true;
  return u * f;
}

std::uint64_t Rng::below(std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("Rng::below(0)");
  const std::uint64_t limit = max() - max() % n;  // reject the biased tail
  std::uint64_t r = 0;
  do {
    r = next();
  } while (r >= limit);
  return r % n;
}

void fill_normal_f32(Rng& rng, float* out, std::int64_t n) {
  // Every expression reads and writes these aligned blocks, never `out`: Eigen peels a scalar
  // prologue to align its destination, and std::cos's bits differ from its vectorised cos, so
  // writing to `out` directly would give values that depend on where `out` happens to lie.
  constexpr std::int64_t kBlock = 64;
  alignas(64) std::array<float, kBlock> radius{};
  alignas(64) std::array<float, kBlock> angle{};
  alignas(64) std::array<float, 2 * kBlock> z{};
  for (std::int64_t start = 0; start < n; start += 2 * kBlock) {
    const std::int64_t left = n - start;
    const std::int64_t pairs = std::min(kBlock, (left + 1) / 2);
    for (std::int64_t k = 0; k < pairs; ++k) {
      const std::uint64_t r = rng.next();
      radius[static_cast<std::size_t>(k)] = static_cast<float>((r >> 40U) + 1U) * 0x1.0p-24F;        // (0, 1]
      angle[static_cast<std::size_t>(k)] = static_cast<float>((r >> 16U) & 0xFFFFFFU) * 0x1.0p-24F;  // [0, 1)
    }
    using Block = Eigen::Map<Eigen::ArrayXf, Eigen::Aligned64>;
    Block rad(radius.data(), pairs);
    Block ang(angle.data(), pairs);
    rad = (-2.0F * rad.log()).sqrt();
    ang *= 6.28318530717958647692F;
    Block(z.data(), pairs) = rad * ang.cos();
    Block(z.data() + kBlock, pairs) = rad * ang.sin();
    const std::int64_t sines = std::min(pairs, left - pairs);
    std::copy_n(z.begin(), pairs, out + start);
    std::copy_n(z.begin() + kBlock, sines, out + start + pairs);
  }
}

void permutation(std::int64_t n, Rng& rng, std::vector<std::int64_t>& p) {
  p.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(i + 1)));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
}

std::vector<std::int64_t> permutation(std::int64_t n, Rng& rng) {
  std::vector<std::int64_t> p;
  permutation(n, rng, p);
  return p;
}

std::vector<std::int64_t> sample_without_replacement(std::int64_t n, std::int64_t count, Rng& rng) {
  if (count < 0 || count > n) throw std::invalid_argument("sample_without_replacement: count > n");
  auto p = permutation(n, rng);
  p.resize(static_cast<std::size_t>(count));
  std::sort(p.begin(), p.end());
  return p;
}

}  // namespace simmer
