// simmer_analyze verify: every dataset read back, every chunk's Fletcher-32 checksum checked.
#include <algorithm>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/io/archive_reader.hpp"
#include "simmer/posthoc/commands.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/budget.hpp"

namespace simmer::posthoc {

namespace {

namespace layout = run::layout;

/// The choices that name each other: /selection's chosen row and name, the candidates' groups
/// and their `candidate` attributes, /ensemble's candidate among them. A flipped byte in a name
/// (an attribute, a group's name) breaks one of these links.
std::vector<std::string> choice_mismatches(const io::ArchiveReader& r) {
  std::vector<std::string> out;
  const std::string column = layout::selection_column(layout::kCandidate);
  std::vector<std::string> names{layout::kSimmeringName, layout::kDeepEnsembleName};
  if (r.exists(column)) {
    const auto candidates = r.read_strings(column);
    names = candidates;
    if (r.has_attribute(layout::kSelection, layout::kSelected) &&
        r.has_attribute(layout::kSelection, layout::kSelectedName)) {
      const auto k = r.attribute_integer(layout::kSelection, layout::kSelected);
      const std::string name = r.attribute_text(layout::kSelection, layout::kSelectedName);
      if (k < 0 || k >= static_cast<std::int64_t>(candidates.size()) ||
          candidates[static_cast<std::size_t>(k)] != name) {
        out.push_back(std::string(layout::kSelection) + "@" + layout::kSelectedName + " = '" + name + "' is not row " +
                      std::to_string(k) + " of " + column);
      }
    }
    for (const auto& name : candidates) {
      if (name == layout::kDeepEnsembleName) continue;
      const std::string g = layout::ladder_group(name);
      if (!r.is_group(g)) {
        out.push_back(column + " names '" + name + "', but " + g + " does not exist");
      } else if (r.has_attribute(g, layout::kCandidate) && r.attribute_text(g, layout::kCandidate) != name) {
        out.push_back(g + "@" + layout::kCandidate + " = '" + r.attribute_text(g, layout::kCandidate) + "'");
      }
    }
    if (r.is_group(layout::kLadder)) {
      for (const auto& member : r.members(layout::kLadder)) {
        if (r.is_group(layout::ladder_group(member)) &&
            std::find(candidates.begin(), candidates.end(), member) == candidates.end()) {
          out.push_back(std::string(layout::kLadder) + "/" + member + " is no candidate of " + column);
        }
      }
    }
  }
  if (r.has_attribute(layout::kEnsemble, layout::kCandidate)) {
    const std::string chosen = r.attribute_text(layout::kEnsemble, layout::kCandidate);
    if (std::find(names.begin(), names.end(), chosen) == names.end()) {
      out.push_back(std::string(layout::kEnsemble) + "@" + layout::kCandidate + " = '" + chosen +
                    "' names no candidate of the run");
    }
  }
  return out;
}

}  // namespace

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
  if (!reader->has_attribute(layout::kRoot, layout::kSimmerVersion)) {
    throw Error("'" + archive + "' is not a simmer archive (no root attribute " + layout::kSimmerVersion +
                "): verify checks simmer archives");
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
  // Attributes have no checksum of their own: every group with a checksummed copy of its
  // attributes (the scores and choices) is compared with it, and the choices with each other.
  std::vector<std::string> groups;
  try {
    groups = reader->mirrored_groups();
  } catch (const std::exception& e) {
    out << "DAMAGED     the groups cannot be listed: " << e.what() << "\n";
    damaged.emplace_back("the group tree");
  }
  for (const auto& group : groups) {
    std::vector<io::AttributeMismatch> attributes;
    try {
      attributes = reader->attribute_mismatches(group);
    } catch (const std::exception& e) {
      attributes.push_back({"", group + ": its attributes cannot be read: " + e.what()});
    }
    for (const auto& a : attributes) out << "DAMAGED     " << a.message << "\n";
    if (!attributes.empty()) damaged.push_back(group + " attributes");
  }
  std::vector<std::string> choices;
  try {
    choices = choice_mismatches(*reader);
  } catch (const std::exception& e) {
    choices.push_back(std::string("the choices cannot be read: ") + e.what());
  }
  for (const auto& line : choices) out << "DAMAGED     " << line << "\n";
  if (!choices.empty()) damaged.emplace_back("the run's choice");
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

}  // namespace simmer::posthoc
