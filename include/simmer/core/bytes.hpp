#pragma once
/// \file
/// An append-only byte buffer and its reader: how per-trajectory state travels in checkpoints
/// and MPI messages (native byte order: a checkpoint is read back on the machine type that wrote
/// it). Structs are written through their field lists (core/visit.hpp); these are the bytes
/// underneath and the framing around them. No MPI, no files.

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "simmer/core/error.hpp"

namespace simmer {

class ByteWriter {
 public:
  template <class T>
  void pod(const T& v) {
    append(&v, sizeof(T));
  }
  void i64(std::int64_t v) { pod(v); }
  void str(const std::string& s) {
    i64(static_cast<std::int64_t>(s.size()));
    append(s.data(), s.size());
  }
  /// A count, then the values.
  void doubles(const double* p, std::int64_t n) {
    i64(n);
    if (n > 0) append(p, static_cast<std::size_t>(n) * sizeof(double));
  }
  /// Length-prefixed bytes (ByteReader::block reads them back).
  void block(const std::vector<unsigned char>& b) {
    i64(static_cast<std::int64_t>(b.size()));
    append(b.data(), b.size());
  }
  /// `n` bytes from `p`, as they are.
  void append(const void* p, std::size_t n) {
    if (n == 0) return;
    const auto* b = static_cast<const unsigned char*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
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
    T v{};
    copy_to(&v, sizeof(T));
    return v;
  }
  std::int64_t i64() { return pod<std::int64_t>(); }
  std::string str() {
    const auto n = count();
    need(n);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  /// What ByteWriter::doubles wrote.
  std::vector<double> doubles() {
    const auto n = count();
    need(n * sizeof(double));
    std::vector<double> v(n);
    copy_to(v.data(), n * sizeof(double));
    return v;
  }
  /// The next `n` bytes into `out`.
  void copy_to(void* out, std::size_t n) {
    need(n);
    if (n > 0) std::memcpy(out, p_, n);
    p_ += n;
  }
  /// A byte block written by ByteWriter::block.
  std::vector<unsigned char> block() {
    const auto n = count();
    need(n);
    std::vector<unsigned char> v(p_, p_ + n);
    p_ += n;
    return v;
  }
  [[nodiscard]] bool done() const { return p_ == end_; }
  /// Bytes not yet read.
  [[nodiscard]] std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }
  /// What the bytes are ("checkpoint 'run.h5.ckpt'"), for errors.
  [[nodiscard]] const std::string& origin() const { return origin_; }

 private:
  std::size_t count() {
    const auto n = i64();
    if (n < 0) throw Error(origin_ + ": corrupt length");
    return static_cast<std::size_t>(n);
  }
  void need(std::size_t n) {
    if (left() < n) throw Error(origin_ + ": truncated");
  }
  const unsigned char* p_;
  const unsigned char* end_;
  std::string origin_;
};

}  // namespace simmer
