#include "simmer/io/h5.hpp"

#include <hdf5_hl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <utility>

#include "h5_checks.hpp"
#include "simmer/core/digest.hpp"
#include "simmer/core/error.hpp"
#include "simmer/io/archive_reader.hpp"

namespace simmer::io {
using detail::check;
using detail::kCollective;

std::string innermost_hdf5_error() {
  std::string cause;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
        if (n == 0 && e != nullptr) {
          *static_cast<std::string*>(data) =
              std::string(e->desc != nullptr ? e->desc : "") + " in " + (e->func_name != nullptr ? e->func_name : "?");
        }
        return 0;
      },
      &cause);
  return cause.empty() ? std::string() : " (" + cause + ")";
}

bool hard_link_names(hid_t group, std::vector<std::string>& names) {
#if H5_VERSION_GE(1, 12, 0)
  using LinkInfo = H5L_info2_t;
#else
  using LinkInfo = H5L_info_t;
#endif
  const auto hard = [](hid_t, const char* name, const LinkInfo* info, void* data) -> herr_t {
    if (info != nullptr && info->type == H5L_TYPE_HARD)
      static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
  };
  hsize_t idx = 0;
#if H5_VERSION_GE(1, 12, 0)
  return H5Literate2(group, H5_INDEX_NAME, H5_ITER_INC, &idx, hard, &names) >= 0;
#else
  return H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &idx, hard, &names) >= 0;
#endif
}

namespace {

/// The memory and the file type of a Type: {native, little-endian IEEE or two's complement}.
std::pair<hid_t, hid_t> type_ids(Type t) {
  switch (t) {
    case Type::f64:
      return {H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE};
    case Type::f32:
      return {H5T_NATIVE_FLOAT, H5T_IEEE_F32LE};
    case Type::i64:
      return {H5T_NATIVE_INT64, H5T_STD_I64LE};
  }
  return {H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE};
}

hid_t native(Type t) { return type_ids(t).first; }
hid_t file_type(Type t) { return type_ids(t).second; }

std::vector<hsize_t> to_hsize(const std::vector<std::int64_t>& v) {
  std::vector<hsize_t> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), [](std::int64_t x) { return static_cast<hsize_t>(x); });
  return out;
}

Handle open_object(hid_t file, const std::string& path) {
  return {check(H5Oopen(file, path.c_str(), H5P_DEFAULT), "open '" + path + "'"), H5Oclose, kCollective};
}

/// About this many bytes per chunk for a dataset whose writer names no chunk shape: small
/// datasets are one chunk, large ones (a big /data/train/x) are split along their first axes.
constexpr hsize_t kDefaultChunkBytes = hsize_t{1} << 20;

/// A chunk shape of about kDefaultChunkBytes: whole trailing axes, the leading ones cut.
std::vector<hsize_t> default_chunk(const std::vector<hsize_t>& dims, std::size_t element_bytes) {
  std::vector<hsize_t> chunk(dims);
  hsize_t trailing = element_bytes;  // bytes of one index of the current axis, the rest whole
  for (std::size_t d = dims.size(); d-- > 1;) trailing *= dims[d];
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (trailing * dims[d] <= kDefaultChunkBytes) break;  // this axis whole, and so the ones after it
    if (trailing <= kDefaultChunkBytes) {
      chunk[d] = kDefaultChunkBytes / trailing;  // whole indices of this axis, fewer than dims[d]
      break;
    }
    chunk[d] = 1;             // one index of this axis is still too big: cut the next axis too
    trailing /= dims[d + 1];  // (d is not the last axis: there trailing is one element)
  }
  return chunk;
}

