#pragma once
/// \file
/// Element types of archive datasets, without HDF5's headers (what readers and writers share).

namespace simmer::io {

enum class Type { f64, f32, i64 };

}  // namespace simmer::io
