// The field visitor (core/visit.hpp): one `fields` list saves and loads every supported type;
// a Loader refuses bytes that run out, bytes left over, counts and shapes other than the
// constructed ones, and values that do not fit.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/core/rng.hpp"
#include "simmer/core/visit.hpp"

using namespace simmer;

namespace {

enum class Colour { red, green, blue };

struct Inner {
  std::int64_t id = 0;
  std::string label;
  template <class Ar>
  void fields(Ar& ar) {
    ar(id, label);
  }
};

/// Declared without a member: the free fields(Ar&, T&) is found instead.
struct Outside {
  double weight = 0;
};
template <class Ar>
void fields(Ar& ar, Outside& o) {
  ar(o.weight);
}

struct Everything {
  std::int64_t count = 0;
  int small = 0;
  std::size_t size = 0;
  double value = 0;
  float single = 0;
  bool flag = false;
  Colour colour = Colour::red;
  std::string text;
  std::vector<double> doubles;
  std::vector<std::int64_t> ints;
  std::vector<unsigned char> bytes;
  std::array<double, 3> triple{};
  Vector vec;
  VectorOf<float> vec32;
  Matrix matrix;
  Inner inner;
  std::vector<Inner> inners;
  std::vector<std::vector<double>> nested;
  Outside outside;
  Rng rng{0};
  template <class Ar>
  void fields(Ar& ar) {
    ar(count, small, size, value, single, flag, colour, text, doubles, ints, bytes, triple);
    ar(vec, vec32, matrix, inner, inners, nested, outside, rng);
  }
};

Everything filled() {
  Everything e;
  e.count = -1234567890123;
  e.small = -7;
  e.size = 99;
  e.value = std::nan("");
  e.single = 0.25f;
  e.flag = true;
  e.colour = Colour::blue;
  e.text = std::string("with\0zero", 9);
  e.doubles = {1.5, -0.0, 1e300};
  e.ints = {3, -4, 5};
  e.bytes = {0, 255, 7};
  e.triple = {1, 2, 3};
  e.vec = Vector::LinSpaced(5, 0.0, 1.0);
  e.vec32 = VectorOf<float>::LinSpaced(4, -1.0f, 1.0f);
  e.matrix = Matrix::Random(2, 3);
  e.inner = {42, "answer"};
  e.inners = {{1, "a"}, {2, ""}};
  e.nested = {{}, {1.0, 2.0}};
  e.outside.weight = 0.5;
  e.rng = Rng(17);
  e.rng.normal();  // a spare normal is part of the state
  return e;
}

/// Sizes and a shape set by construction.
struct Fixed3 {
  std::vector<std::vector<double>> v;
  Matrix m;
  template <class Ar>
  void fields(Ar& ar) {
    ar(fixed(v), shaped(m));
  }
};

}  // namespace

TEST_CASE("visit: one field list saves and loads every supported type", "[visit][checkpoint]") {
  const Everything a = filled();
  const auto bytes = save_bytes(a);
  Everything b;
  load_bytes(bytes, "test", b);
  CHECK(save_bytes(b) == bytes);  // save -> load -> save: the same bytes
  CHECK(b.count == a.count);
  CHECK(b.small == a.small);
  CHECK(b.size == a.size);
  CHECK(std::isnan(b.value));
  CHECK(b.single == a.single);
  CHECK(b.flag);
  CHECK(b.colour == Colour::blue);
  CHECK(b.text == a.text);
  CHECK(b.doubles == a.doubles);
  CHECK(std::signbit(b.doubles[1]));
  CHECK(b.ints == a.ints);
  CHECK(b.bytes == a.bytes);
  CHECK(b.triple == a.triple);
  CHECK(b.vec == a.vec);
  CHECK(b.vec32 == a.vec32);
  CHECK(b.matrix == a.matrix);
  CHECK(b.inner.id == 42);
  CHECK(b.inner.label == "answer");
  REQUIRE(b.inners.size() == 2);
  CHECK(b.inners[1].id == 2);
  CHECK(b.nested == a.nested);
  CHECK(b.outside.weight == 0.5);
  Rng ra = a.rng, rb = b.rng;
  CHECK(rb.normal() == ra.normal());  // the spare
  CHECK(rb.next() == ra.next());
}

TEST_CASE("visit: a Loader refuses too few bytes and bytes left over", "[visit][checkpoint]") {
  const auto bytes = save_bytes(filled());
  for (std::size_t n = 0; n < bytes.size(); ++n) {  // every truncation
    INFO("first " << n << " bytes");
    const std::vector<unsigned char> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    Everything e;
    CHECK_THROWS_AS(load_bytes(cut, "test", e), Error);
  }
  auto longer = bytes;
  longer.push_back(0);
  Everything e;
  CHECK_THROWS_WITH(load_bytes(longer, "checkpoint 'x'", e),
                    Catch::Contains("checkpoint 'x'") && Catch::Contains("unexpected bytes"));
  // Two records in a row read one at a time; finish() then finds nothing left.
  ByteWriter w;
  Saver out(w);
  out(Inner{1, "one"}, Inner{2, "two"});
  ByteReader r(w.bytes().data(), w.bytes().size(), "test");
  Loader in(r);
  Inner first, second;
  in(first);
  CHECK_THROWS(in.finish());
  in(second);
  CHECK_NOTHROW(in.finish());
  CHECK(second.label == "two");
}

TEST_CASE("visit: constructed sizes and shapes are kept and values must fit", "[visit][checkpoint]") {
  Fixed3 a{{{1.0}, {2.0, 3.0}}, Matrix::Ones(2, 2)};
  const auto bytes = save_bytes(a);
  Fixed3 same{{{0.0}, {0.0, 0.0}}, Matrix::Zero(2, 2)};
  load_bytes(bytes, "test", same);
  CHECK(same.v == a.v);
  CHECK(same.m == a.m);
  Fixed3 empty_matrix{{{0.0}, {0.0, 0.0}}, Matrix()};  // an empty matrix takes the saved shape
  load_bytes(bytes, "test", empty_matrix);
  CHECK(empty_matrix.m == a.m);
  Fixed3 fewer{{{0.0}}, Matrix::Zero(2, 2)};
  CHECK_THROWS_WITH(load_bytes(bytes, "test", fewer), Catch::Contains("expected 1 entries, found 2"));
  Fixed3 inner_longer{{{0.0}, {0.0, 0.0, 0.0}}, Matrix::Zero(2, 2)};
  CHECK_THROWS(load_bytes(bytes, "test", inner_longer));
  Fixed3 other_shape{{{0.0}, {0.0, 0.0}}, Matrix::Zero(1, 4)};
  CHECK_THROWS_WITH(load_bytes(bytes, "test", other_shape), Catch::Contains("wrong shape"));

  std::int64_t big = std::int64_t{1} << 40;
  int narrow = 0;
  CHECK_THROWS_WITH(load_bytes(save_bytes(big), "test", narrow), Catch::Contains("out of range"));
  std::vector<unsigned char> two = {2};
  bool flag = false;
  CHECK_THROWS(load_bytes(two, "test", flag));
  // A corrupt count is refused before anything is allocated.
  std::vector<double> huge;
  CHECK_THROWS_WITH(load_bytes(save_bytes(std::int64_t{1} << 60), "test", huge), Catch::Contains("corrupt count"));
}
