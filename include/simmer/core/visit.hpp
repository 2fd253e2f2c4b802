#pragma once
/// \file
/// One field list per saved struct, for both directions (as cereal and boost.serialization do):
/// a struct declares
///
///   template <class Ar>
///   void fields(Ar& ar) { ar(members, mean, tracked); }
///
/// (or a free `fields(Ar&, T&)` found by lookup), and `Saver` (over a ByteWriter) writes the
/// fields in that order while `Loader` (over a ByteReader) reads them back into the same members,
/// so a field cannot be saved and forgotten on load. Loading that needs context (a shape to
/// check, a constructed object to fill) keeps it beside the one list: `Ar::loading` is a
/// constant, `ar.require(ok, what)` refuses a bad value while loading (never while saving).
///
/// What `ar(x)` accepts: integers and enums (8 bytes, range-checked on load), double, float,
/// bool (1 byte), std::string, std::vector and std::array of any of these, Eigen matrices and
/// vectors (rows, cols, values), and structs with `fields`. A std::vector's count comes first;
/// loading one resizes it and loads each element in place. `fixed(v)` is a vector whose sizes
/// (through nested vectors) are set by construction: loading requires the saved counts to equal
/// them. `shaped(m)` is a matrix whose shape is set by construction (an accumulator's): loading
/// requires the saved shape, unless it is still empty.
///
/// The bytes are an internal format (checkpoints, MPI messages), in native byte order;
/// io::kCheckpointFormat changes whenever a checkpointed field list does.

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "simmer/core/bytes.hpp"
#include "simmer/core/error.hpp"
#include "simmer/core/types.hpp"

namespace simmer {

/// A vector whose sizes are fixed by construction (see the file comment).
template <class V>
struct Fixed {
  V& v;
};
template <class V>
Fixed<V> fixed(V& v) {
  return {v};
}

/// A matrix whose shape is fixed by construction (see the file comment).
template <class M>
struct Shaped {
  M& m;
};
template <class M>
Shaped<M> shaped(M& m) {
  return {m};
}

namespace visit_detail {

template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};

template <class T>
struct IsArray : std::false_type {};
template <class T, std::size_t N>
struct IsArray<std::array<T, N>> : std::true_type {};

template <class T>
struct IsEigen : std::bool_constant<std::is_base_of_v<Eigen::PlainObjectBase<T>, T>> {};

template <class T, class Ar, class = void>
struct HasMemberFields : std::false_type {};
template <class T, class Ar>
struct HasMemberFields<T, Ar, std::void_t<decltype(std::declval<T&>().fields(std::declval<Ar&>()))>> : std::true_type {
};

/// Plain values stored as they are in memory.
template <class T>
inline constexpr bool kRaw = std::is_same_v<T, double> || std::is_same_v<T, float> || std::is_same_v<T, std::int64_t> ||
                             std::is_same_v<T, std::uint64_t> || std::is_same_v<T, unsigned char>;
/// Integers and enums other than bool and bytes: stored as int64.
template <class T>
inline constexpr bool kWide = (std::is_integral_v<T> && !std::is_same_v<T, bool> && !kRaw<T>) || std::is_enum_v<T>;

template <class T>
void check_scalar() {
  static_assert(kRaw<T> || kWide<T> || std::is_same_v<T, bool>, "ar(x): no way to save this type");
}

}  // namespace visit_detail

/// Writes fields (see the file comment).
class Saver {
 public:
  static constexpr bool loading = false;
  explicit Saver(ByteWriter& w) : w_(w) {}

  template <class... T>
  void operator()(const T&... values) {
    (put(values), ...);
  }
  /// Saving never refuses: the values are the program's own.
  void require(bool /*ok*/, const char* /*what*/) {}
  void require(bool /*ok*/, const std::string& /*what*/) {}

 private:
  template <class T>
  void put(const T& v) {
    using namespace visit_detail;
    if constexpr (visit_detail::HasMemberFields<T, Saver>::value) {
      // `fields` serves both directions, so it is not const; a Saver only reads through it.
      const_cast<T&>(v).fields(*this);
    } else if constexpr (IsVector<T>::value) {
      w_.i64(static_cast<std::int64_t>(v.size()));
      put_values(v.data(), v.size());
    } else if constexpr (IsArray<T>::value) {
      put_values(v.data(), v.size());
    } else if constexpr (IsEigen<T>::value) {
      w_.i64(static_cast<std::int64_t>(v.rows()));
      w_.i64(static_cast<std::int64_t>(v.cols()));
      put_values(v.data(), static_cast<std::size_t>(v.size()));
    } else if constexpr (std::is_same_v<T, std::string>) {
      w_.str(v);
    } else if constexpr (std::is_class_v<T>) {
      fields(*this, const_cast<T&>(v));  // a free fields(Ar&, T&)
    } else {
      check_scalar<T>();
      if constexpr (std::is_same_v<T, bool>) {
        w_.pod(static_cast<std::uint8_t>(v ? 1 : 0));
      } else if constexpr (kRaw<T>) {
        w_.pod(v);
      } else {
        w_.i64(static_cast<std::int64_t>(v));
      }
    }
  }
  template <class V>
  void put(const Fixed<V>& f) {
    put(f.v);
  }
  template <class M>
  void put(const Shaped<M>& s) {
    put(s.m);
  }
  template <class T>
  void put_values(const T* p, std::size_t n) {
    if constexpr (visit_detail::kRaw<T>) {
      w_.append(p, n * sizeof(T));
    } else {
      for (std::size_t i = 0; i < n; ++i) put(p[i]);
    }
  }

  ByteWriter& w_;
};

