#pragma once
// Private to src/io: how ParallelFile's sources (h5.cpp, h5_axes.cpp) turn a failed HDF5 call into
// an Error, and how they close its handles.

#include <hdf5.h>

#include <string>

#include "simmer/core/error.hpp"
#include "simmer/io/h5.hpp"

namespace simmer::io::detail {

/// Every file, group, dataset and attribute handle of a ParallelFile is closed collectively;
/// on an error path (an exception unwinding) its close is skipped, so that a rank that failed
/// alone reaches MPI_Abort instead of waiting in H5Fclose for ranks that never come.
inline constexpr bool kCollective = true;

[[noreturn]] inline void fail(const std::string& what) {
  throw Error("HDF5: " + what + " failed" + innermost_hdf5_error());
}

/// `id`, or an Error naming `what` and HDF5's cause when it is invalid.
inline hid_t check(hid_t id, const std::string& what) {
  if (id < 0) fail(what);
  return id;
}

inline void check(herr_t status, const std::string& what) {
  if (status < 0) fail(what);
}

}  // namespace simmer::io::detail
