# Warnings are errors on our own code; third-party headers come in as SYSTEM includes.
add_library(ckptlab_warnings INTERFACE)
add_library(ckptlab::warnings ALIAS ckptlab_warnings)
target_compile_options(ckptlab_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror -Wno-error=deprecated-declarations>)

add_library(ckptlab_optimise INTERFACE)
add_library(ckptlab::optimise ALIAS ckptlab_optimise)
if(CKPTLAB_NATIVE AND NOT CKPTLAB_SANITIZE)
  target_compile_options(ckptlab_optimise INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
target_compile_options(ckptlab_optimise INTERFACE
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:Release>>:-O3>)

if(CKPTLAB_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