/// A dataset creation property list with HDF5's Fletcher-32 checksum filter on chunks of `chunk`
/// (or default_chunk): every chunk is stored with a checksum that every read verifies. Filters
/// need chunked storage; parallel HDF5 writes filtered datasets only collectively, which every
/// ParallelFile transfer is. The storage is allocated at creation (parallel HDF5 needs it
/// allocated then, not lazily by one rank) and filled with `fill`, so a chunk never written
/// reads back as its fill value with a valid checksum, not as whatever the disk held. A dataset
/// with no elements has no chunks (HDF5 refuses a chunk larger than a zero extent) and stays
/// contiguous.
Handle checksummed_plist(const std::string& path, const std::vector<hsize_t>& dims, std::size_t element_bytes,
                         const std::vector<std::int64_t>& chunk, Fill fill) {
  Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate"), H5Pclose);
  check(H5Pset_alloc_time(dcpl.id(), H5D_ALLOC_TIME_EARLY), "alloc time");
  const bool any_zero = std::any_of(dims.begin(), dims.end(), [](hsize_t d) { return d == 0; });
  if (any_zero) {
    check(H5Pset_fill_time(dcpl.id(), H5D_FILL_TIME_NEVER), "fill time");
    return dcpl;
  }
  std::vector<hsize_t> shape = chunk.empty() ? default_chunk(dims, element_bytes) : to_hsize(chunk);
  check(H5Pset_chunk(dcpl.id(), static_cast<int>(shape.size()), shape.data()), "chunk '" + path + "'");
  check(H5Pset_fletcher32(dcpl.id()), "Fletcher-32 checksum on '" + path + "'");
  if (fill == Fill::nan) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    check(H5Pset_fill_value(dcpl.id(), H5T_NATIVE_DOUBLE, &nan), "fill value");
  }
  check(H5Pset_fill_time(dcpl.id(), fill == Fill::none ? H5D_FILL_TIME_NEVER : H5D_FILL_TIME_ALLOC), "fill time");
  return dcpl;
}

Handle group_plist() {
  Handle gcpl(check(H5Pcreate(H5P_GROUP_CREATE), "H5Pcreate"), H5Pclose);
  check(H5Pset_link_creation_order(gcpl.id(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), "link creation order");
  return gcpl;
}

/// Fault injection for the error-path tests: SIMMER_TEST_FAIL_WRITE="DATASET:N:RANK" makes the
/// N-th (1-based) row write (or whole-dataset write from rank 0) to DATASET throw on RANK alone, with the dataset open,
/// while the other ranks go on into the collective transfer: the situation that used to hang the job.
void injected_failure(const std::string& path, int rank) {
  static const char* spec = std::getenv("SIMMER_TEST_FAIL_WRITE");
  static int seen = 0;
  if (spec == nullptr) return;
  const std::string s(spec);
  const auto a = s.rfind(':');
  const auto b = a == std::string::npos || a == 0 ? std::string::npos : s.rfind(':', a - 1);
  if (b == std::string::npos || s.substr(0, b) != path) return;
  if (++seen != std::atoi(s.c_str() + b + 1) || rank != std::atoi(s.c_str() + a + 1)) return;
  throw Error("HDF5: write to '" + path + "' failed (injected by SIMMER_TEST_FAIL_WRITE)");
}

}  // namespace

Handle::Handle(hid_t id, Closer closer, bool collective) : id_(id), closer_(closer), collective_(collective) {}

Handle::~Handle() {
  if (id_ < 0 || closer_ == nullptr) return;
  // Abandoned, not closed, while an exception unwinds: the job is about to abort, and a
  // collective close here could wait forever for ranks that are elsewhere.
  if (collective_ && std::uncaught_exceptions() > 0) return;
  closer_(id_);
}

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
    id_ = std::exchange(o.id_, H5I_INVALID_HID);
    closer_ = o.closer_;
    collective_ = o.collective_;
  }
  return *this;
}