/// Reads what a Saver wrote into the same fields (see the file comment). Errors name the
/// reader's origin.
class Loader {
 public:
  static constexpr bool loading = true;
  explicit Loader(ByteReader& r) : r_(r) {}

  template <class... T>
  void operator()(T&&... values) {
    (get(std::forward<T>(values)), ...);
  }
  /// Refuses a loaded value: an Error naming the origin and `what`.
  void require(bool ok, const std::string& what) {
    if (!ok) throw Error(r_.origin() + ": " + what);
  }
  /// Every byte read: an Error if any are left over (a field list that no longer matches).
  void finish() { require(r_.done(), "unexpected bytes after the last field"); }

 private:
  template <class T>
  void get(T& v) {
    using namespace visit_detail;
    if constexpr (HasMemberFields<T, Loader>::value) {
      v.fields(*this);
    } else if constexpr (IsVector<T>::value) {
      const std::size_t n = count<typename T::value_type>();
      v.resize(n);
      get_values(v.data(), n);
    } else if constexpr (IsArray<T>::value) {
      get_values(v.data(), v.size());
    } else if constexpr (IsEigen<T>::value) {
      const auto [rows, cols] = shape<T>();
      v.resize(rows, cols);
      get_values(v.data(), static_cast<std::size_t>(v.size()));
    } else if constexpr (std::is_same_v<T, std::string>) {
      v = r_.str();
    } else if constexpr (std::is_class_v<T>) {
      fields(*this, v);
    } else {
      check_scalar<T>();
      if constexpr (std::is_same_v<T, bool>) {
        const auto b = r_.pod<std::uint8_t>();
        require(b <= 1, "a flag is neither 0 nor 1");
        v = b != 0;
      } else if constexpr (kRaw<T>) {
        v = r_.pod<T>();
      } else {
        const std::int64_t wide = r_.i64();
        using Int = std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>, std::common_type<T>>;
        const auto narrow = static_cast<typename Int::type>(wide);
        require(static_cast<std::int64_t>(narrow) == wide, "an integer out of range");
        v = static_cast<T>(narrow);
      }
    }
  }
  template <class V>
  void get(Fixed<V> f) {
    get_fixed(f.v);
  }
  template <class M>
  void get(Shaped<M> s) {
    const auto [rows, cols] = shape<M>();
    if (s.m.size() != 0) require(rows == s.m.rows() && cols == s.m.cols(), "a table has the wrong shape");
    s.m.resize(rows, cols);
    get_values(s.m.data(), static_cast<std::size_t>(s.m.size()));
  }
  template <class T>
  void get_fixed(std::vector<T>& v) {
    const std::size_t n = count<T>();
    require(n == v.size(), "expected " + std::to_string(v.size()) + " entries, found " + std::to_string(n));
    for (auto& x : v) {
      if constexpr (visit_detail::IsVector<T>::value) {
        get_fixed(x);
      } else {
        get(x);
      }
    }
  }
  template <class T>
  void get_values(T* p, std::size_t n) {
    if constexpr (visit_detail::kRaw<T>) {
      r_.copy_to(p, n * sizeof(T));
    } else {
      for (std::size_t i = 0; i < n; ++i) get(p[i]);
    }
  }
  /// A count of T, no more than the bytes left could hold (so a corrupt one cannot allocate;
  /// every element takes at least a byte).
  template <class T>
  std::size_t count() {
    const std::int64_t n = r_.i64();
    const std::size_t least = visit_detail::kRaw<T> ? sizeof(T) : 1;
    require(n >= 0 && static_cast<std::size_t>(n) <= r_.left() / least, "corrupt count");
    return static_cast<std::size_t>(n);
  }
  template <class M>
  std::pair<Index, Index> shape() {
    const std::int64_t rows = r_.i64(), cols = r_.i64();
    require(rows >= 0 && cols >= 0, "corrupt shape");
    if constexpr (M::RowsAtCompileTime != Eigen::Dynamic) require(rows == M::RowsAtCompileTime, "wrong row count");
    if constexpr (M::ColsAtCompileTime != Eigen::Dynamic) require(cols == M::ColsAtCompileTime, "wrong column count");
    const auto bytes = sizeof(typename M::Scalar);
    require(cols == 0 || static_cast<std::size_t>(rows) <= r_.left() / bytes / static_cast<std::size_t>(cols),
            "corrupt shape");
    return {static_cast<Index>(rows), static_cast<Index>(cols)};
  }

  ByteReader& r_;
};

/// Appends `value`'s fields to `w` (the whole of a `save(ByteWriter&)`).
template <class T>
void save_fields(ByteWriter& w, const T& value) {
  Saver ar(w);
  ar(value);
}

/// Reads `value`'s fields from `r`. last: `r` must then be exhausted (the record is `value` alone;
/// an Error naming the reader's origin otherwise); not_last: more records follow in `r`.
enum class Rest { last, not_last };
template <class T>
void load_fields(ByteReader& r, T& value, Rest rest) {
  Loader ar(r);
  ar(value);
  if (rest == Rest::last) ar.finish();
}

/// `value`'s fields as bytes.
template <class T>
std::vector<unsigned char> save_bytes(const T& value) {
  ByteWriter w;
  save_fields(w, value);
  return w.bytes();
}

/// Loads `value`'s fields from all of `bytes` (an Error naming `origin` if they are too few or
/// too many).
template <class T>
void load_bytes(const std::vector<unsigned char>& bytes, const std::string& origin, T& value) {
  ByteReader r(bytes.data(), bytes.size(), origin);
  load_fields(r, value, Rest::last);
}

}  // namespace simmer
