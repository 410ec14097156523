#include "parallel/communicator.h"

#include <set>
#include <string>

#include "base/enum_names.h"
#include "base/error.h"
#include "device/device.h"
#include "parallel/comm_staged.h"
#if TANDEM_CUDA
#include "parallel/comm_nccl.h"
#endif

namespace tandem {

namespace {
constexpr std::array<EnumName<ReduceAlgorithm>, 2> kReduceAlgorithms{
    {{ReduceAlgorithm::ring, "ring"}, {ReduceAlgorithm::tree, "tree"}}};
}  // namespace

std::string_view reduce_algorithm_name(ReduceAlgorithm algorithm) {
    return enum_name(kReduceAlgorithms, algorithm);
}

ReduceAlgorithm parse_reduce_algorithm(std::string_view name) {
    return parse_enum(kReduceAlgorithms, name, "unknown all-reduce algorithm");
}

std::unique_ptr<Communicator> make_device_communicator(const std::vector<Device*>& devices,
                                                       bool canonical_order) {
    TANDEM_CHECK_AS(ConfigError, !devices.empty()) << "a communicator needs at least one rank";
    const DeviceKind kind = devices.front()->kind();
    for (const Device* d : devices)
        TANDEM_CHECK_AS(ConfigError, d->kind() == kind)
            << "the replicas of a stage must be on devices of one kind: " << devices.front()->name()
            << " and " << d->name() << " are not";
    const int ranks = static_cast<int>(devices.size());
    if (devices.front()->host_accessible()) return make_inproc_communicator(ranks);
    // NCCL sums in an order of its own and takes one rank per GPU: the canonical order, or
    // replicas on devices that share a GPU, go through the host.
    std::set<int> gpus;
    for (const Device* d : devices) gpus.insert(d->index());
    if (canonical_order || int(gpus.size()) < ranks)
        return std::make_unique<StagedCommunicator>(devices, make_inproc_communicator(ranks));
#if TANDEM_CUDA
    if (kind == DeviceKind::cuda) return make_nccl_communicator(devices);
#endif
    TANDEM_THROW(ConfigError) << "no communicator for " << device_kind_name(kind) << " devices ("
                              << devices.front()->name() << ") in this build";
}

}  // namespace tandem
