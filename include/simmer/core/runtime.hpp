#pragma once
/// \file
/// Process-wide settings every simmer program applies at start-up.

namespace simmer {

/// Keep freed memory in the heap instead of returning it to the kernel. Eigen's GEMM allocates
/// its packing buffers per product call once they exceed its stack limit (large layers such as
/// HIGGS's 10000×512 batches); with glibc's defaults those come from fresh mmap'd pages each
/// step, and zeroing the pages cost ~20 % of a HIGGS step in the kernel. Safe to call twice.
void tune_allocator();

}  // namespace simmer
