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
namespace {

/// The datasets under `group`, recursively (full paths).
void datasets_under(const io::ArchiveReader& r, const std::string& group, std::vector<std::string>& out) {
  for (const auto& name : r.members(group)) {
    const std::string path = group + "/" + name;
    if (r.is_group(path)) {
      datasets_under(r, path, out);
    } else {
      out.push_back(path);
    }
  }
}

/// Each trajectory's slab of the datasets written once per trajectory against its digest under
/// /checksums/rows (layout::row_digest).
void check_written_once(const io::ArchiveReader& r, std::vector<RowDigestMismatch>& out) {
  std::vector<std::pair<std::string, std::string>> digests;
  try {
    digests = written_once_digests(r);
  } catch (const std::exception& e) {
    out.push_back({run::layout::kRowDigests,
                   std::string(run::layout::kRowDigests) + ": its digests cannot be listed: " + e.what()});
    return;
  }
  for (const auto& [digest, dataset] : digests) {
    std::vector<std::int64_t> values;
    try {
      values = r.read_ints(digest);  // (damage here is the digest's, not the dataset's)
    } catch (const std::exception& e) {
      out.push_back({digest, digest + ": cannot be read: " + e.what()});
      continue;
    }
    try {
      if (!r.exists(dataset)) {
        out.push_back({dataset, dataset + ": missing, though " + digest + " holds its digest"});
        continue;
      }
      const auto shape = r.dims(dataset);
      if (shape.empty() || static_cast<std::int64_t>(values.size()) != shape[0]) {
        out.push_back({digest, digest + " does not describe " + dataset + "'s trajectories"});
        continue;
      }
      for (std::size_t c = 0; c < values.size(); ++c) {
        if (values[c] == 0) continue;  // no rows of this trajectory here
        const std::vector<double> slab = r.read_slab(dataset, static_cast<std::int64_t>(c));
        Fnv1a h;
        h.add(slab.data(), slab.size() * sizeof(double));
        if (static_cast<std::int64_t>(h.value) != values[c]) {
          out.push_back({dataset, dataset + ": trajectory " + std::to_string(c) +
                                      "'s rows do not read back as the run wrote them (" + digest +
                                      " differs; a chunk overwritten with its checksum, e.g. zeroed)"});
        }
      }
    } catch (const std::exception& e) {
      out.push_back({dataset, dataset + ": cannot be read back for its digest: " + e.what()});
    }
  }
}

/// Each trajectory's stored draws (/posterior/params and /sample_stats) against /checksums/draws.
void check_draws(const io::ArchiveReader& r, std::vector<RowDigestMismatch>& out) {
  namespace layout = run::layout;
  const auto draws = [&](const std::string& line) { out.push_back({layout::kPosteriorParams, line}); };
  try {
    const auto digests = r.read_ints(layout::kDrawsDigest), counts = r.read_ints(layout::kDrawsDigestCount);
    const auto shape = r.dims(layout::kPosteriorParams);
    if (shape.size() != 3 || digests.size() != counts.size() || static_cast<std::int64_t>(digests.size()) != shape[0]) {
      draws(std::string(layout::kChecksums) + " does not describe /posterior/params' " +
            (shape.empty() ? std::string("?") : std::to_string(shape[0])) + " trajectories");
      return;
    }
    const bool f32 = r.type(layout::kPosteriorParams) == io::Type::f32;
    const auto P = static_cast<std::size_t>(shape[2]);
    const auto& fields = layout::sample_stat_fields();
    std::vector<float> row32(P);
    for (std::size_t c = 0; c < digests.size(); ++c) {
      const auto n = static_cast<std::size_t>(counts[c]);
      if (counts[c] < 0 || counts[c] > shape[1]) {
        draws(std::string(layout::kDrawsDigestCount) + "[" + std::to_string(c) + "] = " + std::to_string(counts[c]) +
              " is not a draw count");
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
        draws(std::string(layout::kPosteriorParams) + " and /sample_stats: trajectory " + std::to_string(c) + "'s " +
              std::to_string(n) + " stored draws do not read back as the run wrote them (" + layout::kDrawsDigest +
              " differs; a chunk overwritten with its checksum, e.g. zeroed)");
      }
    }
  } catch (const std::exception& e) {
    draws(std::string("the stored draws cannot be read back for their digest: ") + e.what());
  }
}

/// Each trajectory's /trace rows against /checksums/trace (archives from before it have none).
void check_trace(const io::ArchiveReader& r, std::vector<RowDigestMismatch>& out) {
  namespace layout = run::layout;
  const auto trace = [&](const std::string& line) { out.push_back({layout::kTrace, line}); };
  if (!r.exists(layout::kTraceDigest) || !r.exists(layout::kTraceDigestCount)) return;
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
        trace(std::string(layout::kTrace) + ": trajectory " + std::to_string(c) + "'s " + std::to_string(n) +
              " trace rows do not read back as the run wrote them (" + layout::kTraceDigest +
              " differs; a chunk overwritten with its checksum, e.g. zeroed)");
      }
    }
  } catch (const std::exception& e) {
    trace(std::string(layout::kTrace) + ": cannot be read back for its digest: " + e.what());
  }
}

