// TANDEM_HOST_DEVICE marks inline math that nvcc compiles for the GPU and the host compiler for
// the CPU, so both backends run one definition of it (lrn_pixel.h, activation_math.h).
#pragma once

#if defined(__CUDACC__)
#define TANDEM_HOST_DEVICE __host__ __device__
#else
#define TANDEM_HOST_DEVICE
#endif
