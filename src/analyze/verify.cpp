// simmer_analyze verify: every dataset read back, every chunk's Fletcher-32 checksum checked.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "simmer/analyze/commands.hpp"
#include "simmer/io/archive_reader.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/budget.hpp"

namespace simmer::analyze {

int verify(const std::string& archive, std::ostream& out) {
  std::optional<io::ArchiveReader> reader;
  try {
    reader.emplace(archive);
  } catch (const io::DamagedFile& e) {
    // An HDF5 file HDF5 cannot open: damage, not a wrong argument.
    out << "DAMAGED     " << e.what() << "\n";
    out << archive << ": cannot be opened, no dataset could be checked\n";
    return kVerifyDamaged;
  }
  std::int64_t datasets = 0, bytes = 0, checked = 0, unchecked = 0;
  std::vector<std::string> damaged;
  reader->check_datasets([&](const io::DatasetCheck& c) {
    ++datasets;
    bytes += c.bytes;
    if (c.damaged()) {
      damaged.push_back(c.path);
      out << "DAMAGED     " << c.path;
      if (c.chunks > 0) out << ": " << c.damaged_chunks << " of " << c.chunks << " chunks fail to read";
      out << "\n";
      for (const auto& line : c.damage) out << "              " << line << "\n";
      if (c.damaged_chunks > static_cast<std::int64_t>(c.damage.size()) && c.chunks > 0) {
        out << "              ... and " << c.damaged_chunks - static_cast<std::int64_t>(c.damage.size()) << " more\n";
      }
    } else if (c.checksummed) {
      ++checked;
    } else if (c.elements > 0) {  // (an empty dataset has nothing to check)
      ++unchecked;
      out << "no checksum " << c.path << " (read back whole; nothing to verify it against)\n";
    }
  });
  // Attributes have no checksum of their own: /metrics is compared with its checksummed copy.
  std::vector<std::string> attributes;
  try {
    attributes = reader->attribute_mismatches(run::layout::kMetrics);
  } catch (const std::exception& e) {
    attributes.push_back(std::string(run::layout::kMetrics) + ": its attributes cannot be read: " + e.what());
  }
  for (const auto& line : attributes) out << "DAMAGED     " << line << "\n";
  if (!attributes.empty()) damaged.push_back(std::string(run::layout::kMetrics) + " attributes");
  out << datasets << " datasets, " << run::human_bytes(bytes);
  if (!damaged.empty()) {
    out << ": " << damaged.size() << " DAMAGED (";
    for (std::size_t i = 0; i < damaged.size(); ++i) out << (i > 0 ? ", " : "") << damaged[i];
    out << ")";
    if (unchecked > 0) out << ", " << unchecked << " without checksum";
    out << "\n";
    return kVerifyDamaged;
  }
  if (unchecked == 0) {
    out << ", all checksums good\n";
  } else if (checked == 0) {
    out << ", all read back; none has a checksum (written before simmer stored checksums)\n";
  } else {
    out << ", all read back; " << checked << " checksums good, " << unchecked << " datasets without checksum\n";
  }
  return 0;
}

}  // namespace simmer::analyze