/// Each trajectory's rows of /ensemble/test/tracked against /checksums/tracked: its first
/// tracked_count members' rows, in member order.
void check_tracked(const io::ArchiveReader& r, std::vector<RowDigestMismatch>& out) {
  namespace layout = run::layout;
  if (!r.exists(layout::kTrackedDigest) || !r.exists(layout::kTrackedDigestCount) || !r.exists(layout::kTracked)) {
    return;
  }
  try {
    const auto digests = r.read_ints(layout::kTrackedDigest), counts = r.read_ints(layout::kTrackedDigestCount);
    const auto shape = r.dims(layout::kTracked);  // [chain, member, point]
    if (shape.size() != 3) throw Error("not [chain, member, point]");
    for (std::size_t c = 0; c < digests.size() && c < counts.size(); ++c) {
      const std::vector<double> rows = r.read_slab(layout::kTracked, static_cast<std::int64_t>(c));
      const auto n = static_cast<std::size_t>(std::max<std::int64_t>(counts[c], 0) * shape[2]);
      Fnv1a h;
      if (n <= rows.size()) h.add(rows.data(), n * sizeof(double));
      if (n > rows.size() || static_cast<std::int64_t>(h.value) != digests[c]) {
        out.push_back({layout::kTracked,
                       std::string(layout::kTracked) + ": trajectory " + std::to_string(c) + "'s " +
                           std::to_string(counts[c]) + " members' rows do not read back as the run wrote them (" +
                           layout::kTrackedDigest + " differs; a chunk overwritten with its checksum, e.g. zeroed)"});
      }
    }
  } catch (const std::exception& e) {
    out.push_back(
        {layout::kTracked, std::string(layout::kTracked) + ": cannot be read back for its digest: " + e.what()});
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> written_once_digests(const io::ArchiveReader& r) {
  std::vector<std::string> all;
  std::vector<std::pair<std::string, std::string>> out;
  if (!r.is_group(run::layout::kRowDigests)) return out;
  datasets_under(r, run::layout::kRowDigests, all);
  for (auto& path : all) {
    if (r.has_attribute(path, run::layout::kRowDigestOf)) {
      out.emplace_back(path, r.attribute_text(path, run::layout::kRowDigestOf));
    }
  }
  return out;
}

std::vector<RowDigestMismatch> row_digest_mismatches(const io::ArchiveReader& r, bool with_draws) {
  namespace layout = run::layout;
  std::vector<RowDigestMismatch> out;
  check_written_once(r, out);  // (written as the run starts: a stopped run's archive has them too)
  if (!r.exists(layout::kDrawsDigest) || !r.exists(layout::kDrawsDigestCount)) return out;
  if (with_draws) check_draws(r, out);
  check_trace(r, out);
  check_tracked(r, out);
  return out;
}

}  // namespace simmer::parallel
