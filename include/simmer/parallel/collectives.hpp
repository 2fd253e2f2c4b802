#pragma once
/// \file
/// The MPI patterns simmer's programs share: agreeing on a failure before any collective work,
/// gathering variable-length buffers to rank 0, broadcasting bytes, and gathering one record
/// per trajectory in trajectory order (what makes results independent of the rank count).

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "simmer/train/objective.hpp"

namespace simmer::parallel {

/// run.ranks_per_trajectory: the ranks of one group exchange their parts of a trajectory's
/// full-batch loss and gradient (train::NetworkObjective::set_gradient_chunks) with one
/// MPI_Allgather, in group-rank order; the objective sums them in its fixed tree order.
class GroupGradients final : public train::GradientCombiner {
 public:
  explicit GroupGradients(MPI_Comm group);
  [[nodiscard]] int parts() const override { return parts_; }
  [[nodiscard]] int part() const override { return part_; }
  void all_parts(const double* local, Index count, double* out) override;
  void all_parts(const float* local, Index count, float* out) override;
  /// Seconds spent in the exchange (waiting for the group's slowest rank included) and how many
  /// exchanges (for the end-of-run account).
  [[nodiscard]] double seconds() const { return seconds_; }
  [[nodiscard]] std::int64_t exchanges() const { return exchanges_; }

 private:
  void gather(const void* local, Index count, MPI_Datatype type, void* out);
  MPI_Comm group_;
  int parts_ = 1, part_ = 0;
  double seconds_ = 0.0;
  std::int64_t exchanges_ = 0;
};

/// Collective. A barrier that waits without holding a core: a rank that arrives early tests an
/// MPI_Ibarrier, spinning for its first 50 µs and then sleeping between tests (100 µs, growing
/// to 1 ms). OpenMPI's blocking collectives busy-poll, so with more ranks than cores
/// (`mpirun --oversubscribe -n 36` on a laptop) the ranks that finished their block of steps
/// took CPU from the ones still computing; called before the run's periodic collectives.
void quiet_barrier(MPI_Comm comm);

/// Collective. True when no rank `failed`; otherwise the lowest failing rank prints
/// "<program>: error: <message>" once and every rank returns false.
bool agree_on_failure(MPI_Comm comm, bool failed, const std::string& message, const char* program = "simmer_mpi");

/// Runs `fn` on every rank; if it throws on any rank, every rank learns it, the lowest failing
/// rank prints its message once, and all return false.
template <class Fn>
bool collective_try(MPI_Comm comm, Fn&& fn, const char* program = "simmer_mpi") {
  std::string message;
  bool failed = false;
  try {
    fn();
  } catch (const std::exception& e) {
    failed = true;
    message = e.what();
  }
  return agree_on_failure(comm, failed, message, program);
}

/// Collective. Every rank's `mine`, concatenated in rank order on rank 0 (empty elsewhere):
/// MPI_Gatherv with the counts gathered first.
template <class T>
std::vector<T> gather_to_root(const std::vector<T>& mine, MPI_Datatype type, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::vector<T> all;
  if (rank == 0) {
    int total = 0;
    for (int r = 0; r < size; ++r) {
      displs[static_cast<std::size_t>(r)] = total;
      total += counts[static_cast<std::size_t>(r)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(mine.data(), count, type, all.data(), counts.data(), displs.data(), type, 0, comm);
  return all;
}

/// Collective. Rank 0's `bytes` on every rank (resized as needed).
void broadcast_bytes(std::vector<unsigned char>& bytes, MPI_Comm comm);

/// One record per trajectory: (trajectory index, bytes).
using Record = std::pair<std::int64_t, std::vector<unsigned char>>;

/// Collective. Every rank's records, on rank 0 ordered by trajectory index (slot i holds
/// trajectory i's record; empty when no rank sent one); empty on the other ranks.
std::vector<std::vector<unsigned char>> gather_records(const std::vector<Record>& mine, std::int64_t trajectories,
                                                       MPI_Comm comm);

}  // namespace simmer::parallel
