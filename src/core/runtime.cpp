#include "simmer/core/runtime.hpp"

#include <malloc.h>

namespace simmer {

void tune_allocator() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 30);  // serve large blocks from the heap (never mmap)
  mallopt(M_TRIM_THRESHOLD, -1);       // never shrink the heap on free (keep pages mapped)
#endif
}

}  // namespace simmer