namespace {

/// File access through MPI-IO on `comm`, metadata read and written collectively.
Handle mpio_access(MPI_Comm comm) {
  Handle fapl(check(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate"), H5Pclose);
  check(H5Pset_fapl_mpio(fapl.id(), comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
  check(H5Pset_all_coll_metadata_ops(fapl.id(), true), "collective metadata reads");
  check(H5Pset_coll_metadata_write(fapl.id(), true), "collective metadata writes");
  return fapl;
}

}  // namespace

ParallelFile ParallelFile::create(const std::string& path, MPI_Comm comm, bool exclusive) {
  ParallelFile f;
  f.comm_ = comm;
  f.path_ = path;
  MPI_Comm_rank(comm, &f.rank_);
  const Handle fapl = mpio_access(comm);
  Handle fcpl(check(H5Pcreate(H5P_FILE_CREATE), "H5Pcreate"), H5Pclose);
  check(H5Pset_link_creation_order(fcpl.id(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), "link creation order");
  const hid_t id = H5Fcreate(path.c_str(), exclusive ? H5F_ACC_EXCL : H5F_ACC_TRUNC, fcpl.id(), fapl.id());
  if (id < 0) {
    throw Error("cannot create archive '" + path + "'" +
                (exclusive ? " (it exists: another run may have created it since this one started)"
                           : " (HDF5/MPI-IO create failed)"));
  }
  f.file_ = Handle(id, H5Fclose, kCollective);
  f.dxpl_ = Handle(check(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate"), H5Pclose);
  check(H5Pset_dxpl_mpio(f.dxpl_.id(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
  return f;
}

ParallelFile ParallelFile::open(const std::string& path, MPI_Comm comm, unsigned flags) {
  ParallelFile f;
  f.comm_ = comm;
  f.path_ = path;
  MPI_Comm_rank(comm, &f.rank_);
  const Handle fapl = mpio_access(comm);
  const hid_t id = H5Fopen(path.c_str(), flags, fapl.id());
  if (id < 0) throw Error("cannot open archive '" + path + "' as HDF5");
  f.file_ = Handle(id, H5Fclose, kCollective);
  f.dxpl_ = Handle(check(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate"), H5Pclose);
  check(H5Pset_dxpl_mpio(f.dxpl_.id(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
  return f;
}

ParallelFile ParallelFile::open_read(const std::string& path, MPI_Comm comm) {
  return open(path, comm, H5F_ACC_RDONLY);
}

ParallelFile ParallelFile::open_write(const std::string& path, MPI_Comm comm) { return open(path, comm, H5F_ACC_RDWR); }

void ParallelFile::close() {
  if (!file_.valid()) return;
  check(H5Fflush(file_.id(), H5F_SCOPE_GLOBAL), "flush '" + path_ + "'");
  dxpl_ = Handle();
  file_ = Handle();
}

void ParallelFile::flush() { check(H5Fflush(file_.id(), H5F_SCOPE_GLOBAL), "flush '" + path_ + "'"); }

void ParallelFile::create_group(const std::string& path) {
  // An existing group is kept (a resumed run's finish() asks again).
  if (exists(path)) return;
  // Missing parents first, each made as this one is (not HDF5's intermediate groups, which
  // would not track their links' creation order).
  if (const auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) create_group(path.substr(0, slash));
  Handle gcpl = group_plist();
  Handle lcpl(check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"), H5Pclose);
  Handle g(
      check(H5Gcreate2(file_.id(), path.c_str(), lcpl.id(), gcpl.id(), H5P_DEFAULT), "create group '" + path + "'"),
      H5Gclose, kCollective);
}

bool ParallelFile::exists(const std::string& path) const {
  // H5Lexists fails on a missing parent: test each prefix in turn.
  std::size_t slash = 0;
  while (slash != std::string::npos) {
    slash = path.find('/', slash + 1);
    const std::string prefix = path.substr(0, slash);
    if (prefix.empty() || prefix == "/") continue;
    if (H5Lexists(file_.id(), prefix.c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return true;
}

void ParallelFile::create_dataset(const std::string& path, Type type, const std::vector<std::int64_t>& dims,
                                  const std::vector<std::int64_t>& chunk, bool nan_fill) {
  create_filled(path, type, dims, chunk, nan_fill && type != Type::i64 ? Fill::nan : Fill::zero);
}

void ParallelFile::create_filled(const std::string& path, Type type, const std::vector<std::int64_t>& dims,
                                 const std::vector<std::int64_t>& chunk, Fill fill) {
  // A resumed run may find a dataset its first attempt made near the end: replace it.
  if (H5Lexists(file_.id(), path.c_str(), H5P_DEFAULT) > 0) {
    check(H5Ldelete(file_.id(), path.c_str(), H5P_DEFAULT), "replace '" + path + "'");
  }
  const auto hdims = to_hsize(dims);
  Handle space(
      check(H5Screate_simple(static_cast<int>(hdims.size()), hdims.data(), nullptr), "dataspace for '" + path + "'"),
      H5Sclose);
  Handle dcpl = checksummed_plist(path, hdims, type == Type::f32 ? 4 : 8, chunk, fill);
  Handle lcpl(check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"), H5Pclose);
  check(H5Pset_create_intermediate_group(lcpl.id(), 1), "intermediate groups");
  Handle ds(check(H5Dcreate2(file_.id(), path.c_str(), file_type(type), space.id(), lcpl.id(), dcpl.id(), H5P_DEFAULT),
                  "create dataset '" + path + "'"),
            H5Dclose, kCollective);
}

void ParallelFile::transfer(hid_t dataset, hid_t mem_type, hid_t mem_space, hid_t file_space, const void* data) {
  check(H5Dwrite(dataset, mem_type, mem_space, file_space, dxpl_.id(), data), "write");
  H5D_mpio_actual_io_mode_t mode = H5D_MPIO_NO_COLLECTIVE;
  check(H5Pget_mpio_actual_io_mode(dxpl_.id(), &mode), "H5Pget_mpio_actual_io_mode");
  ++transfers_;
  if (mode == H5D_MPIO_CHUNK_COLLECTIVE || mode == H5D_MPIO_CONTIGUOUS_COLLECTIVE || mode == H5D_MPIO_CHUNK_MIXED) {
    ++collective_;
  }
}

template <class T>
void ParallelFile::write_from_root(const std::string& path, std::span<const T> data) {
  constexpr Type type = std::is_same_v<T, double> ? Type::f64 : std::is_same_v<T, float> ? Type::f32 : Type::i64;
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, float> || std::is_same_v<T, std::int64_t>);
  write_from_root_raw(path, data.data(), data.size(), type);
}
template void ParallelFile::write_from_root<double>(const std::string&, std::span<const double>);
template void ParallelFile::write_from_root<float>(const std::string&, std::span<const float>);
template void ParallelFile::write_from_root<std::int64_t>(const std::string&, std::span<const std::int64_t>);

std::string content_digest(const void* data, std::size_t n, Type type) {
  Fnv1a digest;
  for (std::size_t i = 0; i < n; ++i) {
    if (type == Type::i64) {
      digest.add(static_cast<const std::int64_t*>(data) + i, sizeof(std::int64_t));
    } else {
      const double v = type == Type::f32 ? static_cast<double>(static_cast<const float*>(data)[i])
                                         : static_cast<const double*>(data)[i];
      digest.add(&v, sizeof v);
    }
  }
  return digest.hex();
}

std::string content_digest(const std::vector<std::string>& values) {
  Fnv1a digest;
  for (const auto& v : values) digest.add(v.c_str(), v.size() + 1);
  return digest.hex();
}

void ParallelFile::write_from_root_raw(const std::string& path, const void* data, std::size_t values, Type type) {
  Handle ds(check(H5Dopen2(file_.id(), path.c_str(), H5P_DEFAULT), "open '" + path + "'"), H5Dclose, kCollective);
  injected_failure(path, rank_);
  Handle fspace(check(H5Dget_space(ds.id()), "space"), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(fspace.id());
  // Rank 0's buffer against the dataset, the verdict shared: every rank refuses alike, before
  // any transfer (a refusal on rank 0 alone would leave the others waiting in the transfer).
  std::string why;
  if (rank_ == 0) {
    Handle stored(check(H5Dget_type(ds.id()), "type"), H5Tclose);
    if (H5Tequal(stored.id(), native(type)) <= 0) {
      why = "the buffer's element type is not the dataset's";
    } else if (static_cast<hssize_t>(values) != n) {
      why = "the buffer holds " + std::to_string(values) + " values, the dataset " + std::to_string(n);
    }
  }
  int refused = why.empty() ? 0 : 1;
  MPI_Bcast(&refused, 1, MPI_INT, 0, comm_);
  if (refused != 0) {
    ds = Handle();  // closed on every rank together (collective), not abandoned
    throw Error("HDF5: write to '" + path + "': " + (rank_ == 0 ? why : "rank 0's buffer does not fit the dataset"));
  }
  if (n == 0) return;  // nothing to write; no rank writes
  Handle mspace;
  if (rank_ == 0) {
    check(H5Sselect_all(fspace.id()), "select all");
    const auto count = static_cast<hsize_t>(n);
    mspace = Handle(check(H5Screate_simple(1, &count, nullptr), "mem space"), H5Sclose);
  } else {
    check(H5Sselect_none(fspace.id()), "select none");
    const hsize_t one = 1;
    mspace = Handle(check(H5Screate_simple(1, &one, nullptr), "mem space"), H5Sclose);
    check(H5Sselect_none(mspace.id()), "select none");
  }
  transfer(ds.id(), native(type), mspace.id(), fspace.id(), data);
  // Rank 0's digest of what it wrote, on every rank (the others' buffers may be empty).
  std::string digest = rank_ == 0 ? content_digest(data, values, type) : std::string(16, '0');
  MPI_Bcast(digest.data(), 16, MPI_CHAR, 0, comm_);
  ds = Handle();
  attribute(path, kContentDigest, digest);
}

void ParallelFile::put(const std::string& path, const std::vector<double>& data,
                       const std::vector<std::int64_t>& dims) {
  create_filled(path, Type::f64, dims, {}, Fill::none);
  write_from_root(path, std::span<const double>(data));
}

void ParallelFile::put(const std::string& path, const std::vector<std::int64_t>& data,
                       const std::vector<std::int64_t>& dims) {
  create_filled(path, Type::i64, dims, {}, Fill::none);
  write_from_root(path, std::span<const std::int64_t>(data));
}

void ParallelFile::put_strings(const std::string& path, const std::vector<std::string>& values) {
  // netCDF's NC_CHAR convention: a character array [n, width] whose last axis is a named
  // dimension, with _Encoding = "utf-8" (xarray decodes it to n str). netCDF-C 4.9 crashes on
  // fixed-length string arrays, and parallel HDF5 cannot write variable-length ones.
  std::size_t width = 1;
  for (const auto& v : values) width = std::max(width, v.size());
  std::vector<char> buffer(values.size() * width, '\0');
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::memcpy(buffer.data() + i * width, values[i].data(), values[i].size());
  }
  Handle type(check(H5Tcopy(H5T_C_S1), "H5Tcopy"), H5Tclose);
  check(H5Tset_size(type.id(), 1), "H5Tset_size");
  check(H5Tset_strpad(type.id(), H5T_STR_NULLPAD), "H5Tset_strpad");
  const std::vector<hsize_t> dims{values.size(), width};
  if (H5Lexists(file_.id(), path.c_str(), H5P_DEFAULT) > 0) {
    check(H5Ldelete(file_.id(), path.c_str(), H5P_DEFAULT), "replace '" + path + "'");
  }
  Handle space(check(H5Screate_simple(2, dims.data(), nullptr), "space"), H5Sclose);
  Handle dcpl = checksummed_plist(path, dims, 1, {}, Fill::none);
  Handle lcpl(check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"), H5Pclose);
  check(H5Pset_create_intermediate_group(lcpl.id(), 1), "intermediate groups");
  {
    Handle ds(check(H5Dcreate2(file_.id(), path.c_str(), type.id(), space.id(), lcpl.id(), dcpl.id(), H5P_DEFAULT),
                    "create '" + path + "'"),
              H5Dclose, kCollective);
    if (!values.empty()) {
      Handle fspace(check(H5Dget_space(ds.id()), "space"), H5Sclose);
      Handle mspace(check(H5Screate_simple(2, dims.data(), nullptr), "space"), H5Sclose);
      if (rank_ != 0) {
        check(H5Sselect_none(fspace.id()), "select none");
        check(H5Sselect_none(mspace.id()), "select none");
      }
      transfer(ds.id(), type.id(), mspace.id(), fspace.id(), buffer.data());
    }
  }
  attribute(path, kEncoding, std::string("utf-8"));
  std::string digest = rank_ == 0 ? content_digest(values) : std::string(16, '0');
  MPI_Bcast(digest.data(), 16, MPI_CHAR, 0, comm_);
  attribute(path, kContentDigest, digest);
  // Its length dimension (replaced with the dataset: the width may have changed).
  const std::string length = string_dimension(path);
  if (H5Lexists(file_.id(), length.c_str(), H5P_DEFAULT) > 0) {
    check(H5Ldelete(file_.id(), length.c_str(), H5P_DEFAULT), "replace '" + length + "'");
  }
  create_filled(length, Type::i64, {static_cast<std::int64_t>(width)}, {}, Fill::zero);
  Handle dim(check(H5Dopen2(file_.id(), length.c_str(), H5P_DEFAULT), "open '" + length + "'"), H5Dclose, kCollective);
  // netCDF's mark of a dimension that is no variable: the name says what, the width how long.
  char name[96];
  std::snprintf(name, sizeof name, "%s%10d", kDimensionWithoutVariable, static_cast<int>(width));
  check(H5DSset_scale(dim.id(), name), "H5DSset_scale '" + length + "'");
  Handle ds(check(H5Dopen2(file_.id(), path.c_str(), H5P_DEFAULT), "open '" + path + "'"), H5Dclose, kCollective);
  check(H5DSattach_scale(ds.id(), dim.id(), 1), "attach the string length to '" + path + "'");
}

void ParallelFile::write_rows(const std::string& path, const std::vector<RowBlock>& blocks,
                              const std::vector<double>& data) {
  write_rows_raw(path, blocks, data.data(), data.size(), Type::f64);
}

void ParallelFile::write_rows(const std::string& path, const std::vector<RowBlock>& blocks,
                              const std::vector<float>& data) {
  write_rows_raw(path, blocks, data.data(), data.size(), Type::f32);
}

void ParallelFile::write_rows(const std::string& path, const std::vector<RowBlock>& blocks,
                              const std::vector<std::int64_t>& data) {
  write_rows_raw(path, blocks, data.data(), data.size(), Type::i64);
}

void ParallelFile::write_rows_raw(const std::string& path, const std::vector<RowBlock>& blocks, const void* data,
                                  std::size_t values, Type type) {
  Handle ds(check(H5Dopen2(file_.id(), path.c_str(), H5P_DEFAULT), "open '" + path + "'"), H5Dclose, kCollective);
  injected_failure(path, rank_);
  {
    // The element type written must be the stored one (a float64 buffer into a float32 dataset
    // would convert silently; an int into a float one too).
    Handle stored(check(H5Dget_type(ds.id()), "type of '" + path + "'"), H5Tclose);
    const bool is_float = H5Tget_class(stored.id()) == H5T_FLOAT;
    const std::size_t size = H5Tget_size(stored.id());
    const bool match =
        type == Type::i64 ? (!is_float && size == 8) : (is_float && size == (type == Type::f32 ? 4U : 8U));
    if (!match) throw Error("archive: '" + path + "' stores another element type than the rows written to it");
  }
  Handle fspace(check(H5Dget_space(ds.id()), "space"), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(fspace.id());
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(fspace.id(), dims.data(), nullptr);
  // An empty dataset (e.g. no trace records) has nothing to select: no rank writes.
  for (const hsize_t d : dims) {
    if (d == 0) return;
  }
  hsize_t row_size = 1;
  for (std::size_t d = 2; d < dims.size(); ++d) row_size *= dims[d];
  check(H5Sselect_none(fspace.id()), "select none");
  hsize_t total = 0;
  for (const auto& b : blocks) {
    if (b.count == 0) continue;
    std::vector<hsize_t> start(dims.size(), 0), count(dims);
    start[0] = static_cast<hsize_t>(b.chain);
    count[0] = 1;
    start[1] = static_cast<hsize_t>(b.first);
    count[1] = static_cast<hsize_t>(b.count);
    if (static_cast<hsize_t>(b.first + b.count) > dims[1] || static_cast<hsize_t>(b.chain) >= dims[0]) {
      throw Error("archive: rows out of range in '" + path + "'");
    }
    check(H5Sselect_hyperslab(fspace.id(), H5S_SELECT_OR, start.data(), nullptr, count.data(), nullptr),
          "select rows of '" + path + "'");
    total += static_cast<hsize_t>(b.count) * row_size;
  }
  if (total != static_cast<hsize_t>(values)) {
    throw Error("archive: " + std::to_string(values) + " values for " + std::to_string(total) + " in the rows of '" +
                path + "'");
  }
  const hsize_t mem_n = std::max<hsize_t>(total, 1);
  Handle mspace(check(H5Screate_simple(1, &mem_n, nullptr), "mem space"), H5Sclose);
  if (total == 0) check(H5Sselect_none(mspace.id()), "select none");
  transfer(ds.id(), native(type), mspace.id(), fspace.id(), data);
}

namespace {

void write_attribute(hid_t file, const std::string& object, const std::string& name, hid_t type, const void* value) {
  Handle obj = open_object(file, object);
  if (H5Aexists(obj.id(), name.c_str()) > 0) check(H5Adelete(obj.id(), name.c_str()), "attr delete");
  Handle space(check(H5Screate(H5S_SCALAR), "scalar space"), H5Sclose);
  Handle attr(check(H5Acreate2(obj.id(), name.c_str(), type, space.id(), H5P_DEFAULT, H5P_DEFAULT),
                    "create attribute '" + name + "' on '" + object + "'"),
              H5Aclose, kCollective);
  check(H5Awrite(attr.id(), type, value), "write attribute '" + name + "'");
}

}  // namespace

void ParallelFile::mirror_attributes(const std::string& group) {
  // Read from the file, not remembered from this process's writes: a resumed run wrote some of
  // them before it was stopped.
  // In name order: the creation order depends on the run's history (an attribute rewritten moves
  // to the end), and a resumed archive must equal an uninterrupted one bit for bit.
  const Handle obj = open_object(file_.id(), group);
  std::vector<AttributeValue> attributes = read_attributes(obj.id());
  std::sort(attributes.begin(), attributes.end(),
            [](const AttributeValue& a, const AttributeValue& b) { return a.name < b.name; });
  std::vector<std::string> names, values;
  for (const auto& a : attributes) {
    names.push_back(a.name);
    values.push_back(render_attribute(a));
  }
  if (names.empty()) return;
  put_strings(group + "/" + kAttributeNames, names);
  put_strings(group + "/" + kAttributeValues, values);
  attribute(group + "/" + kAttributeValues, "meaning",
            std::string("the group's attributes (attribute_names) as text: a checksummed copy, which simmer_analyze "
                        "verify compares with them"));
}

void ParallelFile::attribute(const std::string& object, const std::string& name, const std::string& value) {
  // NUL-terminated: netCDF reads a fixed-length text attribute up to its NUL.
  Handle type(check(H5Tcopy(H5T_C_S1), "H5Tcopy"), H5Tclose);
  check(H5Tset_size(type.id(), value.size() + 1), "H5Tset_size");
  check(H5Tset_strpad(type.id(), H5T_STR_NULLTERM), "H5Tset_strpad");
  write_attribute(file_.id(), object, name, type.id(), value.c_str());
}

void ParallelFile::attribute(const std::string& object, const std::string& name, std::int64_t value) {
  write_attribute(file_.id(), object, name, H5T_NATIVE_INT64, &value);
}

void ParallelFile::attribute(const std::string& object, const std::string& name, double value) {
  write_attribute(file_.id(), object, name, H5T_NATIVE_DOUBLE, &value);
}

}  // namespace simmer::io
