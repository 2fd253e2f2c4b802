#pragma once
/// \file
/// Serial, read-only access to an HDF5 file (a simmer archive, or anything claiming to be one):
/// what simmer_analyze reads. Every failure throws simmer::Error naming the file and the object,
/// never an HDF5 error stack (silence_hdf5_errors). Any number of processes may hold the same
/// file open this way. HDF5's own headers stay in the .cpp.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/io/types.hpp"

namespace simmer::io {

/// One scalar attribute, as read: text, integer or real (other kinds are skipped).
struct AttributeValue {
  enum class Kind { text, integer, real };
  std::string name;
  Kind kind = Kind::text;
  std::string text;
  std::int64_t integer = 0;
  double real = 0.0;
};

/// The checksummed copy of a group's attributes (ParallelFile::mirror_attributes, read back by
/// ArchiveReader::attribute_mismatches): <group>/attribute_names and <group>/attribute_values
/// [attribute] (text). Named here, not in run/archive_paths.hpp, because io/ may not see run/.
inline constexpr const char* kAttributeNames = "attribute_names";
inline constexpr const char* kAttributeValues = "attribute_values";

/// The text an attribute's value is mirrored as (ParallelFile::mirror_attributes): reals with 17
/// significant digits, integers in decimal, text as it is.
std::string render_attribute(double value);
std::string render_attribute(std::int64_t value);
std::string render_attribute(const AttributeValue& value);
/// The scalar attributes of an open HDF5 object (group or dataset; its hid_t), in creation order.
std::vector<AttributeValue> read_attributes(std::int64_t object);

/// An attribute that differs from its checksummed copy, or is missing (`name`; empty when the
/// copy itself is unusable), and the line that says so.
struct AttributeMismatch {
  std::string name;
  std::string message;
};

/// An HDF5 file (its signature is there) that HDF5 cannot open: truncated or damaged.
class DamagedFile : public Error {
 public:
  using Error::Error;
};

/// One dataset read back in full by ArchiveReader::check_datasets.
struct DatasetCheck {
  std::string path;                 ///< "/posterior/params"
  std::int64_t bytes = 0;           ///< its values' size: elements × element size
  std::int64_t elements = 0;        ///< 0: nothing stored, nothing to check
  std::int64_t chunks = 0;          ///< chunks read (0: unchunked storage)
  bool checksummed = false;         ///< stored with HDF5's Fletcher-32 filter
  std::int64_t damaged_chunks = 0;  ///< chunks (or slabs of unchunked storage) that failed to read
  /// What failed, one line each, the first few only: "chunk [1, 128, 0] of [1, 128, 16] at
  /// byte 40960 (1048580 bytes): data error detected by Fletcher32 checksum", or why the
  /// dataset could not be opened.
  std::vector<std::string> damage;
  [[nodiscard]] bool damaged() const { return damaged_chunks > 0 || !damage.empty(); }
};

class ArchiveReader {
 public:
  /// Opens `path` read-only. Throws naming the path when it does not exist, is not a regular
  /// file, is not HDF5, or (DamagedFile) HDF5 cannot open it (truncated or damaged).
  explicit ArchiveReader(const std::string& path);
  ~ArchiveReader();
  ArchiveReader(const ArchiveReader&) = delete;
  ArchiveReader& operator=(const ArchiveReader&) = delete;
  ArchiveReader(ArchiveReader&& other) noexcept : path_(std::move(other.path_)), file_(other.file_) {
    other.file_ = -1;
  }
  ArchiveReader& operator=(ArchiveReader&& other) noexcept;

  [[nodiscard]] const std::string& path() const { return path_; }

  /// Whether the object (group or dataset, absolute path) exists; false for a broken parent.
  [[nodiscard]] bool exists(const std::string& object) const;
  [[nodiscard]] bool is_group(const std::string& object) const;
  /// Whether the object is a dimension scale (a named axis of other datasets: a coordinate such as
  /// /posterior/chain, or a string length <name>_strlen), not data of its own.
  [[nodiscard]] bool is_dimension(const std::string& object) const;
  /// Throws "'<file>' is not a simmer archive: it has no <object> (<why>)" when it is missing.
  void require(const std::string& object, const std::string& why) const;

  /// Child names of a group, in creation order when tracked (else by name).
  [[nodiscard]] std::vector<std::string> members(const std::string& group) const;

  /// Shape of a dataset.
  [[nodiscard]] std::vector<std::int64_t> dims(const std::string& dataset) const;
  /// Float32, float64 or integer storage (strings: Type::i64 is never returned for them;
  /// use is_string).
  [[nodiscard]] Type type(const std::string& dataset) const;
  [[nodiscard]] bool is_string(const std::string& dataset) const;

  /// The whole dataset converted to double / int64 (row-major).
  [[nodiscard]] std::vector<double> read_doubles(const std::string& dataset) const;
  [[nodiscard]] std::vector<std::int64_t> read_ints(const std::string& dataset) const;
  /// A 1-D string dataset (fixed- or variable-length), trailing NULs removed.
  [[nodiscard]] std::vector<std::string> read_strings(const std::string& dataset) const;
  /// The slab at `index` along the first axis (e.g. one chain of [chain, draw, param]), or with
  /// `second` ≥ 0 the row [index, second, ...]; converted to double.
  [[nodiscard]] std::vector<double> read_slab(const std::string& dataset, std::int64_t index,
                                              std::int64_t second = -1) const;

  /// Reads every dataset of the file back in full, one chunk at a time (so memory stays within
  /// one chunk; unchunked storage in slabs of at most 8 MB), with HDF5's error detection on, so
  /// every chunk's Fletcher-32 checksum is verified; calls `report` once per dataset, in name
  /// order, group by group. A damaged dataset or chunk is described in its DatasetCheck, never
  /// thrown; a group that cannot be listed is reported as a damaged entry with the group's path.
  /// With `wanted`, only the datasets whose path it accepts are read.
  void check_datasets(const std::function<void(const DatasetCheck&)>& report,
                      const std::function<bool(const std::string&)>& wanted = {}) const;

  [[nodiscard]] bool has_attribute(const std::string& object, const std::string& name) const;
  [[nodiscard]] std::string attribute_text(const std::string& object, const std::string& name) const;
  [[nodiscard]] double attribute_real(const std::string& object, const std::string& name) const;
  [[nodiscard]] std::int64_t attribute_integer(const std::string& object, const std::string& name) const;
  /// Every scalar text/integer/real attribute of an object, in creation order.
  [[nodiscard]] std::vector<AttributeValue> attributes(const std::string& object) const;
  /// `group`'s attributes against their checksummed copy (<group>/attribute_names and
  /// attribute_values, ParallelFile::mirror_attributes): one per attribute that differs or is
  /// missing; empty when they agree or the group has no copy (archives before it).
  [[nodiscard]] std::vector<AttributeMismatch> attribute_mismatches(const std::string& group) const;
  /// Every group with a checksummed copy of its attributes (attribute_names), depth first.
  [[nodiscard]] std::vector<std::string> mirrored_groups() const;

 private:
  [[noreturn]] void fail(const std::string& what) const;
  /// The dataset's HDF5 id (closed by the caller), or a thrown error naming it.
  [[nodiscard]] std::int64_t open_dataset(const std::string& dataset) const;
  std::string path_;
  std::int64_t file_ = -1;  ///< the HDF5 file id (hid_t), closed by the destructor
};

/// Stops HDF5 printing its own error stack (every failure is reported as a simmer::Error).
void silence_hdf5_errors();

}  // namespace simmer::io
