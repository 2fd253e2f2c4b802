#pragma once
/// \file
/// The content digests of each trajectory's stored draws, of its /trace rows and of the rows it
/// writes once (/checksums, run/archive_paths.hpp) recomputed from the archive: what the run's
/// final read-back and simmer_analyze verify check beside HDF5's Fletcher-32, which a chunk
/// zeroed with its checksum passes.

#include <string>
#include <utility>
#include <vector>

#include "simmer/io/archive_reader.hpp"

namespace simmer::parallel {

/// A digest that does not match what the archive reads back.
struct RowDigestMismatch {
  std::string object;   ///< what is damaged: /posterior/params (the draws), /trace, or the dataset
  std::string message;  ///< the line that says so
};

/// One mismatch per trajectory whose stored draws, trace rows, tracked members' rows
/// (/checksums/tracked) or rows written once (/initial, /baseline: /checksums/rows) do not read
/// back with the digest the run recorded ("/posterior/params and /sample_stats: trajectory 3's
/// 200 stored draws ...", "/trace: trajectory 0's 25 trace rows ...", "/initial/params:
/// trajectory 1's rows ..."); none when all do, or when the archive records no digest (archives
/// from before them; the draws', the trace's and the tracked rows' are written as the run ends).
/// With `draws` false the draws are not read (what summary skips: /posterior is most of a file).
std::vector<RowDigestMismatch> row_digest_mismatches(const io::ArchiveReader& reader, bool draws = true);

/// The digests of rows written once per trajectory in an archive, as (digest, dataset it digests):
/// the datasets under /checksums/rows (layout::row_digest) with a layout::kRowDigestOf attribute;
/// none in archives from before them.
std::vector<std::pair<std::string, std::string>> written_once_digests(const io::ArchiveReader& reader);

}  // namespace simmer::parallel
