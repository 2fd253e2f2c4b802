#pragma once
/// \file
/// The content digests of each trajectory's stored draws and of its /trace rows (/checksums,
/// run/archive_paths.hpp) recomputed from the archive: what the run's final read-back and
/// simmer_analyze verify check beside HDF5's Fletcher-32, which a chunk zeroed with its checksum
/// passes.

#include <string>
#include <vector>

#include "simmer/io/archive_reader.hpp"

namespace simmer::parallel {

/// One line per trajectory whose stored draws, or whose trace rows, do not read back with the
/// digest the run recorded ("/posterior/params and /sample_stats: trajectory 3's 200 stored draws
/// ...", "/trace: trajectory 0's 25 trace rows ..."); none when all do, or when the archive
/// records no digest (archives from before it, or a run that has not ended).
std::vector<std::string> row_digest_mismatches(const io::ArchiveReader& reader);

}  // namespace simmer::parallel
