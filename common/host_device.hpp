// TRIPTYCH_HOST_DEVICE: marks a function that the host and CUDA kernels both call, so that a
// formula or a piece of geometry that every panel needs is written once, in common/. Under nvcc it
// is __host__ __device__; for the host compiler (the CPU panels and the simulator) it is nothing.
#pragma once

#if defined(__CUDACC__)
#define TRIPTYCH_HOST_DEVICE __host__ __device__
#else
#define TRIPTYCH_HOST_DEVICE
#endif
