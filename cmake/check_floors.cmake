# Fails when a file of the engine includes a floor above its own (or Qt), or is longer than
# 500 lines (one concept per .hpp/.cpp pair: a longer file holds two). Run at build time by
# engine/CMakeLists.txt (and by a test, on a planted violation): cmake -DSOURCE_DIR=<engine dir>
# [-DSTAMP=<file>] -P check_floors.cmake
#
# Floors, lowest first; a floor may include itself and every floor below, never a sibling on its
# own level or anything above:
#   cuda (the CUDA runtime over raw device pointers) -> tensor -> kernels -> autograd -> ops
#   -> {trace, checkpoint, model} -> run -> report -> request -> plan
# snapshot (PyTorch memory snapshots: standard library only) is on the ground floor beside cuda.
set(level_cuda 0)
set(level_snapshot 0)
set(level_tensor 1)
set(level_kernels 2)
set(level_autograd 3)
set(level_ops 4)
set(level_trace 5)
set(level_checkpoint 5)
set(level_model 5)
set(level_run 6)
set(level_report 7)
set(level_request 8)
set(level_plan 9)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_floors.cmake: pass -DSOURCE_DIR=<the engine directory>")
endif()
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}
  ${SOURCE_DIR}/*.hpp ${SOURCE_DIR}/*.cpp ${SOURCE_DIR}/*.cu ${SOURCE_DIR}/*.cuh)
set(violations "")
foreach(f IN LISTS files)
  string(REGEX MATCH "^[^/]+" floor "${f}")
  if(NOT DEFINED level_${floor})
    continue()  # CMakeLists.txt and the like
  endif()
  file(READ ${SOURCE_DIR}/${f} text)
  string(REGEX MATCHALL "\n" newlines "${text}")
  list(LENGTH newlines line_count)
  if(line_count GREATER 500)
    string(APPEND violations "  engine/${f}: ${line_count} lines, over the 500-line rule; split it\n")
  endif()
  file(STRINGS ${SOURCE_DIR}/${f} includes REGEX "^[ \t]*#[ \t]*include")
  foreach(line IN LISTS includes)
    if(line MATCHES "#[ \t]*include[ \t]*[<\"](Q[A-Za-z]*)[/>.\"]")
      string(APPEND violations "  engine/${f}: includes Qt (${CMAKE_MATCH_1}); the engine never does\n")
    endif()
    if(line MATCHES "#[ \t]*include[ \t]*\"engine/([^/\"]+)/")
      set(target "${CMAKE_MATCH_1}")
      if(NOT DEFINED level_${target})
        string(APPEND violations "  engine/${f}: includes an unknown floor '${target}'\n")
      elseif(NOT target STREQUAL floor AND NOT level_${target} LESS level_${floor})
        string(APPEND violations
          "  engine/${f} (floor ${floor}) includes engine/${target}/, which is not below it\n")
      endif()
    endif()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "engine floors: upward or sideways includes, or overlong files\n${violations}"
    "Move the code down, or pass what it needs through an interface of the lower floor; "
    "split a long file by concept.")
endif()
if(STAMP)
  file(TOUCH ${STAMP})
endif()
