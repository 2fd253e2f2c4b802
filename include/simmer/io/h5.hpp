#pragma once
/// \file
/// A thin RAII layer over parallel HDF5 (the C API), HighFive-style: every handle closes
/// itself, the file is opened with MPI-IO, every raw transfer is collective, and the writer
/// counts how many transfers HDF5 really performed collectively (a test asserts it).
///
/// Parallel HDF5 rule (HDF5's collective metadata operations): every call that creates or changes
/// metadata is made by all ranks with the same arguments. Raw data: each rank selects its own
/// rows; a rank with nothing to write selects none. Groups and the file track link creation
/// order, which netCDF (and so xarray) needs.
///
/// Every dataset with at least one element is chunked and carries HDF5's Fletcher-32 filter: a
/// checksum per chunk, verified by every read (h5py, netCDF and simmer_analyze alike; a damaged
/// chunk fails to read instead of returning wrong numbers). Parallel HDF5 (1.10.2+) writes
/// filtered datasets only in collective transfers, which is the only kind this class makes.
/// Attributes and HDF5's own metadata carry no checksum (filters apply to raw data only).

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "simmer/io/types.hpp"

namespace simmer::io {

/// The innermost entry of HDF5's current error stack as " (file write failed in
/// H5FD__mpio_write)": the cause, where the outer entries only repeat the call that failed; ""
/// when the stack is empty.
std::string innermost_hdf5_error();

/// The names of the hard links in the open group `group`, in name order (soft and external links
/// left out: what they name is listed where it lives). False when HDF5 cannot list the group.
bool hard_link_names(hid_t group, std::vector<std::string>& names);

/// The attribute that holds the content digest of a dataset written whole from rank 0
/// (ParallelFile::write_from_root, put, put_strings): FNV-1a 64 (core/digest.hpp) over its
/// values as float64 (any float type), as int64 (any integer type), or each string followed by
/// a NUL, as 16 hex digits. ArchiveReader::check_datasets compares it with what it reads back,
/// which sees a chunk zeroed together with its Fletcher-32 checksum (0 for zeros).
inline constexpr const char* kContentDigest = "content_fnv1a64";
/// Where an archive lists the datasets that carry kContentDigest (ParallelFile::record_content_digests).
inline constexpr const char* kDigestManifest = "/checksums/content_digested";
/// The digest kContentDigest holds, of `n` values at `data` (float64, float32 as float64, or int64).
std::string content_digest(const void* data, std::size_t n, Type type);
/// The same of strings.
std::string content_digest(const std::vector<std::string>& values);

/// Owns one hid_t and closes it with the matching H5*close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  /// A `collective` handle (a ParallelFile's file, group, dataset or attribute) is abandoned
  /// instead of closed when it is destroyed by an exception unwinding the stack: closing it is
  /// a collective call, which would hang on a job whose other ranks are not closing it too.
  Handle(hid_t id, Closer closer, bool collective = false);
  ~Handle();
  Handle(Handle&& o) noexcept
      : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_), collective_(o.collective_) {}
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  [[nodiscard]] hid_t id() const { return id_; }
  [[nodiscard]] bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
  bool collective_ = false;
};

/// One block of rows a rank owns in a dataset whose first axis is the chain: the hyperslab
/// [chain, first .. first+count) along axis 1 (all of the remaining axes).
struct RowBlock {
  std::int64_t chain = 0;
  std::int64_t first = 0;
  std::int64_t count = 0;
};

/// What the elements of a dataset read as before they are written.
enum class Fill {
  nan,   ///< rows of a trajectory that stopped early
  zero,  ///< written later in the run (/initial, /ensemble): a killed run leaves zeros
  none,  ///< written whole right after its creation (put): filling first would write it twice
};

/// The attribute that tells netCDF readers a character array's encoding ("utf-8").
inline constexpr const char* kEncoding = "_Encoding";
/// netCDF's NAME of a dimension scale that is a dimension but no variable (followed by its length
/// as %10d): what netCDF-C writes, and how it recognises such dimensions.
inline constexpr const char* kDimensionWithoutVariable = "This is a netCDF dimension but not a netCDF variable.";
/// The string-length dimension of put_strings' character array at `path`: "<path>_strlen".
inline std::string string_dimension(const std::string& path) { return path + "_strlen"; }

