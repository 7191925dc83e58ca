# Every dependency comes from Debian's packages (tools/install-deps.sh installs them).
find_package(Eigen3 3.4 REQUIRED NO_MODULE)          # libeigen3-dev
find_package(OpenMP REQUIRED)                        # part of g++
# OpenBLAS in its OpenMP build (libopenblas-openmp-dev), not Debian's default pthreads build: that
# one starts a pool of threads of its own as it loads, and they spin for their first 2^28 cycles
# (OpenBLAS's default wait before a thread sleeps), which on two cores took one from OpenMP's team
# (a first cpu_eigen_omp call then took many times its time). The OpenMP build's threads are OpenMP's: one pool in the process.
# -DBLAS_LIBRARIES=... (with -DCBLAS_INCLUDE_DIR=...) names another OpenBLAS.
set(BLA_VENDOR OpenBLAS)
if(NOT BLAS_LIBRARIES)
  set(openblas_openmp /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp)
  find_library(OPENBLAS_OPENMP_LIBRARY openblas NO_DEFAULT_PATH PATHS ${openblas_openmp})
  find_path(OPENBLAS_OPENMP_INCLUDE_DIR cblas.h NO_DEFAULT_PATH
            PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp)
  if(NOT OPENBLAS_OPENMP_LIBRARY OR NOT OPENBLAS_OPENMP_INCLUDE_DIR)
    message(FATAL_ERROR "OpenBLAS's OpenMP build was not found: tools/install-deps.sh installs it "
                        "(libopenblas-openmp-dev), or name one with -DBLAS_LIBRARIES=<lib> "
                        "-DCBLAS_INCLUDE_DIR=<dir>")
  endif()
  # As if given with -D, so that FindBLAS takes it; its header goes with it.
  set(BLAS_LIBRARIES ${OPENBLAS_OPENMP_LIBRARY} CACHE FILEPATH "The OpenBLAS triptych links")
  set(CBLAS_INCLUDE_DIR ${OPENBLAS_OPENMP_INCLUDE_DIR} CACHE PATH "OpenBLAS's cblas.h" FORCE)
endif()
find_package(BLAS REQUIRED)                          # libopenblas-dev
find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas REQUIRED)
find_package(Catch2 2 REQUIRED)                      # catch2 (2.x, single header)
find_package(benchmark REQUIRED)                     # libbenchmark-dev
find_package(ZLIB REQUIRED)                          # zlib1g-dev: gzip IDX files (common/idx.cpp)
find_path(FFTW_INCLUDE_DIR fftw3.h REQUIRED)          # libfftw3-dev: cpu_eigen_omp's FFT convolution
find_library(FFTW_FLOAT_LIBRARY fftw3f REQUIRED)     # (conv_fft.cpp), single precision
find_program(TRIPTYCH_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)  # with python3-matplotlib
