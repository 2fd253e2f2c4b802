// Sharded gradients (issue 13): the full-batch loss and gradient as a fixed tree sum of row
// blocks, so that splitting the blocks over k processes gives the same bits for every k.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "gradient_check.hpp"

#include "simmer/core/error.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/train/objective.hpp"

using namespace simmer;
using namespace simmer::model;
using simmer::test::max_gradient_error;
using simmer::test::random_matrix;

namespace {

/// k parts run one after the other in one process: the first pass records each part's local
/// sums on a board (and returns nothing useful), the second hands every part the whole board,
/// as MPI_Allgather would.
struct Board {
  std::vector<std::vector<double>> parts;
};

class SequentialCombiner final : public train::GradientCombiner {
 public:
  SequentialCombiner(int part, int parts, Board& board, bool replay)
      : part_(part), parts_(parts), board_(&board), replay_(replay) {}
  [[nodiscard]] int parts() const override { return parts_; }
  [[nodiscard]] int part() const override { return part_; }
  void all_parts(const float* /*local*/, Index /*count*/, float* /*out*/) override {
    FAIL("the float64 tests exchange doubles");
  }
  void all_parts(const double* local, Index count, double* out) override {
    if (!replay_) {
      board_->parts[static_cast<std::size_t>(part_)].assign(local, local + count);
      std::memset(out, 0, sizeof(double) * static_cast<std::size_t>(count * parts_));
      return;
    }
    for (int p = 0; p < parts_; ++p) {
      const auto& v = board_->parts[static_cast<std::size_t>(p)];
      REQUIRE(static_cast<Index>(v.size()) == count);
      std::memcpy(out + p * count, v.data(), sizeof(double) * v.size());
    }
  }

 private:
  int part_, parts_;
  Board* board_;
  bool replay_;
};

struct Case {
  Network net;
  Matrix x, y;
};

Case make_case(LossKind loss, Index rows) {
  Rng rng(17);
  Case c{build_network({"4-9-3", Activation::tanh, Activation::linear}), random_matrix(rows, 4, rng), Matrix()};
  c.net.initialize(Init::glorot_normal, rng);
  c.y = random_matrix(rows, 3, rng);
  if (loss == LossKind::cce) {
    c.y.setZero();
    for (Index i = 0; i < rows; ++i) c.y(i, static_cast<Index>(rng.below(3))) = 1.0;
  } else if (loss == LossKind::bce) {
    for (Index i = 0; i < c.y.size(); ++i) c.y.data()[i] = rng.uniform() < 0.5 ? 0.0 : 1.0;
  }
  return c;
}

}  // namespace

TEST_CASE("chunked full-batch gradient: the same loss and gradient as one block, up to rounding",
          "[gradient][sharded]") {
  const auto loss = GENERATE(LossKind::sse, LossKind::mse, LossKind::cce, LossKind::bce);
  const Index chunks = GENERATE(2, 4, 8);
  INFO("loss " << to_string(loss) << ", " << chunks << " chunks of 13 rows (uneven blocks)");
  Case c = make_case(loss, 13);
  const Vector x0 = c.net.parameters();
  train::NetworkObjective plain(c.net, loss, c.x, c.y);
  Vector g_plain(x0.size()), g_chunked(x0.size());
  const double v_plain = plain.evaluate_with_gradient(x0, g_plain);
  train::NetworkObjective f(c.net, loss, c.x, c.y);
  f.set_gradient_chunks(chunks);
  const double v_chunked = f.evaluate_with_gradient(x0, g_chunked);
  // Rounding only: a few ulps of the sums' magnitude.
  CHECK(v_chunked == Approx(v_plain).epsilon(1e-13));
  CHECK((g_chunked - g_plain).cwiseAbs().maxCoeff() <= 1e-13 * (1.0 + g_plain.cwiseAbs().maxCoeff()));
  CHECK(f.evaluate(x0) == v_chunked);  // the value alone takes the same tree
  CHECK(max_gradient_error(f, x0) < 1e-6);
}

TEST_CASE("sharded gradient: k = 1, 2, 4 and 8 parts give the same bits", "[gradient][sharded]") {
  const auto loss = GENERATE(LossKind::sse, LossKind::cce);
  INFO("loss " << to_string(loss));
  Case c = make_case(loss, 29);
  const Vector x0 = c.net.parameters();
  const Index chunks = 8;
  train::NetworkObjective one(c.net, loss, c.x, c.y);
  one.set_gradient_chunks(chunks);
  Vector g1(x0.size());
  const double v1 = one.evaluate_with_gradient(x0, g1);
  const double e1 = one.evaluate(x0);
  for (const int parts : {1, 2, 4, 8}) {
    INFO(parts << " parts");
    Board board{std::vector<std::vector<double>>(static_cast<std::size_t>(parts))};
    for (const bool with_gradient : {true, false}) {
      for (const bool replay : {false, true}) {
        for (int p = 0; p < parts; ++p) {
          SequentialCombiner comb(p, parts, board, replay);
          train::NetworkObjective f(c.net, loss, c.x, c.y);
          f.set_gradient_chunks(chunks, &comb);
          Vector g(x0.size());
          const double v = with_gradient ? f.evaluate_with_gradient(x0, g) : f.evaluate(x0);
          if (!replay) continue;
          if (with_gradient) {
            CHECK(v == v1);
            CHECK(g == g1);
          } else {
            CHECK(v == e1);
          }
        }
      }
    }
  }
}

TEST_CASE("gradient chunks: impossible shapes are refused naming the key", "[sharded]") {
  Case c = make_case(LossKind::sse, 6);
  train::NetworkObjective f(c.net, LossKind::sse, c.x, c.y);
  CHECK_THROWS_WITH(f.set_gradient_chunks(3),
                    Catch::Contains("run.gradient_chunks") && Catch::Contains("power of two"));
  CHECK_THROWS_WITH(f.set_gradient_chunks(8), Catch::Contains("6 training rows"));
  Board board{std::vector<std::vector<double>>(4)};
  SequentialCombiner four(0, 4, board, false);
  CHECK_THROWS_WITH(f.set_gradient_chunks(2, &four), Catch::Contains("run.ranks_per_trajectory"));
  CHECK_NOTHROW(f.set_gradient_chunks(4, &four));
}

TEST_CASE("shared predictions: the same bits for any number of parts, the plain ones with one block", "[sharded]") {
  Case c = make_case(LossKind::cce, 29);
  Rng rng(3);
  const Matrix x = random_matrix(11, 4, rng);  // fewer rows than blocks in places: empty blocks
  train::NetworkObjective plain(c.net, LossKind::cce, c.x, c.y);
  const Matrix expected_plain = plain.predict(view(x));
  CHECK(Matrix(plain.predict_shared(view(x))) == expected_plain);
  train::NetworkObjective one(c.net, LossKind::cce, c.x, c.y);
  one.set_gradient_chunks(16);
  const Matrix expected = one.predict_shared(view(x));
  CHECK((expected - expected_plain).cwiseAbs().maxCoeff() < 1e-12);
  for (const int parts : {2, 4, 8, 16}) {
    INFO(parts << " parts");
    Board board{std::vector<std::vector<double>>(static_cast<std::size_t>(parts))};
    for (const bool replay : {false, true}) {
      for (int p = 0; p < parts; ++p) {
        SequentialCombiner comb(p, parts, board, replay);
        train::NetworkObjective f(c.net, LossKind::cce, c.x, c.y);
        f.set_gradient_chunks(16, &comb);
        const Matrix got = f.predict_shared(view(x));
        if (replay) CHECK(got == expected);
      }
    }
  }
}
