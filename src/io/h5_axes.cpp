// ParallelFile's dimension scales: every axis of every dataset named (name_axes), as netCDF-C and
// xarray need to open a group, and scales attached by hand (attach_scale).
#include <hdf5_hl.h>

#include <algorithm>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "h5_checks.hpp"
#include "simmer/core/error.hpp"
#include "simmer/io/h5.hpp"

namespace simmer::io {

using detail::check;
using detail::fail;
using detail::kCollective;

namespace {

/// Every dataset below `group`, depth first in name order (the same on every rank); dimension
/// scales only `with_scales`.
void collect_datasets(hid_t file, const std::string& group, std::vector<std::string>& out, bool with_scales = false) {
  std::vector<std::string> names;
  {
    Handle g(check(H5Gopen2(file, group.c_str(), H5P_DEFAULT), "open '" + group + "'"), H5Gclose);
    if (!hard_link_names(g.id(), names)) fail("list '" + group + "'");
  }
  for (const auto& name : names) {
    const std::string path = (group == "/" ? "" : group) + "/" + name;
    Handle obj(check(H5Oopen(file, path.c_str(), H5P_DEFAULT), "open '" + path + "'"), H5Oclose);
    const H5I_type_t type = H5Iget_type(obj.id());
    if (type == H5I_GROUP) {
      collect_datasets(file, path, out, with_scales);
    } else if (type == H5I_DATASET && (with_scales || H5DSis_scale(obj.id()) <= 0)) {
      out.push_back(path);
    }
  }
}

}  // namespace

void ParallelFile::record_content_digests(const std::string& manifest) {
  std::vector<std::string> datasets, digested;
  collect_datasets(file_.id(), "/", datasets, true);
  for (const auto& path : datasets) {
    if (path != manifest && H5Aexists_by_name(file_.id(), path.c_str(), kContentDigest, H5P_DEFAULT) > 0) {
      digested.push_back(path);
    }
  }
  put_strings(manifest, digested);
}

void ParallelFile::name_axes(const AxisNamer& name_of) {
  std::vector<std::string> datasets;
  collect_datasets(file_.id(), "/", datasets);
  for (const auto& path : datasets) {
    std::vector<hsize_t> dims;
    {
      Handle ds(check(H5Dopen2(file_.id(), path.c_str(), H5P_DEFAULT), "open '" + path + "'"), H5Dclose);
      Handle space(check(H5Dget_space(ds.id()), "space"), H5Sclose);
      dims.resize(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space.id())));
      H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr);
    }
    const std::string group = path.substr(0, path.find_last_of('/'));
    for (std::size_t axis = 0; axis < dims.size(); ++axis) {
      {
        Handle ds(check(H5Dopen2(file_.id(), path.c_str(), H5P_DEFAULT), "open '" + path + "'"), H5Dclose);
        if (H5DSget_num_scales(ds.id(), static_cast<unsigned>(axis)) > 0) continue;
      }
      const std::string name = name_of(path, static_cast<int>(axis), static_cast<int>(dims.size()));
      std::string scale = group + "/" + name;
      // The group's scale of that name, or one named for the length when that one is another length.
      const auto usable = [&](const std::string& at) {
        Handle s(check(H5Dopen2(file_.id(), at.c_str(), H5P_DEFAULT), "open '" + at + "'"), H5Dclose);
        Handle space(check(H5Dget_space(s.id()), "space"), H5Sclose);
        hsize_t n = 0;
        return H5DSis_scale(s.id()) > 0 && H5Sget_simple_extent_ndims(space.id()) == 1 &&
               H5Sget_simple_extent_dims(space.id(), &n, nullptr) == 1 && n == dims[axis];
      };
      if (exists(scale) && !usable(scale)) scale += "_" + std::to_string(dims[axis]);
      if (!exists(scale)) {
        const auto n = static_cast<std::int64_t>(dims[axis]);
        std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = i;
        put(scale, ids, {n});
        Handle s(check(H5Dopen2(file_.id(), scale.c_str(), H5P_DEFAULT), "open '" + scale + "'"), H5Dclose,
                 kCollective);
        check(H5DSset_scale(s.id(), scale.substr(scale.find_last_of('/') + 1).c_str()),
              "H5DSset_scale '" + scale + "'");
      } else if (!usable(scale)) {
        throw Error("archive: '" + scale + "' is not a dimension of length " + std::to_string(dims[axis]) + " for '" +
                    path + "'");
      }
      Handle s(check(H5Dopen2(file_.id(), scale.c_str(), H5P_DEFAULT), "open '" + scale + "'"), H5Dclose, kCollective);
      Handle ds(check(H5Dopen2(file_.id(), path.c_str(), H5P_DEFAULT), "open '" + path + "'"), H5Dclose, kCollective);
      check(H5DSattach_scale(ds.id(), s.id(), static_cast<unsigned>(axis)), "attach '" + scale + "' to '" + path + "'");
    }
  }
}

