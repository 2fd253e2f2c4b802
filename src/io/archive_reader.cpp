#include "simmer/io/archive_reader.hpp"
#include "simmer/io/h5.hpp"

#include <hdf5.h>
#include <hdf5_hl.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <system_error>

#include "simmer/core/error.hpp"

namespace simmer::io {
namespace {

/// Text of an attribute or string dataset element, without trailing NULs and padding.
std::string trim_nul(std::string s) {
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

/// Reads a string attribute (fixed or variable length, scalar or first element).
bool read_text_attribute(hid_t attr, std::string& out) {
  Handle type(H5Aget_type(attr), H5Tclose);
  if (!type.valid() || H5Tget_class(type.id()) != H5T_STRING) return false;
  Handle space(H5Aget_space(attr), H5Sclose);
  if (!space.valid() || H5Sget_simple_extent_npoints(space.id()) != 1) return false;
  if (H5Tis_variable_str(type.id()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.id(), H5T_VARIABLE);
    H5Tset_cset(mem.id(), H5Tget_cset(type.id()));
    char* value = nullptr;
    if (H5Aread(attr, mem.id(), &value) < 0) return false;
    out = value != nullptr ? std::string(value) : std::string();
    H5free_memory(value);
    return true;
  }
  const std::size_t size = H5Tget_size(type.id());
  std::string buffer(size, '\0');
  if (H5Aread(attr, type.id(), buffer.data()) < 0) return false;
  out = trim_nul(buffer);
  return true;
}

struct IterateState {
  std::vector<AttributeValue>* out;
};

herr_t collect_attribute(hid_t location, const char* name, const H5A_info_t*, void* data) {
  auto* state = static_cast<IterateState*>(data);
  Handle attr(H5Aopen(location, name, H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) return 0;
  Handle type(H5Aget_type(attr.id()), H5Tclose);
  Handle space(H5Aget_space(attr.id()), H5Sclose);
  if (!type.valid() || !space.valid() || H5Sget_simple_extent_npoints(space.id()) != 1) return 0;
  AttributeValue v;
  v.name = name;
  switch (H5Tget_class(type.id())) {
    case H5T_STRING:
      v.kind = AttributeValue::Kind::text;
      if (!read_text_attribute(attr.id(), v.text)) return 0;
      break;
    case H5T_INTEGER:
      v.kind = AttributeValue::Kind::integer;
      if (H5Aread(attr.id(), H5T_NATIVE_INT64, &v.integer) < 0) return 0;
      break;
    case H5T_FLOAT:
      v.kind = AttributeValue::Kind::real;
      if (H5Aread(attr.id(), H5T_NATIVE_DOUBLE, &v.real) < 0) return 0;
      break;
    default:
      return 0;  // references (dimension scales) and compounds are not copied
  }
  state->out->push_back(std::move(v));
  return 0;
}

struct MemberState {
  std::vector<std::string>* out;
};

// The link iteration API changed in HDF5 1.12 (H5Literate2, H5L_info2_t); Debian 12 has 1.10.
#if H5_VERSION_GE(1, 12, 0)
using LinkInfo = H5L_info2_t;
herr_t iterate_links(hid_t g, H5_index_t index, hsize_t* idx, H5L_iterate2_t op, void* data) {
  return H5Literate2(g, index, H5_ITER_INC, idx, op, data);
}
#else
using LinkInfo = H5L_info_t;
herr_t iterate_links(hid_t g, H5_index_t index, hsize_t* idx, H5L_iterate_t op, void* data) {
  return H5Literate(g, index, H5_ITER_INC, idx, op, data);
}
#endif

herr_t collect_member(hid_t, const char* name, const LinkInfo*, void* data) {
  static_cast<MemberState*>(data)->out->emplace_back(name);
  return 0;
}

}  // namespace

ArchiveReader::ArchiveReader(const std::string& path) : path_(path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("'" + path + "': no such file");
  if (!fs::is_regular_file(path, ec)) throw Error("'" + path + "': not a regular file");
#if H5_VERSION_GE(1, 12, 0)
  const htri_t hdf5 = H5Fis_accessible(path.c_str(), H5P_DEFAULT);
#else
  const htri_t hdf5 = H5Fis_hdf5(path.c_str());
#endif
  if (hdf5 == 0) throw Error("'" + path + "': not an HDF5 file");
  // No HDF5 file lock: a resume tests the archive's own guard (OutputLock::guard) with an
  // exclusive flock, which this process's or its peers' readers must not hold against it.
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
#if H5_VERSION_GE(1, 10, 7)
  if (fapl.valid()) H5Pset_file_locking(fapl.id(), false, true);
#endif
  const hid_t id =
      hdf5 > 0 ? H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.valid() ? fapl.id() : H5P_DEFAULT) : H5I_INVALID_HID;
  if (id < 0) {
    throw DamagedFile("'" + path +
                      "': HDF5 cannot open it (truncated or damaged, or being written by another process?)" +
                      innermost_hdf5_error());
  }
  file_ = id;
}

ArchiveReader::~ArchiveReader() {
  if (file_ >= 0) H5Fclose(file_);
}

ArchiveReader& ArchiveReader::operator=(ArchiveReader&& other) noexcept {
  if (this != &other) {
    if (file_ >= 0) H5Fclose(file_);
    path_ = std::move(other.path_);
    file_ = other.file_;
    other.file_ = -1;
  }
  return *this;
}

void silence_hdf5_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

void ArchiveReader::fail(const std::string& what) const {
  // HDF5's own cause when it has one: "data error detected by Fletcher32 checksum" says which.
  const std::string cause = innermost_hdf5_error();
  throw Error("'" + path_ + "': " + what + (cause.empty() ? "" : cause) +
              " (truncated or damaged archive? simmer_analyze verify lists every damaged dataset)");
}

bool ArchiveReader::exists(const std::string& object) const {
  if (object == "/") return true;
  return H5LTpath_valid(file_, object.c_str(), 1) > 0;
}

bool ArchiveReader::is_group(const std::string& object) const {
  if (!exists(object)) return false;
  Handle obj(H5Oopen(file_, object.c_str(), H5P_DEFAULT), H5Oclose);
  return obj.valid() && H5Iget_type(obj.id()) == H5I_GROUP;
}

bool ArchiveReader::is_dimension(const std::string& object) const {
  if (!exists(object) || is_group(object)) return false;
  Handle ds(H5Dopen2(file_, object.c_str(), H5P_DEFAULT), H5Dclose);
  return ds.valid() && H5DSis_scale(ds.id()) > 0;
}

void ArchiveReader::require(const std::string& object, const std::string& why) const {
  if (!exists(object)) {
    throw Error("'" + path_ + "' is not a simmer archive: it has no " + object + " (" + why + ")");
  }
}

std::vector<std::string> ArchiveReader::members(const std::string& group) const {
  std::vector<std::string> out;
  MemberState state{&out};
  Handle g(H5Gopen2(file_, group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) fail("cannot open group " + group);
  hsize_t idx = 0;
  if (iterate_links(g.id(), H5_INDEX_CRT_ORDER, &idx, collect_member, &state) < 0) {
    out.clear();
    idx = 0;
    if (iterate_links(g.id(), H5_INDEX_NAME, &idx, collect_member, &state) < 0) {
      fail("cannot list group " + group);
    }
  }
  return out;
}

std::int64_t ArchiveReader::open_dataset(const std::string& dataset) const {
  if (!exists(dataset)) throw Error("'" + path_ + "' has no dataset " + dataset);
  const hid_t ds = H5Dopen2(file_, dataset.c_str(), H5P_DEFAULT);
  if (ds < 0) fail("cannot open dataset " + dataset);
  return ds;
}

std::vector<std::int64_t> ArchiveReader::dims(const std::string& dataset) const {
  Handle ds(open_dataset(dataset), H5Dclose);
  Handle space(H5Dget_space(ds.id()), H5Sclose);
  if (!space.valid()) fail("cannot read the shape of " + dataset);
  const int rank = H5Sget_simple_extent_ndims(space.id());
  if (rank < 0) fail("cannot read the shape of " + dataset);
  std::vector<hsize_t> d(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.id(), d.data(), nullptr);
  return {d.begin(), d.end()};
}

Type ArchiveReader::type(const std::string& dataset) const {
  Handle ds(open_dataset(dataset), H5Dclose);
  Handle t(H5Dget_type(ds.id()), H5Tclose);
  if (!t.valid()) fail("cannot read the type of " + dataset);
  const H5T_class_t cls = H5Tget_class(t.id());
  if (cls == H5T_INTEGER) return Type::i64;
  if (cls == H5T_FLOAT) return H5Tget_size(t.id()) <= 4 ? Type::f32 : Type::f64;
  throw Error("'" + path_ + "': dataset " + dataset + " is not numeric");
}

bool ArchiveReader::is_string(const std::string& dataset) const {
  Handle ds(open_dataset(dataset), H5Dclose);
  Handle t(H5Dget_type(ds.id()), H5Tclose);
  return t.valid() && H5Tget_class(t.id()) == H5T_STRING;
}

std::vector<double> ArchiveReader::read_doubles(const std::string& dataset) const {
  Handle ds(open_dataset(dataset), H5Dclose);
  Handle space(H5Dget_space(ds.id()), H5Sclose);
  const hssize_t n = space.valid() ? H5Sget_simple_extent_npoints(space.id()) : -1;
  if (n < 0) fail("cannot read the shape of " + dataset);
  std::vector<double> out(static_cast<std::size_t>(n));
  if (n > 0 && H5Dread(ds.id(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
    fail("cannot read " + dataset);
  }
  return out;
}

std::vector<std::int64_t> ArchiveReader::read_ints(const std::string& dataset) const {
  Handle ds(open_dataset(dataset), H5Dclose);
  Handle space(H5Dget_space(ds.id()), H5Sclose);
  const hssize_t n = space.valid() ? H5Sget_simple_extent_npoints(space.id()) : -1;
  if (n < 0) fail("cannot read the shape of " + dataset);
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  if (n > 0 && H5Dread(ds.id(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
    fail("cannot read " + dataset);
  }
  return out;
}

std::vector<std::string> ArchiveReader::read_strings(const std::string& dataset) const {
  Handle ds(open_dataset(dataset), H5Dclose);
  Handle type(H5Dget_type(ds.id()), H5Tclose);
  if (!type.valid() || H5Tget_class(type.id()) != H5T_STRING) {
    throw Error("'" + path_ + "': dataset " + dataset + " does not hold text");
  }
  Handle space(H5Dget_space(ds.id()), H5Sclose);
  const hssize_t n = space.valid() ? H5Sget_simple_extent_npoints(space.id()) : -1;
  if (n < 0) fail("cannot read the shape of " + dataset);
  const auto count = static_cast<std::size_t>(n);
  std::vector<std::string> out;
  if (count == 0) return out;
  if (H5Tis_variable_str(type.id()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.id(), H5T_VARIABLE);
    H5Tset_cset(mem.id(), H5Tget_cset(type.id()));
    std::vector<char*> values(count, nullptr);
    if (H5Dread(ds.id(), mem.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) fail("cannot read " + dataset);
    for (char* v : values) out.emplace_back(v != nullptr ? v : "");
    H5Dvlen_reclaim(mem.id(), space.id(), H5P_DEFAULT, values.data());
    return out;
  }
  // A character array [n, width] of single characters (netCDF's NC_CHAR; archive format 2), or
  // (format 1) n fixed-length strings of H5Tget_size characters.
  const bool characters = H5Tget_size(type.id()) == 1 && H5Sget_simple_extent_ndims(space.id()) == 2;
  std::size_t width = H5Tget_size(type.id()), strings = count;
  if (characters) {
    hsize_t shape[2] = {0, 0};
    H5Sget_simple_extent_dims(space.id(), shape, nullptr);
    strings = static_cast<std::size_t>(shape[0]);
    width = static_cast<std::size_t>(shape[1]);
  }
  std::vector<char> buffer(count * H5Tget_size(type.id()), '\0');
  if (H5Dread(ds.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) < 0) fail("cannot read " + dataset);
  for (std::size_t i = 0; i < strings; ++i) {
    out.push_back(trim_nul(std::string(buffer.data() + i * width, width)));
  }
  return out;
}

std::vector<double> ArchiveReader::read_slab(const std::string& dataset, std::int64_t index,
                                             std::int64_t second) const {
  const std::vector<std::int64_t> shape = dims(dataset);
  if (shape.empty() || index < 0 || index >= shape[0] || (second >= 0 && (shape.size() < 2 || second >= shape[1]))) {
    throw Error("'" + path_ + "': index out of range in " + dataset);
  }
  Handle ds(open_dataset(dataset), H5Dclose);
  Handle fspace(H5Dget_space(ds.id()), H5Sclose);
  std::vector<hsize_t> start(shape.size(), 0), count(shape.begin(), shape.end());
  start[0] = static_cast<hsize_t>(index);
  count[0] = 1;
  if (second >= 0) {
    start[1] = static_cast<hsize_t>(second);
    count[1] = 1;
  }
  hsize_t n = 1;
  for (const hsize_t c : count) n *= c;
  std::vector<double> out(static_cast<std::size_t>(n));
  if (n == 0) return out;
  if (H5Sselect_hyperslab(fspace.id(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0) {
    fail("cannot select in " + dataset);
  }
  Handle mspace(H5Screate_simple(1, &n, nullptr), H5Sclose);
  if (H5Dread(ds.id(), H5T_NATIVE_DOUBLE, mspace.id(), fspace.id(), H5P_DEFAULT, out.data()) < 0) {
    fail("cannot read " + dataset);
  }
  return out;
}

bool ArchiveReader::has_attribute(const std::string& object, const std::string& name) const {
  if (!exists(object)) return false;
  return H5Aexists_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

std::string ArchiveReader::attribute_text(const std::string& object, const std::string& name) const {
  if (!has_attribute(object, name)) {
    throw Error("'" + path_ + "' is not a simmer archive: " + object + " has no attribute '" + name + "'");
  }
  Handle attr(H5Aopen_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  std::string out;
  if (!attr.valid() || !read_text_attribute(attr.id(), out)) {
    fail("cannot read attribute '" + name + "' of " + object + " as text");
  }
  return out;
}

double ArchiveReader::attribute_real(const std::string& object, const std::string& name) const {
  if (!has_attribute(object, name)) {
    throw Error("'" + path_ + "' is not a simmer archive: " + object + " has no attribute '" + name + "'");
  }
  Handle attr(H5Aopen_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  double v = 0.0;
  if (!attr.valid() || H5Aread(attr.id(), H5T_NATIVE_DOUBLE, &v) < 0) {
    fail("cannot read attribute '" + name + "' of " + object + " as a number");
  }
  return v;
}

std::int64_t ArchiveReader::attribute_integer(const std::string& object, const std::string& name) const {
  if (!has_attribute(object, name)) {
    throw Error("'" + path_ + "' is not a simmer archive: " + object + " has no attribute '" + name + "'");
  }
  Handle attr(H5Aopen_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  std::int64_t v = 0;
  if (!attr.valid() || H5Aread(attr.id(), H5T_NATIVE_INT64, &v) < 0) {
    fail("cannot read attribute '" + name + "' of " + object + " as an integer");
  }
  return v;
}

std::string render_attribute(double value) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

std::string render_attribute(std::int64_t value) { return std::to_string(value); }

std::string render_attribute(const AttributeValue& value) {
  switch (value.kind) {
    case AttributeValue::Kind::integer:
      return render_attribute(value.integer);
    case AttributeValue::Kind::real:
      return render_attribute(value.real);
    case AttributeValue::Kind::text:
      break;
  }
  return value.text;
}

std::vector<AttributeMismatch> ArchiveReader::attribute_mismatches(const std::string& group) const {
  std::vector<AttributeMismatch> out;
  const std::string names_path = group + "/" + kAttributeNames, values_path = group + "/" + kAttributeValues;
  if (!exists(names_path) || !exists(values_path)) return out;
  const auto names = read_strings(names_path);
  const auto values = read_strings(values_path);
  if (names.size() != values.size()) {
    out.push_back({"", group + ": attribute_names and attribute_values differ in length"});
    return out;
  }
  std::map<std::string, std::string> now;
  for (const auto& a : attributes(group)) now[a.name] = render_attribute(a);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto it = now.find(names[i]);
    if (it == now.end()) {
      out.push_back({names[i], group + "@" + names[i] + " is missing (its checksummed copy: " + values[i] + ")"});
    } else if (it->second != values[i]) {
      out.push_back(
          {names[i], group + "@" + names[i] + " = " + it->second + " differs from its checksummed copy " + values[i]});
    }
  }
  return out;
}

std::vector<std::string> ArchiveReader::mirrored_groups() const {
  std::vector<std::string> out;
  std::vector<std::string> todo{"/"};
  while (!todo.empty()) {
    const std::string group = todo.back();
    todo.pop_back();
    if (exists((group == "/" ? "" : group) + "/" + kAttributeNames)) out.push_back(group);
    for (const auto& name : members(group)) {
      const std::string path = (group == "/" ? "" : group) + "/" + name;
      if (is_group(path)) todo.push_back(path);
    }
  }
  return out;
}

std::vector<AttributeValue> read_attributes(std::int64_t object) {
  std::vector<AttributeValue> out;
  IterateState state{&out};
  hsize_t idx = 0;
  if (H5Aiterate2(object, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, collect_attribute, &state) < 0) {
    out.clear();
    idx = 0;
    if (H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attribute, &state) < 0) {
      throw Error("cannot list the attributes of an HDF5 object");
    }
  }
  return out;
}

std::vector<AttributeValue> ArchiveReader::attributes(const std::string& object) const {
  Handle obj(H5Oopen(file_, object.c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.valid()) fail("cannot open " + object);
  try {
    return read_attributes(obj.id());
  } catch (const Error&) {
    fail("cannot list the attributes of " + object);
  }
  return {};
}

}  // namespace simmer::io