class ParallelFile {
 public:
  /// Collective. Creates `path`; with `exclusive` it fails when the file exists (another run
  /// made it in between), else an existing file is truncated. Throws simmer::Error naming the path.
  static ParallelFile create(const std::string& path, MPI_Comm comm, bool exclusive = false);
  /// Collective. Opens an existing file read-only, or for writing (resume).
  static ParallelFile open_read(const std::string& path, MPI_Comm comm);
  static ParallelFile open_write(const std::string& path, MPI_Comm comm);

  /// Collective: flushes and closes.
  void close();
  [[nodiscard]] hid_t id() const { return file_.id(); }
  [[nodiscard]] int rank() const { return rank_; }

  /// Collective. Creates a group (and missing parents) with creation order tracked; an existing
  /// group is kept.
  void create_group(const std::string& path);
  /// Whether an object (group or dataset) exists at `path`, its parents included (every rank
  /// sees the same file, so every rank gets the same answer).
  [[nodiscard]] bool exists(const std::string& path) const;

  /// Collective. A dataset of `dims`, chunked by `chunk` (when empty: whole trailing axes, about
  /// 1 MB a chunk), with a Fletcher-32 checksum per chunk. With `nan_fill`, rows never written
  /// read as NaN (a trajectory that stopped early); else they read as zero.
  void create_dataset(const std::string& path, Type type, const std::vector<std::int64_t>& dims,
                      const std::vector<std::int64_t>& chunk = {}, bool nan_fill = false);

