// io::ParallelFile under mpirun -n 2 (or more): every rank writes its own chains' rows of one
// dataset in a collective transfer, rank 0 writes replicated data; read back serially, every
// value is where it belongs and HDF5 reports every transfer as collective.
#define CATCH_CONFIG_RUNNER
#include <mpi.h>
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "simmer/io/archive_reader.hpp"
#include "simmer/io/h5.hpp"

using namespace simmer;

namespace {

/// The value written at [chain, row, col]: unique and exact in float64.
double value_at(std::int64_t chain, std::int64_t row, std::int64_t col) {
  return 1000.0 * static_cast<double>(chain) + 10.0 * static_cast<double>(row) + static_cast<double>(col);
}

}  // namespace

TEST_CASE("collective row writes from every rank land in their chains' rows", "[mpi][io]") {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // One path for all ranks: rank 0's choice, broadcast.
  std::string path =
      (std::filesystem::temp_directory_path() / ("simmer_test_pfile_" + std::to_string(::getpid()) + ".h5")).string();
  int length = static_cast<int>(path.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  path.resize(static_cast<std::size_t>(length));
  MPI_Bcast(path.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);

  const std::int64_t chains = 5, rows = 4, cols = 3;
  {
    io::ParallelFile f = io::ParallelFile::create(path, MPI_COMM_WORLD);
    f.create_group("/g");
    f.create_dataset("/g/rows", io::Type::f64, {chains, rows, cols}, {1, rows, cols}, true);
    // Chain c on rank c mod size; each writes rows 1..3 now, row 0 never (stays NaN).
    std::vector<io::RowBlock> blocks;
    std::vector<double> data;
    for (std::int64_t c = rank; c < chains; c += size) {
      blocks.push_back({c, 1, rows - 1});
      for (std::int64_t r = 1; r < rows; ++r) {
        for (std::int64_t k = 0; k < cols; ++k) data.push_back(value_at(c, r, k));
      }
    }
    // Wrong element type or length: refused on every rank alike, before any transfer.
    CHECK_THROWS_WITH(f.write_rows("/g/rows", blocks, std::vector<float>(data.begin(), data.end())),
                      Catch::Contains("another element type"));
    std::vector<double> short_data(data.begin(), data.end());
    short_data.push_back(0.0);
    CHECK_THROWS_WITH(f.write_rows("/g/rows", blocks, short_data), Catch::Contains("values for"));
    f.write_rows("/g/rows", blocks, data);
    std::vector<std::int64_t> ids(static_cast<std::size_t>(chains));
    for (std::int64_t c = 0; c < chains; ++c) ids[static_cast<std::size_t>(c)] = 7 * c;
    f.put("/g/ids", ids, {chains});
    f.attribute("/g", "note", std::string("written by ") + std::to_string(size) + " ranks");
    CHECK(f.transfers() > 0);
    CHECK(f.collective_transfers() == f.transfers());
    f.close();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    const io::ArchiveReader r(path);
    const auto values = r.read_doubles("/g/rows");
    REQUIRE(values.size() == static_cast<std::size_t>(chains * rows * cols));
    for (std::int64_t c = 0; c < chains; ++c) {
      for (std::int64_t row = 0; row < rows; ++row) {
        for (std::int64_t k = 0; k < cols; ++k) {
          const double v = values[static_cast<std::size_t>((c * rows + row) * cols + k)];
          if (row == 0) {
            CHECK(std::isnan(v));
          } else {
            CHECK(v == value_at(c, row, k));
          }
        }
      }
    }
    CHECK(r.read_ints("/g/ids") == std::vector<std::int64_t>{0, 7, 14, 21, 28});
    CHECK(r.attribute_text("/g", "note") == "written by " + std::to_string(size) + " ranks");
    std::filesystem::remove(path);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int failed = Catch::Session().run(argc, argv);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any != 0 ? 1 : 0;
}
