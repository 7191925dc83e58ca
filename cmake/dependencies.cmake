# Every dependency comes from Debian's packages (tools/install-deps.sh installs them).
find_package(Eigen3 3.4 REQUIRED NO_MODULE)          # libeigen3-dev
find_package(OpenMP REQUIRED)                        # part of g++
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)                          # libopenblas-dev
find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas REQUIRED)
find_package(Catch2 2 REQUIRED)                      # catch2 (2.x, single header)
find_package(benchmark REQUIRED)                     # libbenchmark-dev
find_package(ZLIB REQUIRED)                          # zlib1g-dev: gzip IDX files (common/idx.cpp)
find_path(FFTW_INCLUDE_DIR fftw3.h REQUIRED)          # libfftw3-dev: cpu_eigen_omp's FFT convolution
find_library(FFTW_FLOAT_LIBRARY fftw3f REQUIRED)     # (conv_fft.cpp), single precision
find_program(TRIPTYCH_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)  # with python3-matplotlib
