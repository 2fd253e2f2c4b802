#include "simmer/parallel/collectives.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <iostream>
#include <limits>

#include "simmer/core/bytes.hpp"
#include "simmer/core/error.hpp"

namespace simmer::parallel {

void quiet_barrier(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm, &request);
  int done = 0;
  const double t0 = MPI_Wtime();
  auto nap = std::chrono::microseconds(100);
  while (true) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return;
    if (MPI_Wtime() - t0 < 50e-6) continue;
    std::this_thread::sleep_for(nap);
    nap = std::min(2 * nap, std::chrono::microseconds(1000));
  }
}

bool agree_on_failure(MPI_Comm comm, bool failed, const std::string& message, const char* program) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int size = 1;
  MPI_Comm_size(comm, &size);
  const int mine = failed ? rank : size;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return true;
  if (rank == first) std::cerr << program << ": error: " << message << std::endl;
  return false;
}

void broadcast_bytes(std::vector<unsigned char>& bytes, MPI_Comm comm) {
  auto size = static_cast<std::int64_t>(bytes.size());
  MPI_Bcast(&size, 1, MPI_INT64_T, 0, comm);
  bytes.resize(static_cast<std::size_t>(size));
  MPI_Bcast(bytes.data(), static_cast<int>(size), MPI_BYTE, 0, comm);
}

std::vector<std::vector<unsigned char>> gather_records(const std::vector<Record>& mine, std::int64_t trajectories,
                                                       MPI_Comm comm) {
  ByteWriter w;
  for (const auto& [index, bytes] : mine) {
    w.i64(index);
    w.block(bytes);
  }
  const std::vector<unsigned char> all = gather_to_root(w.bytes(), MPI_BYTE, comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::vector<unsigned char>> out;
  if (rank != 0) return out;
  out.resize(static_cast<std::size_t>(trajectories));
  ByteReader r(all.data(), all.size(), "gathered trajectory records");
  while (!r.done()) {
    const std::int64_t index = r.i64();
    if (index < 0 || index >= trajectories) throw Error("internal: trajectory record out of range");
    out[static_cast<std::size_t>(index)] = r.block();
  }
  return out;
}

GroupGradients::GroupGradients(MPI_Comm group) : group_(group) {
  MPI_Comm_size(group, &parts_);
  MPI_Comm_rank(group, &part_);
}

void GroupGradients::gather(const void* local, Index count, MPI_Datatype type, void* out) {
  if (count > std::numeric_limits<int>::max()) throw Error("sharded gradient: more values than one MPI message holds");
  const double t0 = MPI_Wtime();
  MPI_Allgather(local, static_cast<int>(count), type, out, static_cast<int>(count), type, group_);
  seconds_ += MPI_Wtime() - t0;
  ++exchanges_;
}

void GroupGradients::all_parts(const double* local, Index count, double* out) { gather(local, count, MPI_DOUBLE, out); }

void GroupGradients::all_parts(const float* local, Index count, float* out) { gather(local, count, MPI_FLOAT, out); }

}  // namespace simmer::parallel
