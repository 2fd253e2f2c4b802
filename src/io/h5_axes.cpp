// ParallelFile's dimension scales: every axis of every dataset named (name_axes), as netCDF-C and
// xarray need to open a group, and scales attached by hand (attach_scale).
#include <hdf5_hl.h>

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

/// Every dataset below `group`, depth first in name order (the same on every rank).
void collect_datasets(hid_t file, const std::string& group, std::vector<std::string>& out) {
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
      collect_datasets(file, path, out);
    } else if (type == H5I_DATASET && H5DSis_scale(obj.id()) <= 0) {
      out.push_back(path);
    }
  }
}

}  // namespace

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

}  // namespace simmer::io
