// The kernel registry of this build: the registry itself lives with the kernel contracts
// (kernels/registry.h), below the backends that fill it, but its one instance is made here,
// above them, because its constructor calls each compiled backend's list. Keeping the
// constructor in kernels/ would make that library call up into device/cpu and device/cuda.
#include "kernels/registry.h"

namespace tandem {

KernelRegistry& KernelRegistry::instance() {
    static KernelRegistry registry;
    return registry;
}

KernelRegistry::KernelRegistry() {
    register_cpu_kernels(*this);
#if TANDEM_CUDA
    register_cuda_kernels(*this);
#endif
}

}  // namespace tandem