  /// Collective. Writes the whole dataset from rank 0's `data` (other ranks' is not read: their
  /// selection is empty). For small, replicated data: /data, /model, /ensemble. On rank 0 the
  /// element type must be the dataset's and `data` exactly as long as the dataset: else
  /// simmer::Error naming the dataset before any transfer (the job then ends, as for any
  /// failing write). T is double, float or std::int64_t.
  template <class T>
  void write_from_root(const std::string& path, std::span<const T> data);
  /// The same from a contiguous container (std::vector, an Eigen matrix: its data() and size()).
  template <class Container>
  void write_from_root(const std::string& path, const Container& data) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(data.data())>>;
    write_from_root(path, std::span<const T>(data.data(), static_cast<std::size_t>(data.size())));
  }

  /// Collective. Creates and writes a dataset in one go (same data on all ranks; rank 0 writes).
  void put(const std::string& path, const std::vector<double>& data, const std::vector<std::int64_t>& dims);
  void put(const std::string& path, const std::vector<std::int64_t>& data, const std::vector<std::int64_t>& dims);
  /// A string array as netCDF's character arrays (NC_CHAR): [values, width] single characters,
  /// NUL-padded, attribute _Encoding = "utf-8", axis 1 the dimension <path>_strlen (a netCDF
  /// dimension without a variable); checksummed. xarray reads it as `values` str.
  /// (netCDF-C 4.9 crashes on fixed-length string arrays; parallel HDF5 cannot write
  /// variable-length ones.) Text attributes are NUL-terminated for the same readers.
  void put_strings(const std::string& path, const std::vector<std::string>& values);

  /// Collective. Each rank writes its `blocks` (sorted by chain) from `data`, which holds the
  /// blocks' rows back to back in that order (each row = product of dims[2:] values). The
  /// element type must be the dataset's and `data` exactly as long as the blocks: else
  /// simmer::Error naming the dataset (before any rank transfers).
  void write_rows(const std::string& path, const std::vector<RowBlock>& blocks, const std::vector<double>& data);
  void write_rows(const std::string& path, const std::vector<RowBlock>& blocks, const std::vector<float>& data);
  void write_rows(const std::string& path, const std::vector<RowBlock>& blocks, const std::vector<std::int64_t>& data);

  /// Collective attributes on an object (group or dataset path; "/" for the root).
  void attribute(const std::string& object, const std::string& name, const std::string& value);
  void attribute(const std::string& object, const std::string& name, std::int64_t value);
  void attribute(const std::string& object, const std::string& name, double value);
  /// Collective. HDF5 gives attributes no checksum: `group`'s attributes written through this
  /// file are copied into the checksummed string datasets <group>/attribute_names and
  /// <group>/attribute_values (render_attribute's text), which simmer_analyze verify compares
  /// with the attributes (a flipped byte in /metrics is then found, not printed as a score).
  void mirror_attributes(const std::string& group);

  /// Collective. Makes `scale_path` (1-D) a dimension scale named `dim_name` and attaches it to
  /// axis `axis` of each dataset in `datasets`.
  void attach_scale(const std::string& scale_path, const std::string& dim_name,
                    const std::vector<std::pair<std::string, unsigned>>& datasets);

  /// The dimension name of axis `axis` of the dataset at `path` with `rank` axes.
  using AxisNamer = std::function<std::string(const std::string& path, int axis, int rank)>;
  /// Collective. Gives every axis of every dataset that has no dimension scale one: `name_of`'s
  /// name, a scale dataset of that name in the dataset's group holding 0, 1, .. (made when the
  /// group has none; when the group's is another length, "<name>_<length>" instead), so netCDF
  /// readers (xarray) see named dimensions everywhere, no phony_dim. Every rank walks the same
  /// file in the same (name) order and makes the same calls.
  void name_axes(const AxisNamer& name_of);

  /// Collective. The paths of every dataset that carries a content digest (kContentDigest), in
  /// name order, written as the string dataset `manifest` (kDigestManifest): so that a digest
  /// attribute deleted later is found missing, not its dataset left to its Fletcher-32 alone.
  /// (Called before name_axes: the coordinates that adds, indices 0, 1, .., are not listed.)
  void record_content_digests(const std::string& manifest);

  /// Collective flush to disk (what a run does after each gather).
  void flush();

  /// Raw transfers made, and how many of them HDF5 reports as collective.
  [[nodiscard]] std::int64_t transfers() const { return transfers_; }
  [[nodiscard]] std::int64_t collective_transfers() const { return collective_; }

 private:
  ParallelFile() = default;
  static ParallelFile open(const std::string& path, MPI_Comm comm, unsigned flags);
  void create_filled(const std::string& path, Type type, const std::vector<std::int64_t>& dims,
                     const std::vector<std::int64_t>& chunk, Fill fill);
  void transfer(hid_t dataset, hid_t mem_type, hid_t mem_space, hid_t file_space, const void* data);
  void write_from_root_raw(const std::string& path, const void* data, std::size_t values, Type type);
  void write_rows_raw(const std::string& path, const std::vector<RowBlock>& blocks, const void* data,
                      std::size_t values, Type type);
  Handle file_;
  Handle dxpl_;  ///< collective transfer property list
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  std::string path_;
  std::int64_t transfers_ = 0;
  std::int64_t collective_ = 0;
};

/// A closed file's dimension scale `scale` (one name_axes made, holding 0, 1, ..) replaced by
/// the strings `values` (variable-length UTF-8, one per position, as many as the dimension is
/// long), re-attached to every axis of its group's datasets it was attached to: a named
/// coordinate (xarray: a str coordinate). Serial, after every writer closed the file: parallel
/// HDF5 cannot write variable-length strings, and netCDF-C 4.9 crashes on fixed-length string
/// arrays (docs: ARCHIVE-NOTES). Throws simmer::Error naming the file and the scale.
void replace_scale_with_strings(const std::string& file, const std::string& scale,
                                const std::vector<std::string>& values);

/// CF's attributes of a categorical variable on a closed file's integer `dataset`: flag_values
/// 0, 1, .. (int64) and flag_meanings, `names` joined by spaces (a space inside a name becomes
/// '_'). Serial, like replace_scale_with_strings.
void set_categories(const std::string& file, const std::string& dataset, const std::vector<std::string>& names);

}  // namespace simmer::io
