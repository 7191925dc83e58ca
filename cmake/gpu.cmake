# The one GPU switch, TRIPTYCH_GPU (see README "Building for a real GPU"):
#   cuda  nvcc builds the kernels for the GPU; gpu_vendor (cuBLAS, cuDNN) is available
#   sim   the same .cu files compile as C++ against the CPU simulator in gpu/runtime/sim
#   off   CPU variants only
#   auto  cuda when nvcc is found and a GPU is visible now, else sim
# Whenever nvcc is found and the build is not cuda, every .cu is also compiled by nvcc for sm_90 and
# sm_80 (target triptych_nvcc_check), so a kernel that only builds in the simulator is caught.
include(CheckLanguage)
check_language(CUDA)

set(TRIPTYCH_GPU_VISIBLE OFF)
find_program(NVIDIA_SMI nvidia-smi)
if(NVIDIA_SMI)
  execute_process(COMMAND ${NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
                  OUTPUT_VARIABLE TRIPTYCH_GPU_CAPABILITY RESULT_VARIABLE smi_result
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(smi_result EQUAL 0 AND TRIPTYCH_GPU_CAPABILITY)
    set(TRIPTYCH_GPU_VISIBLE ON)
  endif()
endif()

set(TRIPTYCH_GPU_FLAVOR ${TRIPTYCH_GPU})
if(TRIPTYCH_GPU STREQUAL "auto")
  if(CMAKE_CUDA_COMPILER AND TRIPTYCH_GPU_VISIBLE)
    set(TRIPTYCH_GPU_FLAVOR cuda)
  else()
    set(TRIPTYCH_GPU_FLAVOR sim)
  endif()
elseif(NOT TRIPTYCH_GPU MATCHES "^(cuda|sim|off)$")
  message(FATAL_ERROR "TRIPTYCH_GPU must be auto, cuda, sim or off, not '${TRIPTYCH_GPU}'")
endif()
if(TRIPTYCH_GPU_FLAVOR STREQUAL "cuda" AND NOT CMAKE_CUDA_COMPILER)
  message(FATAL_ERROR "TRIPTYCH_GPU=cuda needs nvcc (the CUDA toolkit); none was found")
endif()

set(TRIPTYCH_NVCC_CHECKING OFF)
if(CMAKE_CUDA_COMPILER)
  if(TRIPTYCH_GPU_FLAVOR STREQUAL "cuda")
    if(NOT CMAKE_CUDA_ARCHITECTURES)
      if(TRIPTYCH_GPU_VISIBLE)
        string(REPLACE "." "" detected_arch "${TRIPTYCH_GPU_CAPABILITY}")
        list(GET detected_arch 0 detected_arch)   # first GPU when several are visible
        set(CMAKE_CUDA_ARCHITECTURES ${detected_arch})
      else()
        set(CMAKE_CUDA_ARCHITECTURES 90)
      endif()
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    # cuDNN, for gpu_vendor's convolution, pooling and activations. Some toolkits ship it in their
    # own lib/ (not lib64/), which is not on CMake's search path; CUDNN_ROOT points elsewhere.
    find_path(CUDNN_INCLUDE_DIR cudnn.h
              HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
    find_library(CUDNN_LIBRARY cudnn
                 HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_ROOT}
                 PATH_SUFFIXES lib64 lib)
    # A cuda build without cuDNN is refused rather than built without the ops: gpu_vendor is the
    # ceiling every conv2d and pooling row is compared against, and a silently missing row reads
    # like a missing result.
    if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
      message(FATAL_ERROR "TRIPTYCH_GPU=cuda needs cuDNN 9 (cudnn.h and libcudnn) for gpu_vendor; "
                          "none was found next to the CUDA toolkit. Install it (e.g. the cudnn9 "
                          "package for your CUDA), point -DCUDNN_ROOT=<dir> at it, or build with "
                          "-DTRIPTYCH_GPU=sim.")
    endif()
    add_library(CUDNN::cudnn UNKNOWN IMPORTED)
    set_target_properties(CUDNN::cudnn PROPERTIES IMPORTED_LOCATION ${CUDNN_LIBRARY}
                          INTERFACE_INCLUDE_DIRECTORIES ${CUDNN_INCLUDE_DIR})
    message(STATUS "triptych: cuDNN ${CUDNN_LIBRARY}")
  elseif(TRIPTYCH_NVCC_CHECK AND NOT TRIPTYCH_GPU_FLAVOR STREQUAL "off")
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
    enable_language(CUDA)
    set(TRIPTYCH_NVCC_CHECKING ON)
  endif()
  if(CMAKE_CUDA_COMPILER_LOADED)
    # CMake 3.25 knows no C++20 flag for nvcc and adds its C++17 one on its own; nvcc 13 has
    # C++20, so the C++17 slot is pointed at it.
    set(CMAKE_CUDA17_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA17_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
endif()

if(TRIPTYCH_GPU_FLAVOR STREQUAL "sim")
  find_package(Boost 1.74 REQUIRED COMPONENTS context)  # libboost-context-dev
endif()

# The simulator's access recorder (gpu/runtime/sim/recorder.cpp: `triptych profile`, the race
# checker) needs the kernels compiled with GCC's ThreadSanitizer instrumentation, which cannot be
# mixed with AddressSanitizer: sim builds with GCC, without TRIPTYCH_SANITIZE.
set(TRIPTYCH_SIM_RECORDER OFF)
if(TRIPTYCH_GPU_FLAVOR STREQUAL "sim" AND NOT TRIPTYCH_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(TRIPTYCH_SIM_RECORDER ON)
endif()
# How the instrumented copy of a kernel is compiled: GCC's ThreadSanitizer instrumentation calls
# __tsan_read4(address), __tsan_write8(address), ... before every load and store, and
# __tsan_atomic32_fetch_add(...) and the like for every atomic; the simulator supplies those
# functions itself (gpu/runtime/sim/instrumented.cpp), not ThreadSanitizer's run-time. It is chosen
# over AddressSanitizer's hooks because those skip accesses to a variable at a constant offset, and
# `__shared__ float sum;` is exactly such a variable. -fno-tree-sra keeps the copy of a float4 one
# 16-byte access, as a GPU's 128-bit load is (GCC otherwise splits it into four 4-byte loads); -g1
# keeps the line table the per-line counters need, in DWARF 4 (Debian 12's addr2line puts some
# lines of a DWARF 5 table in the wrong file: the generated wrapper instead of the .cu).
set(TRIPTYCH_SIM_RECORDER_FLAGS -fsanitize=thread --param=tsan-instrument-func-entry-exit=0 -fno-tree-sra -g1 -gdwarf-4)

# The flavor, visible to C++ as TRIPTYCH_GPU_CUDA / TRIPTYCH_GPU_SIM / TRIPTYCH_GPU_OFF; and the
# nvcc that compiles the kernels (cuda) or checks them and reports their registers (sim), or "".
set(nvcc_version "")
if(CMAKE_CUDA_COMPILER_LOADED)
  set(nvcc_version "${CMAKE_CUDA_COMPILER_VERSION}")
endif()
string(TOUPPER ${TRIPTYCH_GPU_FLAVOR} flavor_upper)
file(WRITE ${PROJECT_BINARY_DIR}/generated/triptych_config.hpp.in
"// Generated by cmake/gpu.cmake: the build's GPU flavor and the paths tools need.
#pragma once
#define TRIPTYCH_GPU_${flavor_upper} 1
#define TRIPTYCH_GPU_FLAVOR \"${TRIPTYCH_GPU_FLAVOR}\"
#define TRIPTYCH_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\"
#define TRIPTYCH_BINARY_DIR \"${PROJECT_BINARY_DIR}\"
#define TRIPTYCH_PYTHON \"${TRIPTYCH_PYTHON}\"
#define TRIPTYCH_CXX_COMPILER \"${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}\"
#define TRIPTYCH_NVCC_VERSION \"${nvcc_version}\"
")
configure_file(${PROJECT_BINARY_DIR}/generated/triptych_config.hpp.in
               ${PROJECT_BINARY_DIR}/generated/triptych_config.hpp COPYONLY)

# triptych_add_kernels(target [INSTRUMENTED] file.cu ...): adds CUDA sources to `target` in the
# build's flavor.
#   cuda: compiled by nvcc.  sim: compiled as C++ through a generated one-line .cpp that includes
#   the .cu (so the .cu keeps its name and nvcc can still see it).  Plus the nvcc compile check.
#   INSTRUMENTED (sim builds with the recorder): compiled with TRIPTYCH_SIM_RECORDER_FLAGS, through
#   a wrapper of its own, for the instrumented copy of a program.
if(TRIPTYCH_NVCC_CHECKING)
  add_library(triptych_nvcc_check OBJECT)
  target_include_directories(triptych_nvcc_check PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/generated)
  target_compile_options(triptych_nvcc_check PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
                         $<$<COMPILE_LANGUAGE:CUDA>:--resource-usage>)
  # ptxas's registers and static shared memory per kernel, kept in kernel_resources/ for
  # `triptych profile`'s occupancy (gpu/runtime/sim/occupancy.hpp).
  set_target_properties(triptych_nvcc_check PROPERTIES CUDA_COMPILER_LAUNCHER
                        "${PROJECT_SOURCE_DIR}/tools/nvcc_resources.sh;${PROJECT_BINARY_DIR}/kernel_resources")
endif()

function(triptych_add_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "INSTRUMENTED" "" "")
  foreach(cu IN LISTS arg_UNPARSED_ARGUMENTS)
    get_filename_component(cu_path ${cu} ABSOLUTE)
    if(TRIPTYCH_GPU_FLAVOR STREQUAL "cuda")
      target_sources(${target} PRIVATE ${cu_path})
    elseif(arg_INSTRUMENTED)
      file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${cu_path})
      string(REPLACE "/" "_" wrapper_name ${rel})
      set(wrapper ${PROJECT_BINARY_DIR}/sim_sources/${wrapper_name}.instrumented.cpp)
      file(CONFIGURE OUTPUT ${wrapper} CONTENT "// Generated: ${rel} compiled as C++ for the CUDA simulator, with the access recorder.\n#include \"${rel}\"\n")
      target_sources(${target} PRIVATE ${wrapper})
      set_source_files_properties(${wrapper} TARGET_DIRECTORY ${target} PROPERTIES
                                  COMPILE_OPTIONS "${TRIPTYCH_SIM_RECORDER_FLAGS}")
    else()
      file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${cu_path})
      string(REPLACE "/" "_" wrapper_name ${rel})
      set(wrapper ${PROJECT_BINARY_DIR}/sim_sources/${wrapper_name}.cpp)
      file(CONFIGURE OUTPUT ${wrapper} CONTENT "// Generated: ${rel} compiled as C++ for the CUDA simulator.\n#include \"${rel}\"\n")
      target_sources(${target} PRIVATE ${wrapper})
      if(TRIPTYCH_NVCC_CHECKING)
        target_sources(triptych_nvcc_check PRIVATE ${cu_path})
      endif()
    endif()
  endforeach()
endfunction()

# triptych_program(target SOURCES file... [OUTPUT_NAME name]): an executable linked with
# triptych_check and every variant. Where the recorder is built, a twin with the instrumented
# kernels goes next to it, in instrumented/ under the same name: the simulator runs it in its place
# when TRIPTYCH_SIM_PROFILE or TRIPTYCH_SIM_RACECHECK asks for recording (gpu/runtime/sim/recorder.cpp).
function(triptych_program target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "OUTPUT_NAME" "SOURCES;LIBRARIES")
  if(NOT arg_OUTPUT_NAME)
    set(arg_OUTPUT_NAME ${target})
  endif()
  add_library(${target}_objects OBJECT ${arg_SOURCES})
  target_link_libraries(${target}_objects PUBLIC triptych_check ${arg_LIBRARIES})
  add_executable(${target} $<TARGET_OBJECTS:${target}_objects>)
  target_link_libraries(${target} PRIVATE triptych_check triptych::all ${arg_LIBRARIES})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME ${arg_OUTPUT_NAME})
  if(TRIPTYCH_SIM_RECORDER)
    add_executable(${target}_instrumented $<TARGET_OBJECTS:${target}_objects>)
    target_link_libraries(${target}_instrumented PRIVATE triptych_check triptych::instrumented
                          ${arg_LIBRARIES})
    set_target_properties(${target}_instrumented PROPERTIES OUTPUT_NAME ${arg_OUTPUT_NAME}
                          RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/instrumented)
    add_dependencies(${target} ${target}_instrumented)
  endif()
endfunction()
