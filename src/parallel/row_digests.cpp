#include "simmer/parallel/row_digests.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "simmer/core/digest.hpp"
#include "simmer/core/error.hpp"
#include "simmer/run/archive_layout.hpp"

namespace simmer::parallel {

std::vector<std::string> row_digest_mismatches(const io::ArchiveReader& r) {
  namespace layout = run::layout;
  std::vector<std::string> out;
  if (!r.exists(layout::kDrawsDigest) || !r.exists(layout::kDrawsDigestCount)) return out;
  try {
    const auto digests = r.read_ints(layout::kDrawsDigest), counts = r.read_ints(layout::kDrawsDigestCount);
    const auto shape = r.dims(layout::kPosteriorParams);
    if (shape.size() != 3 || digests.size() != counts.size() || static_cast<std::int64_t>(digests.size()) != shape[0]) {
      return {std::string(layout::kChecksums) + " does not describe /posterior/params' " +
              (shape.empty() ? std::string("?") : std::to_string(shape[0])) + " trajectories"};
    }
    const bool f32 = r.type(layout::kPosteriorParams) == io::Type::f32;
    const auto P = static_cast<std::size_t>(shape[2]);
    const auto& fields = layout::sample_stat_fields();
    std::vector<float> row32(P);
    for (std::size_t c = 0; c < digests.size(); ++c) {
      const auto n = static_cast<std::size_t>(counts[c]);
      if (counts[c] < 0 || counts[c] > shape[1]) {
        out.push_back(std::string(layout::kDrawsDigestCount) + "[" + std::to_string(c) +
                      "] = " + std::to_string(counts[c]) + " is not a draw count");
        continue;
      }
      std::vector<std::vector<double>> stats;
      for (const auto& field : fields)
        stats.push_back(r.read_slab(layout::sample_stat(field), static_cast<std::int64_t>(c)));
      Fnv1a h;
      for (std::size_t d = 0; d < n; ++d) {
        // One draw's parameters at a time: memory stays within a row, as verify's reading does.
        const std::vector<double> params =
            r.read_slab(layout::kPosteriorParams, static_cast<std::int64_t>(c), static_cast<std::int64_t>(d));
        if (params.size() != P) throw Error("/posterior/params: a row of " + std::to_string(params.size()) + " values");
        const double* row = params.data();
        if (f32) {
          for (std::size_t i = 0; i < P; ++i) row32[i] = static_cast<float>(row[i]);  // exact: stored as float
          h.add(row32.data(), P * sizeof(float));
        } else {
          h.add(row, P * sizeof(double));
        }
        for (const auto& s : stats) h.add(&s[d], sizeof(double));
      }
      if (static_cast<std::int64_t>(h.value) != digests[c]) {
        out.push_back(std::string(layout::kPosteriorParams) + " and /sample_stats: trajectory " + std::to_string(c) +
                      "'s " + std::to_string(n) + " stored draws do not read back as the run wrote them (" +
                      layout::kDrawsDigest + " differs; a chunk overwritten with its checksum, e.g. zeroed)");
      }
    }
  } catch (const std::exception& e) {
    out.push_back(std::string("the stored draws cannot be read back for their digest: ") + e.what());
  }
  // Each trajectory's /trace rows, against /checksums/trace (archives from before it have none).
  if (!r.exists(layout::kTraceDigest) || !r.exists(layout::kTraceDigestCount)) return out;
  try {
    const auto digests = r.read_ints(layout::kTraceDigest), counts = r.read_ints(layout::kTraceDigestCount);
    const auto& fields = layout::trace_fields();
    for (std::size_t c = 0; c < digests.size() && c < counts.size(); ++c) {
      std::vector<std::vector<double>> columns;
      for (const auto& field : fields) {
        columns.push_back(r.exists(layout::trace_field(field))
                              ? r.read_slab(layout::trace_field(field), static_cast<std::int64_t>(c))
                              : std::vector<double>());
      }
      const auto n = static_cast<std::size_t>(std::max<std::int64_t>(counts[c], 0));
      bool short_rows = false;
      for (const auto& column : columns) short_rows = short_rows || column.size() < n;
      Fnv1a h;
      for (std::size_t row = 0; row < n && !short_rows; ++row) {
        for (const auto& column : columns) h.add(&column[row], sizeof(double));
      }
      if (short_rows || static_cast<std::int64_t>(h.value) != digests[c]) {
        out.push_back(std::string(layout::kTrace) + ": trajectory " + std::to_string(c) + "'s " + std::to_string(n) +
                      " trace rows do not read back as the run wrote them (" + layout::kTraceDigest +
                      " differs; a chunk overwritten with its checksum, e.g. zeroed)");
      }
    }
  } catch (const std::exception& e) {
    out.push_back(std::string(layout::kTrace) + ": cannot be read back for its digest: " + e.what());
  }
  return out;
}

}  // namespace simmer::parallel
