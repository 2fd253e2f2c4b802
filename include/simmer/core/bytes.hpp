#pragma once
/// \file
/// A typed append-only byte buffer and its reader: how per-trajectory state travels in
/// checkpoints and MPI messages (native byte order: a checkpoint is read back on the machine
/// type that wrote it). No MPI, no files.

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/core/types.hpp"

namespace simmer {

class ByteWriter {
 public:
  template <class T>
  void pod(const T& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void i64(std::int64_t v) { pod(v); }
  void f64(double v) { pod(v); }
  void str(const std::string& s) {
    i64(static_cast<std::int64_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void doubles(const double* p, std::int64_t n) {
    i64(n);
    if (n <= 0) return;
    const auto* b = reinterpret_cast<const unsigned char*>(p);
    bytes_.insert(bytes_.end(), b, b + n * static_cast<std::int64_t>(sizeof(double)));
  }
  void vec(const Vector& v) { doubles(v.data(), v.size()); }
  /// A float32 vector (a float32 run's parameters): the count, then 4 bytes per value.
  void vec(const VectorOf<float>& v) {
    i64(v.size());
    const auto* b = reinterpret_cast<const unsigned char*>(v.data());
    bytes_.insert(bytes_.end(), b, b + v.size() * static_cast<std::int64_t>(sizeof(float)));
  }
  void vec(const std::vector<double>& v) { doubles(v.data(), static_cast<std::int64_t>(v.size())); }
  void ints(const std::vector<std::int64_t>& v) {
    i64(static_cast<std::int64_t>(v.size()));
    for (const auto x : v) i64(x);
  }
  void raw(const std::vector<unsigned char>& b) { bytes_.insert(bytes_.end(), b.begin(), b.end()); }
  /// Length-prefixed bytes (ByteReader::block reads them back).
  void block(const std::vector<unsigned char>& b) {
    i64(static_cast<std::int64_t>(b.size()));
    raw(b);
  }
  [[nodiscard]] const std::vector<unsigned char>& bytes() const { return bytes_; }
  std::vector<unsigned char>& bytes() { return bytes_; }

 private:
  std::vector<unsigned char> bytes_;
};

/// Reads what a ByteWriter wrote, in the same order; `origin` names the source in errors
/// ("checkpoint 'run.h5.ckpt'").
class ByteReader {
 public:
  ByteReader(const unsigned char* data, std::size_t size, std::string origin)
      : p_(data), end_(data + size), origin_(std::move(origin)) {}
  template <class T>
  T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  std::int64_t i64() { return pod<std::int64_t>(); }
  double f64() { return pod<double>(); }
  std::string str() {
    const auto n = count();
    need(n);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  std::vector<double> doubles() {
    const auto n = count();
    need(n * sizeof(double));
    std::vector<double> v(n);
    if (n > 0) std::memcpy(v.data(), p_, n * sizeof(double));
    p_ += n * sizeof(double);
    return v;
  }
  Vector vec() {
    const auto d = doubles();
    return Eigen::Map<const Vector>(d.data(), static_cast<Index>(d.size()));
  }
  /// What vec(const VectorOf<S>&) wrote.
  template <class S>
  VectorOf<S> vec_of() {
    if constexpr (std::is_same_v<S, double>) {
      return vec();
    } else {
      const auto n = count();
      need(n * sizeof(S));
      VectorOf<S> v(static_cast<Index>(n));
      if (n > 0) std::memcpy(v.data(), p_, n * sizeof(S));
      p_ += n * sizeof(S);
      return v;
    }
  }
  std::vector<std::int64_t> ints() {
    const auto n = count();
    std::vector<std::int64_t> v(n);
    for (auto& x : v) x = i64();
    return v;
  }
  /// The next `n` raw bytes.
  std::vector<unsigned char> take(std::size_t n) {
    need(n);
    std::vector<unsigned char> v(p_, p_ + n);
    p_ += n;
    return v;
  }
  /// A byte block written by ByteWriter::block.
  std::vector<unsigned char> block() { return take(count()); }
  [[nodiscard]] bool done() const { return p_ == end_; }

 private:
  std::size_t count() {
    const auto n = i64();
    if (n < 0) throw Error(origin_ + ": corrupt length");
    return static_cast<std::size_t>(n);
  }
  void need(std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) < n) throw Error(origin_ + ": truncated");
  }
  const unsigned char* p_;
  const unsigned char* end_;
  std::string origin_;
};

}  // namespace simmer
