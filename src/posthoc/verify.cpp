// simmer_analyze verify: every dataset read back, every chunk's Fletcher-32 checksum checked.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/io/archive_reader.hpp"
#include "simmer/io/h5.hpp"
#include "simmer/parallel/row_digests.hpp"
#include "simmer/posthoc/commands.hpp"
#include "simmer/posthoc/run_archive.hpp"
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
      const std::string g = layout::candidate_group(name);
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

/// The groups whose attributes must have a checksummed copy in an archive of this format: before
/// format 3 (whose copies came one group at a time) only /metrics, when any group has one; from
/// format 3, once the run has finished, every choice group present and every /diagnostics.
std::vector<std::string> missing_mirrors(const io::ArchiveReader& r, const std::vector<std::string>& mirrored) {
  const auto has = [&](const std::string& g) {
    return std::find(mirrored.begin(), mirrored.end(), g) != mirrored.end();
  };
  const std::int64_t format = r.has_attribute(layout::kRoot, layout::kFormatVersion)
                                  ? r.attribute_integer(layout::kRoot, layout::kFormatVersion)
                                  : 1;
  // The copies are made at the run's end: an unfinished archive (stopped, killed, refused) has
  // none yet, though its groups have attributes from its creation.
  const bool finished = r.has_attribute(layout::kRoot, layout::kStatus) &&
                        layout::is_complete(r.attribute_text(layout::kRoot, layout::kStatus));
  std::vector<std::string> expected;
  if (format >= 3 && finished) {
    expected = {layout::kMetrics, layout::kEnsemble, layout::kDeepEnsemble, layout::kSelection,
                layout::kStacked, layout::kLadder,   layout::kDiagnostics};
    if (r.is_group(layout::kLadder)) {
      for (const auto& member : r.members(layout::kLadder)) {
        const std::string rung = layout::ladder_group(member);
        if (!r.is_group(rung)) continue;
        expected.push_back(rung);
        expected.push_back(layout::join(rung, layout::kDiagnosticsName));
      }
    }
  } else if (!mirrored.empty()) {
    expected = {layout::kMetrics};
  }
  std::vector<std::string> out;
  for (const auto& g : expected) {
    if (r.is_group(g) && !has(g) && !r.attributes(g).empty()) out.push_back(g);
  }
  return out;
}

}  // namespace

ArchiveDamage find_damage(const io::ArchiveReader& r, const std::function<bool(const std::string&)>& wanted) {
  ArchiveDamage d;
  const auto damaged = [&](const std::string& object, const std::string& line) {
    d.objects.push_back(object);
    d.lines.push_back(line);
  };
  // The objects a simmer archive cannot be without (a file with nothing but a version attribute
  // used to pass).
  for (const char* required : {layout::kConfig, layout::kPosteriorParams}) {
    if (!r.exists(required)) damaged(required, std::string(required) + " is missing: not a whole simmer archive");
  }
  r.check_datasets(
      [&](const io::DatasetCheck& c) {
        ++d.datasets;
        d.bytes += c.bytes;
        if (c.damaged()) {
          std::string line = c.path;
          if (c.chunks > 0 && c.damaged_chunks > 0) {
            line +=
                ": " + std::to_string(c.damaged_chunks) + " of " + std::to_string(c.chunks) + " chunks fail to read";
          }
          for (const auto& detail : c.damage) line += "\n              " + detail;
          if (c.damaged_chunks > static_cast<std::int64_t>(c.damage.size()) && c.chunks > 0) {
            line += "\n              ... and " +
                    std::to_string(c.damaged_chunks - static_cast<std::int64_t>(c.damage.size())) + " more";
          }
          damaged(c.path, line);
        } else if (c.checksummed) {
          ++d.checked;
        } else if (c.elements > 0) {  // (an empty dataset has nothing to check)
          d.unchecked.push_back(c.path);
        }
      },
      wanted);
  // Attributes have no checksum of their own: every group with a checksummed copy of its
  // attributes (the scores, choices and verdicts) is compared with it, the copies an archive of
  // its format must have are there, and the choices agree with each other.
  std::vector<std::string> groups;
  try {
    groups = r.mirrored_groups();
  } catch (const std::exception& e) {
    damaged("the group tree", std::string("the groups cannot be listed: ") + e.what());
  }
  for (const auto& group : groups) {
    std::vector<io::AttributeMismatch> attributes;
    try {
      attributes = r.attribute_mismatches(group);
    } catch (const std::exception& e) {
      attributes.push_back({"", group + ": its attributes cannot be read: " + e.what()});
    }
    for (const auto& a : attributes) damaged(group + " attributes", a.message);
  }
  // The stored draws, the trace and the rows written once against the digests the run recorded of
  // them (zeros under a zeroed checksum). Not again for what a checksum already found damaged:
  // the draws' digest covers /sample_stats too, the trace's every /trace dataset.
  const auto found = [&](const std::string& object) {
    return std::any_of(d.objects.begin(), d.objects.end(), [&](const std::string& o) {
      return o == object || o.rfind(object + "/", 0) == 0 ||
             (object == layout::kPosteriorParams && o.rfind(std::string(layout::kSampleStats) + "/", 0) == 0);
    });
  };
  const bool draws = !wanted || wanted(layout::kPosteriorParams);
  std::vector<parallel::RowDigestMismatch> mismatches =
      parallel::row_digest_mismatches(r, draws && !found(layout::kPosteriorParams));
  for (const auto& m : mismatches) {
    if ((!wanted || wanted(m.object)) && !found(m.object)) damaged(m.object, m.message);
  }
  // Each dataset the run wrote with a content digest still has it (a deleted attribute would leave
  // the dataset to its Fletcher-32, which a zeroed chunk passes).
  try {
    if (r.exists(io::kDigestManifest)) {
      for (const auto& path : r.read_strings(io::kDigestManifest)) {
        if (wanted && !wanted(path)) continue;
        if (!r.exists(path)) {
          damaged(path, path + ": missing, though " + io::kDigestManifest + " lists it");
        } else if (!r.has_attribute(path, io::kContentDigest)) {
          damaged(path, path + ": its content digest (" + io::kContentDigest + ") is gone, though " +
                            io::kDigestManifest + " lists it: its content cannot be checked");
        }
      }
    }
  } catch (const std::exception& e) {
    damaged(io::kDigestManifest, std::string(io::kDigestManifest) + ": cannot be read: " + e.what());
  }
  try {
    for (const auto& g : missing_mirrors(r, groups)) {
      damaged(g + " attributes", g + ": the checksummed copy of its attributes (" + io::kAttributeNames + ", " +
                                     io::kAttributeValues + ") is missing, so its attributes cannot be checked");
    }
    for (const auto& line : choice_mismatches(r)) damaged("the run's choice", line);
  } catch (const std::exception& e) {
    damaged("the run's choice", std::string("the choices cannot be read: ") + e.what());
  }
  return d;
}

