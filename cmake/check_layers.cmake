# Fails when a source file includes across the layers (DESIGN §1):
#   core/    nothing of ours but core/
#   mapping/ core/ and mapping/ only; no MPI, HDF5 or CUDA runtime headers
#   io/      core/, mapping/, io/
#   solver/  anything of ours, but the driver loop (driver.*) and the output
#            lifecycle (lifecycle.*) no concrete backend (solver/cpu/,
#            solver/cuda/), and CUDA sources (.cu, .cuh) no MPI or HDF5;
#            the engine knows no command: only the command layer
#            (solver/commands/, solver/cli/, main.cpp and a command's own
#            solver/X/command.*) includes solver/commands/ or solver/cli/,
#            and solver/cli/ (the shared options) of solver/commands/ only
#            the interface, command.hpp
# Usage: cmake -DROOT=<source dir> -P check_layers.cmake
cmake_policy(SET CMP0057 NEW)
if(NOT ROOT)
  message(FATAL_ERROR "check_layers.cmake: pass -DROOT=<source dir>")
endif()

set(_allowed_core "core")
set(_allowed_mapping "core;mapping")
set(_allowed_io "core;mapping;io")
set(_allowed_solver "core;mapping;io;solver")
set(_violations "")

foreach(layer core mapping io solver)
  file(GLOB_RECURSE _files LIST_DIRECTORIES false
       ${ROOT}/${layer}/*.hpp ${ROOT}/${layer}/*.cpp ${ROOT}/${layer}/*.cu ${ROOT}/${layer}/*.cuh
       ${ROOT}/${layer}/*.inc)
  foreach(f IN LISTS _files)
    file(STRINGS ${f} _lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    file(RELATIVE_PATH _rel ${ROOT} ${f})
    foreach(line IN LISTS _lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" inc "${line}")
      if(inc MATCHES "^(core|mapping|io|solver)/")
        string(REGEX REPLACE "/.*" "" target_layer "${inc}")
        if(NOT target_layer IN_LIST _allowed_${layer})
          list(APPEND _violations "${_rel}: ${layer}/ may not include ${inc}")
        endif()
        if(_rel MATCHES "^solver/(driver|lifecycle)\\." AND inc MATCHES "^solver/(cpu|cuda)/")
          list(APPEND _violations "${_rel}: the driver may not include a concrete backend (${inc})")
        endif()
        if(inc MATCHES "^solver/(commands|cli)/" AND NOT _rel MATCHES
           "^solver/(commands/|cli/|main\\.cpp$|[^/]+/command\\.)")
          list(APPEND _violations "${_rel}: the engine knows no command, only the command layer includes ${inc}")
        endif()
        if(_rel MATCHES "^solver/cli/" AND inc MATCHES "^solver/commands/" AND
           NOT inc STREQUAL "solver/commands/command.hpp")
          list(APPEND _violations "${_rel}: the shared options know no command (${inc}), only the interface solver/commands/command.hpp")
        endif()
      endif()
      if(layer STREQUAL "mapping" AND inc MATCHES "^(mpi\\.h|hdf5\\.h|cuda_runtime\\.h)$")
        list(APPEND _violations "${_rel}: mapping/ is pure index maths; it may not include <${inc}>")
      endif()
      if(_rel MATCHES "\\.(cu|cuh)$" AND (inc MATCHES "^(mpi\\.h|hdf5\\.h)$" OR inc MATCHES "^io/(h5|result_file)\\.hpp$"))
        list(APPEND _violations "${_rel}: CUDA sources stay free of MPI and HDF5 (${inc})")
      endif()
    endforeach()
  endforeach()
endforeach()

if(_violations)
  list(JOIN _violations "\n  " _text)
  message(FATAL_ERROR "layering violations:\n  ${_text}")
endif()