void ParallelFile::attach_scale(const std::string& scale_path, const std::string& dim_name,
                                const std::vector<std::pair<std::string, unsigned>>& datasets) {
  Handle scale(check(H5Dopen2(file_.id(), scale_path.c_str(), H5P_DEFAULT), "open scale"), H5Dclose, kCollective);
  check(H5DSset_scale(scale.id(), dim_name.c_str()), "H5DSset_scale '" + scale_path + "'");
  for (const auto& [path, axis] : datasets) {
    Handle ds(check(H5Dopen2(file_.id(), path.c_str(), H5P_DEFAULT), "open '" + path + "'"), H5Dclose, kCollective);
    check(H5DSattach_scale(ds.id(), scale.id(), axis), "attach scale to '" + path + "'");
  }
}

void replace_scale_with_strings(const std::string& file, const std::string& scale,
                                const std::vector<std::string>& values) {
  const auto where = [&](const std::string& what) { return "'" + file + "': " + scale + ": " + what; };
  Handle f(check(H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), where("open")), H5Fclose);
  const std::string group = scale.substr(0, scale.find_last_of('/'));
  const std::string name = scale.substr(scale.find_last_of('/') + 1);
  // Every axis of the group's datasets the integer scale is attached to, detached from it.
  std::vector<std::pair<std::string, unsigned>> users;
  {
    Handle old(check(H5Dopen2(f.id(), scale.c_str(), H5P_DEFAULT), where("open")), H5Dclose);
    Handle space(check(H5Dget_space(old.id()), where("space")), H5Sclose);
    hsize_t n = 0;
    if (H5Sget_simple_extent_ndims(space.id()) != 1 || H5Sget_simple_extent_dims(space.id(), &n, nullptr) != 1 ||
        n != values.size()) {
      throw Error(where("not a dimension of length " + std::to_string(values.size())));
    }
    std::vector<std::string> names;
    {
      Handle g(check(H5Gopen2(f.id(), group.empty() ? "/" : group.c_str(), H5P_DEFAULT), where("group")), H5Gclose);
      if (!hard_link_names(g.id(), names)) fail(where("list the group"));
    }
    for (const auto& member : names) {
      const std::string path = group + "/" + member;
      if (path == scale) continue;
      Handle obj(check(H5Oopen(f.id(), path.c_str(), H5P_DEFAULT), where("open " + path)), H5Oclose);
      if (H5Iget_type(obj.id()) != H5I_DATASET || H5DSis_scale(obj.id()) > 0) continue;
      Handle sp(check(H5Dget_space(obj.id()), where("space")), H5Sclose);
      const int rank = H5Sget_simple_extent_ndims(sp.id());
      for (int axis = 0; axis < rank; ++axis) {
        if (H5DSis_attached(obj.id(), old.id(), static_cast<unsigned>(axis)) > 0) {
          check(H5DSdetach_scale(obj.id(), old.id(), static_cast<unsigned>(axis)), where("detach from " + path));
          users.emplace_back(path, static_cast<unsigned>(axis));
        }
      }
    }
  }
  check(H5Ldelete(f.id(), scale.c_str(), H5P_DEFAULT), where("delete"));
  Handle type(check(H5Tcopy(H5T_C_S1), where("H5Tcopy")), H5Tclose);
  check(H5Tset_size(type.id(), H5T_VARIABLE), where("H5Tset_size"));
  check(H5Tset_cset(type.id(), H5T_CSET_UTF8), where("H5Tset_cset"));
  const hsize_t n = values.size();
  Handle space(check(H5Screate_simple(1, &n, nullptr), where("space")), H5Sclose);
  Handle ds(check(H5Dcreate2(f.id(), scale.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                  where("create")),
            H5Dclose);
  std::vector<const char*> text;
  text.reserve(values.size());
  for (const auto& v : values) text.push_back(v.c_str());
  if (!text.empty()) {
    check(H5Dwrite(ds.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()), where("write"));
  }
  check(H5DSset_scale(ds.id(), name.c_str()), where("H5DSset_scale"));
  for (const auto& [path, axis] : users) {
    Handle user(check(H5Dopen2(f.id(), path.c_str(), H5P_DEFAULT), where("open " + path)), H5Dclose);
    check(H5DSattach_scale(user.id(), ds.id(), axis), where("attach to " + path));
  }
}

void set_categories(const std::string& file, const std::string& dataset, const std::vector<std::string>& names) {
  const auto where = [&](const std::string& what) { return "'" + file + "': " + dataset + ": " + what; };
  Handle f(check(H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), where("open")), H5Fclose);
  std::vector<long long> values;
  std::string meanings;
  for (const auto& n : names) {
    values.push_back(static_cast<long long>(values.size()));
    std::string word = n.empty() ? "class_" + std::to_string(values.size() - 1) : n;
    std::replace(word.begin(), word.end(), ' ', '_');
    meanings += (meanings.empty() ? "" : " ") + word;
  }
  check(H5LTset_attribute_long_long(f.id(), dataset.c_str(), "flag_values", values.data(), values.size()),
        where("flag_values"));
  check(H5LTset_attribute_string(f.id(), dataset.c_str(), "flag_meanings", meanings.c_str()), where("flag_meanings"));
}

}  // namespace simmer::io