namespace {

/// verify in this process: what verify() runs in a child.
int verify_here(const std::string& archive, std::ostream& out) {
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
  const ArchiveDamage d = find_damage(*reader);
  for (const auto& line : d.lines) out << "DAMAGED     " << line << "\n";
  for (const auto& path : d.unchecked)
    out << "no checksum " << path << " (read back whole; nothing to verify it against)\n";
  out << d.datasets << " datasets, " << run::human_bytes(d.bytes);
  if (!d.objects.empty()) {
    std::vector<std::string> objects;  // each once, in the order found
    for (const auto& o : d.objects) {
      if (std::find(objects.begin(), objects.end(), o) == objects.end()) objects.push_back(o);
    }
    out << ": " << objects.size() << " DAMAGED (";
    for (std::size_t i = 0; i < objects.size(); ++i) out << (i > 0 ? ", " : "") << objects[i];
    out << ")";
    if (!d.unchecked.empty()) out << ", " << d.unchecked.size() << " without checksum";
    out << "\n";
    return kVerifyDamaged;
  }
  if (d.unchecked.empty()) {
    out << ", all checksums good\n";
  } else if (d.checked == 0) {
    out << ", all read back; none has a checksum (written before simmer stored checksums)\n";
  } else {
    out << ", all read back; " << d.checked << " checksums good, " << d.unchecked.size()
        << " datasets without checksum\n";
  }
  return 0;
}

/// A line the child sends instead of its output when verify refuses the file (exit 2).
constexpr char kRefusal[] = "\x01simmer refusal: ";

}  // namespace

int in_child(const std::string& archive, std::ostream& out, const std::function<int(std::ostream&)>& work) {
  // HDF5 reads a damaged file's metadata (object headers, link tables) without checksums, and
  // some damage makes the library itself crash (a zeroed tail: a SIGSEGV freeing a link table in
  // H5Literate, seen with HDF5 1.10). The work runs in a child process, whose output is passed
  // on, so that such a crash is reported as damage, after what was read before it.
  int fd[2];
  if (::pipe(fd) != 0) return work(out);
  std::cout.flush();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd[0]);
    ::close(fd[1]);
    return work(out);
  }
  if (pid == 0) {
    ::close(fd[0]);
    std::ofstream child("/proc/self/fd/" + std::to_string(fd[1]));
    child << std::unitbuf;
    int code = 0;
    try {
      code = work(child);
    } catch (const std::exception& e) {
      child << kRefusal << e.what() << "\n";
      code = 2;
    }
    child.close();
    ::_exit(code);
  }
  ::close(fd[1]);
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  const auto refusal = text.find(kRefusal);
  if (refusal != std::string::npos) {
    std::string why = text.substr(refusal + sizeof kRefusal - 1);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    throw Error(why);
  }
  out << text;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  const int signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  out << "DAMAGED     HDF5 stopped with signal " << signal << " (" << ::strsignal(signal)
      << ") while reading the file's structure after the lines above: its metadata (object headers, link "
         "tables) is damaged\n";
  out << archive << ": DAMAGED, the check could not finish\n";
  return kVerifyDamaged;
}

int verify(const std::string& archive, std::ostream& out) {
  return in_child(archive, out, [&](std::ostream& o) { return verify_here(archive, o); });
}

}  // namespace simmer::posthoc
