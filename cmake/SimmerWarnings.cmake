# simmer_warnings: the project's warning set as an INTERFACE target. Link it to every target we
# own; third-party headers (Eigen, Boost, HDF5, Catch2) come in as SYSTEM includes so their
# warnings stay out of our builds.
add_library(simmer_warnings INTERFACE)
target_compile_options(simmer_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow -Wconversion -Wpedantic>)
# GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsic headers when Eigen's
# kernels are inlined with -march=native (GCC bug 105593); the warning is not about our code.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(simmer_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized -Wno-uninitialized>)
endif()
