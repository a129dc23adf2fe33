//===- HostDevice.h - functions for host and device code --------*- C++ -*-===//
//
// Marks an inline function of a shared header as callable from CUDA device
// code too, so that the CPU and CUDA kernels share one definition of a rule.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_HOSTDEVICE_H
#define ZEROSBP_RUNTIME_KERNELS_HOSTDEVICE_H

#if defined(__CUDACC__)
#define ZEROSBP_HOST_DEVICE __host__ __device__
#else
#define ZEROSBP_HOST_DEVICE
#endif

#endif // ZEROSBP_RUNTIME_KERNELS_HOSTDEVICE_H
