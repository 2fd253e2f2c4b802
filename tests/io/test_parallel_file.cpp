// io::ParallelFile under mpirun -n 2 (or more): every rank writes its own chains' rows of one
// dataset in a collective transfer, rank 0 writes replicated data; read back serially, every
// value is where it belongs and HDF5 reports every transfer as collective. Every dataset is
// checksummed, and ArchiveReader::check_datasets finds a byte flipped on disk in its chunk.
#include <mpi.h>
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "catch_runner.hpp"
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

TEST_CASE("every dataset carries a Fletcher-32 checksum per chunk, and a flipped byte is found", "[mpi][io]") {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string path =
      (std::filesystem::temp_directory_path() / ("simmer_test_sums_" + std::to_string(::getpid()) + ".h5")).string();
  int length = static_cast<int>(path.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  path.resize(static_cast<std::size_t>(length));
  MPI_Bcast(path.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);

  // 3000 x 100 float64 = 2.4 MB with no chunk shape given: cut into chunks of about 1 MB
  // (1310 whole rows each), so three chunks.
  const std::int64_t big_rows = 3000, big_cols = 100, chains = 4;
  std::vector<double> big(static_cast<std::size_t>(big_rows * big_cols));
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = 0.5 * static_cast<double>(i);
  {
    io::ParallelFile f = io::ParallelFile::create(path, MPI_COMM_WORLD);
    f.create_group("/c");
    f.create_dataset("/c/rows", io::Type::f32, {chains, 3}, {1, 3}, true);
    f.create_dataset("/c/big", io::Type::f64, {big_rows, big_cols});
    f.create_dataset("/c/unwritten", io::Type::i64, {chains, 5});
    f.create_dataset("/c/empty", io::Type::f64, {0, 4});
    f.put_strings("/c/names", {"alpha", "beta"});
    std::vector<io::RowBlock> blocks;
    std::vector<float> rows;
    for (std::int64_t c = rank; c < chains; c += size) {
      blocks.push_back({c, 0, 3});  // the whole [chain, 3] row
      rows.insert(rows.end(), {1.0F, 2.0F, static_cast<float>(c)});
    }
    f.write_rows("/c/rows", blocks, rows);
    // Rank 0's buffer of the wrong length or element type: refused on every rank alike.
    CHECK_THROWS_WITH(f.write_from_root("/c/big", std::vector<double>(big.begin(), big.end() - 1)),
                      Catch::Contains("/c/big"));
    CHECK_THROWS_WITH(f.write_from_root("/c/big", std::vector<std::int64_t>(big.size())), Catch::Contains("/c/big"));
    f.write_from_root("/c/big", big);
    CHECK(f.collective_transfers() == f.transfers());
    f.close();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    std::map<std::string, io::DatasetCheck> found;
    {
      const io::ArchiveReader r(path);
      r.check_datasets([&](const io::DatasetCheck& c) { found[c.path] = c; });
      // Never written: the zero fill, stored with a valid checksum.
      CHECK(r.read_ints("/c/unwritten") == std::vector<std::int64_t>(static_cast<std::size_t>(chains * 5), 0));
      CHECK(r.read_doubles("/c/big") == big);
      // Strings as netCDF's character arrays [2, 5], read back as two strings.
      CHECK(r.dims("/c/names") == std::vector<std::int64_t>{2, 5});
      CHECK(r.read_strings("/c/names") == std::vector<std::string>{"alpha", "beta"});
      CHECK(r.attribute_text("/c/names", "_Encoding") == "utf-8");
    }
    REQUIRE(found.size() == 6);  // and /c/names_strlen, the names' length dimension
    CHECK(found.count("/c/names_strlen") == 1);
    for (const auto& [name, c] : found) {
      INFO(name);
      CHECK(!c.damaged());
      CHECK(c.checksummed == (name != "/c/empty"));  // no elements, no chunks to checksum
    }
    CHECK(found["/c/big"].chunks == 3);
    CHECK(found["/c/rows"].chunks == chains);
    CHECK(found["/c/big"].bytes == big_rows * big_cols * 8);

    // Flip one byte inside the second chunk of /c/big, where HDF5 says it lies in the file.
    haddr_t address = HADDR_UNDEF;
    hsize_t bytes = 0;
    {
      io::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
      io::Handle ds(H5Dopen2(file.id(), "/c/big", H5P_DEFAULT), H5Dclose);
      const hsize_t at[2] = {1310, 0};
      unsigned mask = 0;
      REQUIRE(H5Dget_chunk_info_by_coord(ds.id(), at, &mask, &address, &bytes) >= 0);
    }
    REQUIRE(address != HADDR_UNDEF);
    {
      std::fstream raw(path, std::ios::in | std::ios::out | std::ios::binary);
      raw.seekg(static_cast<std::streamoff>(address + bytes / 2));
      char byte = 0;
      raw.read(&byte, 1);
      byte = static_cast<char>(byte ^ 0x10);
      raw.seekp(static_cast<std::streamoff>(address + bytes / 2));
      raw.write(&byte, 1);
    }
    found.clear();
    {
      const io::ArchiveReader r(path);
      r.check_datasets([&](const io::DatasetCheck& c) { found[c.path] = c; });
      CHECK_THROWS_WITH(r.read_doubles("/c/big"), Catch::Contains("Fletcher32"));
    }
    CHECK(found["/c/big"].damaged_chunks == 1);
    REQUIRE(found["/c/big"].damage.size() == 1);
    CHECK_THAT(found["/c/big"].damage.front(), Catch::Contains("chunk [1310, 0]") && Catch::Contains("Fletcher32") &&
                                                   Catch::Contains("at byte " + std::to_string(address)));
    for (const auto& [name, c] : found) CHECK((c.damaged() == (name == "/c/big")));
    std::filesystem::remove(path);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int failed = simmer::test::run_catch(argc, argv);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any != 0 ? 1 : 0;
}
