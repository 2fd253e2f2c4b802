// ArchiveReader::check_datasets: every dataset read back chunk by chunk with HDF5's error
// detection on (simmer_analyze verify).
#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "simmer/io/archive_reader.hpp"
#include "simmer/io/h5.hpp"

namespace simmer::io {
namespace {

/// Damage lines kept per dataset; the count goes on.
constexpr std::size_t kDamageLines = 8;
/// Slab size for unchunked (contiguous or compact) storage, which has no chunks to go by.
constexpr hsize_t kSlabBytes = hsize_t{8} << 20;

std::string coordinates(const std::vector<hsize_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

/// HDF5's cause of the last failure, without the parentheses, or a fallback.
std::string cause() {
  std::string c = innermost_hdf5_error();
  if (c.size() >= 3) return c.substr(2, c.size() - 3);
  return "read failed";
}

/// Whether the dataset's filter pipeline holds Fletcher-32.
bool has_fletcher32(hid_t dcpl) {
  const int n = H5Pget_nfilters(dcpl);
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t elements = 0;
    char name[64];
    if (H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &elements, nullptr, sizeof name, name, &config) ==
        H5Z_FILTER_FLETCHER32) {
      return true;
    }
  }
  return false;
}

/// Reads the hyperslab [start, start + count) of `ds` into `buffer`: "" when it read, else
/// HDF5's cause (taken before the handles here close: any HDF5 call clears the error stack).
std::string read_block(hid_t ds, hid_t mem_type, bool variable, hid_t dxpl, const std::vector<hsize_t>& start,
                       const std::vector<hsize_t>& count, std::vector<unsigned char>& buffer) {
  Handle fspace(H5Dget_space(ds), H5Sclose);
  if (!fspace.valid()) return cause();
  hsize_t n = 1;
  for (const hsize_t c : count) n *= c;
  if (!start.empty() &&
      H5Sselect_hyperslab(fspace.id(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0) {
    return cause();
  }
  Handle mspace(H5Screate_simple(1, &n, nullptr), H5Sclose);
  if (!mspace.valid()) return cause();
  buffer.resize(static_cast<std::size_t>(n) * H5Tget_size(mem_type));
  if (H5Dread(ds, mem_type, mspace.id(), fspace.id(), dxpl, buffer.data()) < 0) return cause();
  if (variable) H5Dvlen_reclaim(mem_type, mspace.id(), H5P_DEFAULT, buffer.data());
  return {};
}

void check_dataset(hid_t file, DatasetCheck& c) {
  const auto damaged = [&](const std::string& line) {
    ++c.damaged_chunks;
    if (c.damage.size() < kDamageLines) c.damage.push_back(line);
  };
  Handle ds(H5Dopen2(file, c.path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) return damaged("cannot open it: " + cause());
  Handle space(H5Dget_space(ds.id()), H5Sclose);
  Handle type(H5Dget_type(ds.id()), H5Tclose);
  Handle dcpl(H5Dget_create_plist(ds.id()), H5Pclose);
  if (!space.valid() || !type.valid() || !dcpl.valid()) return damaged("cannot read its description: " + cause());
  Handle mem_type(H5Tget_native_type(type.id(), H5T_DIR_DEFAULT), H5Tclose);
  if (!mem_type.valid()) return damaged("cannot read its element type: " + cause());
  const bool variable = H5Tdetect_class(mem_type.id(), H5T_VLEN) > 0 || H5Tis_variable_str(mem_type.id()) > 0;
  const int rank = H5Sget_simple_extent_ndims(space.id());
  const hssize_t elements = H5Sget_simple_extent_npoints(space.id());
  if (rank < 0 || elements < 0) return damaged("cannot read its shape: " + cause());
  c.elements = elements;
  c.bytes = elements * static_cast<std::int64_t>(H5Tget_size(type.id()));
  c.checksummed = has_fletcher32(dcpl.id());
  if (elements == 0) return;
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr);
  // Error detection is HDF5's default on reads; asked for anyway, so no default can turn it off.
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  H5Pset_edc_check(dxpl.id(), H5Z_ENABLE_EDC);
  std::vector<unsigned char> buffer;

  if (H5Pget_layout(dcpl.id()) != H5D_CHUNKED) {
    // Contiguous or compact (archives written before the checksums): slabs along the first axis.
    if (rank == 0) {
      const std::string why = read_block(ds.id(), mem_type.id(), variable, dxpl.id(), {}, {}, buffer);
      if (!why.empty()) damaged("unreadable: " + why);
      return;
    }
    hsize_t row_bytes = H5Tget_size(mem_type.id());
    for (std::size_t d = 1; d < dims.size(); ++d) row_bytes *= dims[d];
    const hsize_t rows = std::max<hsize_t>(1, kSlabBytes / std::max<hsize_t>(row_bytes, 1));
    std::vector<hsize_t> start(dims.size(), 0), count(dims);
    for (hsize_t first = 0; first < dims[0]; first += rows) {
      start[0] = first;
      count[0] = std::min(rows, dims[0] - first);
      const std::string why = read_block(ds.id(), mem_type.id(), variable, dxpl.id(), start, count, buffer);
      if (!why.empty()) {
        damaged("rows " + std::to_string(first) + ".." + std::to_string(first + count[0] - 1) + " unreadable: " + why);
      }
    }
    return;
  }

  std::vector<hsize_t> chunk(dims.size());
  if (H5Pget_chunk(dcpl.id(), rank, chunk.data()) != rank) return damaged("cannot read its chunk shape: " + cause());
  // Every chunk of the grid, in row-major order of the chunk coordinates.
  std::vector<hsize_t> start(dims.size(), 0), count(dims.size());
  for (;;) {
    for (std::size_t d = 0; d < dims.size(); ++d) count[d] = std::min(chunk[d], dims[d] - start[d]);
    ++c.chunks;
    const std::string why = read_block(ds.id(), mem_type.id(), variable, dxpl.id(), start, count, buffer);
    if (!why.empty()) {
      std::string line = "chunk " + coordinates(start) + " of " + coordinates(chunk);
      unsigned mask = 0;
      haddr_t address = HADDR_UNDEF;
      hsize_t size = 0;
      if (H5Dget_chunk_info_by_coord(ds.id(), start.data(), &mask, &address, &size) >= 0 && address != HADDR_UNDEF) {
        line += " at byte " + std::to_string(address) + " (" + std::to_string(size) + " bytes)";
      }
      damaged(line + ": " + why);
    }
    // Next chunk: the last axis fastest.
    std::size_t d = dims.size();
    while (d > 0) {
      --d;
      start[d] += chunk[d];
      if (start[d] < dims[d]) break;
      start[d] = 0;
      if (d == 0) return;
    }
  }
}

/// A dataset with a content digest (io::kContentDigest) read whole and digested again: a chunk
/// zeroed with its Fletcher-32 checksum reads without an error but not with the same content.
void check_digest(hid_t file, DatasetCheck& c) {
  if (H5Aexists_by_name(file, c.path.c_str(), kContentDigest, H5P_DEFAULT) <= 0) return;
  // Every chunk read: the damage is the content's, not a chunk's (DatasetCheck::damage alone).
  const auto damaged = [&](const std::string& line) { c.damage.push_back(line); };
  Handle ds(H5Dopen2(file, c.path.c_str(), H5P_DEFAULT), H5Dclose);
  Handle attr(H5Aopen_by_name(file, c.path.c_str(), kContentDigest, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!ds.valid() || !attr.valid()) return damaged("cannot read its content digest: " + cause());
  Handle attr_type(H5Aget_type(attr.id()), H5Tclose);
  // The writer's is a fixed-length string (ParallelFile::attribute); anything else is not its.
  if (!attr_type.valid() || H5Tget_class(attr_type.id()) != H5T_STRING || H5Tis_variable_str(attr_type.id()) != 0) {
    return damaged(std::string(kContentDigest) + " is not the fixed-length text the writer stores");
  }
  std::string stored(H5Tget_size(attr_type.id()), '\0');
  if (stored.empty() || H5Aread(attr.id(), attr_type.id(), stored.data()) < 0) {
    return damaged("cannot read its content digest: " + cause());
  }
  stored = stored.c_str();
  Handle type(H5Dget_type(ds.id()), H5Tclose);
  Handle space(H5Dget_space(ds.id()), H5Sclose);
  const auto n = static_cast<std::size_t>(c.elements);
  std::string found;
  const H5T_class_t kind = H5Tget_class(type.id());
  if (kind == H5T_FLOAT || kind == H5T_INTEGER) {
    std::vector<double> doubles(kind == H5T_FLOAT ? n : 0);
    std::vector<std::int64_t> ints(kind == H5T_INTEGER ? n : 0);
    const herr_t read = kind == H5T_FLOAT
                            ? H5Dread(ds.id(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, doubles.data())
                            : H5Dread(ds.id(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ints.data());
    if (read < 0) return damaged("cannot read it for its content digest: " + cause());
    found =
        kind == H5T_FLOAT ? content_digest(doubles.data(), n, Type::f64) : content_digest(ints.data(), n, Type::i64);
  } else if (kind == H5T_STRING && H5Tis_variable_str(type.id()) <= 0 && H5Sget_simple_extent_ndims(space.id()) == 2) {
    // put_strings' character array [values, width], NUL-padded.
    hsize_t dims[2] = {0, 0};
    H5Sget_simple_extent_dims(space.id(), dims, nullptr);
    std::vector<char> chars(n * H5Tget_size(type.id()));
    if (H5Dread(ds.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, chars.data()) < 0) {
      return damaged("cannot read it for its content digest: " + cause());
    }
    std::vector<std::string> values;
    const std::size_t width = dims[1] * H5Tget_size(type.id());
    for (hsize_t i = 0; i < dims[0]; ++i) {
      std::string v(chars.data() + i * width, width);
      v.erase(v.find_last_not_of('\0') + 1);
      values.push_back(v);
    }
    found = content_digest(values);
  } else {
    return;  // no digest of this kind is written
  }
  if (found != stored) {
    damaged("its content does not match its digest (" + std::string(kContentDigest) + " " + stored + ", read " + found +
            "): changed after it was written, e.g. a chunk zeroed together with its Fletcher-32 checksum");
  }
}

void visit(hid_t file, const std::string& group, const std::function<void(const DatasetCheck&)>& report,
           const std::function<bool(const std::string&)>& wanted) {
  std::vector<std::string> names;
  Handle g(H5Gopen2(file, group.c_str(), H5P_DEFAULT), H5Gclose);
  const bool listed = g.valid() && hard_link_names(g.id(), names);
  if (!listed) {
    DatasetCheck c;
    c.path = group;
    c.damaged_chunks = 1;
    c.damage.push_back("the group cannot be listed: " + cause());
    report(c);
    return;
  }
  for (const auto& name : names) {
    const std::string path = (group == "/" ? "/" : group + "/") + name;
    Handle obj(H5Oopen(file, path.c_str(), H5P_DEFAULT), H5Oclose);
    const H5I_type_t kind = obj.valid() ? H5Iget_type(obj.id()) : H5I_BADID;
    obj = Handle();
    if (kind == H5I_GROUP) {
      visit(file, path, report, wanted);
    } else if ((kind == H5I_DATASET || kind == H5I_BADID) && (!wanted || wanted(path))) {
      DatasetCheck c;
      c.path = path;
      check_dataset(file, c);  // (an object that cannot be opened is reported as damaged there)
      if (!c.damaged() && c.elements > 0) check_digest(file, c);
      report(c);
    }
  }
}

}  // namespace

void ArchiveReader::check_datasets(const std::function<void(const DatasetCheck&)>& report,
                                   const std::function<bool(const std::string&)>& wanted) const {
  visit(file_, "/", report, wanted);
}

}  // namespace simmer::io
