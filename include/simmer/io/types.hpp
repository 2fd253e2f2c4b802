#pragma once
/// \file
/// Element types of archive datasets, without HDF5's headers (what readers and writers share):
/// core's Element, under the name the io layer has always used.

#include "simmer/core/types.hpp"

namespace simmer::io {

using Type = Element;

}  // namespace simmer::io
