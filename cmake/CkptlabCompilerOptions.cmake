# Warnings are errors on our own code; third-party headers come in as SYSTEM includes.
add_library(ckptlab_warnings INTERFACE)
add_library(ckptlab::warnings ALIAS ckptlab_warnings)
target_compile_options(ckptlab_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror -Wno-error=deprecated-declarations>)
# The gate is gcc's (every other build); clang's own extra findings in the fuzz build are shown,
# not fatal, so that fuzzing never waits on them.
if(CKPTLAB_FUZZ)
  target_compile_options(ckptlab_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-error>)
endif()

add_library(ckptlab_optimise INTERFACE)
add_library(ckptlab::optimise ALIAS ckptlab_optimise)
if(CKPTLAB_NATIVE AND NOT CKPTLAB_SANITIZE AND NOT CKPTLAB_FUZZ AND NOT CKPTLAB_TSAN)
  target_compile_options(ckptlab_optimise INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
target_compile_options(ckptlab_optimise INTERFACE
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:Release>>:-O3>)

if(CKPTLAB_SANITIZE)
  # -O1, as AddressSanitizer's documentation advises: the sanitized HeavyModel tests run several
  # times faster than at -O0 (Eigen unoptimised dominates them), and Debug still keeps asserts.
  # At -O1 under ASan gcc 12 reports libstdc++'s own <regex> as maybe-uninitialized (a false
  # positive); the other builds keep that warning an error. -g1: line tables, all a sanitizer's
  # report needs (file:line per frame); full debug info made the sanitized tests 15 GB, more disk
  # than CI's machine had.
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
    $<$<COMPILE_LANGUAGE:CXX>:-O1> $<$<COMPILE_LANGUAGE:CXX>:-g1> $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
  add_link_options(-fsanitize=address,undefined)
endif()

if(CKPTLAB_TSAN)
  if(CKPTLAB_SANITIZE)
    message(FATAL_ERROR "CKPTLAB_TSAN and CKPTLAB_SANITIZE cannot be combined")
  endif()
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

# The fuzz build: coverage instrumentation everywhere (fuzzer-no-link), the fuzzer's main only
# in the targets (tests/fuzz).
if(CKPTLAB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "CKPTLAB_FUZZ needs clang (CC=clang CXX=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
