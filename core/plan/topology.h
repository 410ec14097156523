// Topology: the devices of a machine (or several) and the links between them, as the planner
// and the simulator see them.
//
// The wiring is a tree: every node but the root names its parent and the link to it (a GPU to
// its PCIe switch, a switch to its socket, a socket to the I/O hub, a node's NIC to the network
// switch). Peer links (NVLink) join two devices directly, beside the tree. A copy from device
// a to device b takes the peer link when there is one, otherwise the tree path up from a to
// the lowest common ancestor and down to b. Each link is two channels, one a direction: two
// copies in opposite directions do not share bandwidth, two in the same direction do.
//
// A fabric (an NVSwitch system) joins its devices all to all, but through each device's own
// ports: a copy from a to b takes a's channel into the fabric and b's channel out of it, so two
// copies from one GPU to two peers share its ports (12 NVLink 3 links on an A100, in total, not
// per peer) while copies between disjoint pairs do not. A peer link wins over a fabric, a fabric
// over the tree.
//
// Machines: devices joined by a route that crosses no network link (hardware.h's `network`:
// InfiniBand, Ethernet) are on one machine; NCCL's tree spans machines with binary trees.
//
// CPU devices (device 'cpu') share their machine's cores: the nearest ancestor that gives
// `cores` is the pool their kernel threads run on, and the simulator slows them down when
// busy devices ask for more threads than the pool has.
//
// Topologies are written as Lua files (recipes/topologies/*.lua), turned into a TopologySpec by
// the binding; Topology checks the spec and throws ConfigError naming the node and what is wrong
// (an unknown parent, device model or link, a cycle, a node not connected to the root).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plan/hardware.h"

namespace tandem {

struct TopologyNodeSpec {
    std::string name;
    std::string parent;            // empty for the root
    std::string link;              // link model to the parent (hardware.h); required with a parent
    std::string device;            // device model ('V100', ...) or 'cpu'; empty for a switch or hub
    std::size_t memory_bytes = 0;  // a device's memory; 0: its model's
    int threads = 1;               // a CPU device's kernel threads
    int cores = 0;                 // a machine's cores, shared by the CPU devices under it
    int count = 1;                 // parallel links to the parent (bandwidth adds up)
};

struct PeerLinkSpec {
    std::string a, b;  // two devices
    std::string link;  // link model
    int count = 1;     // parallel links (bandwidth adds up)
};

struct FabricSpec {
    std::string name;                  // "nvswitch"
    std::string link;                  // link model of one port link ('nvlink3')
    int count = 1;                     // links from each device into the fabric
    std::vector<std::string> devices;  // its devices, each on one fabric at most
    // The switches reduce (NVLink SHARP, third-generation NVSwitch and later: DGX H100): NCCL's
    // NVLS all-reduce sends each byte into the switch once and reads the sum back once
    // (collectives.h).
    bool reduces = false;
};

struct TopologySpec {
    std::string name;
    std::vector<TopologyNodeSpec> nodes;
    std::vector<PeerLinkSpec> peers;
    std::vector<FabricSpec> fabrics;
};

struct TopologyDevice {
    std::string name;
    std::string model;  // 'V100', 'cpu'
    bool cpu = false;
    std::size_t memory_bytes = 0;
    int threads = 1;
    int pool = -1;  // index into Topology::pools() for CPU devices, -1 otherwise

    // What its kernels keep beside the net: on a GPU, cuDNN's default workspace budget
    // (device/workspace_budget.h), which a timed algorithm search allocates whole; nothing on a
    // CPU.
    std::size_t kernel_reserve_bytes() const;
    // The memory a plan's stage may fill: the cap less the kernels' reserve.
    std::size_t usable_bytes() const;
};

// One direction of a link: what a copy occupies.
struct Channel {
    std::string name;  // "gpu0->switch0"
    double bandwidth_gbs = 0;
    double latency_us = 0;
    bool network = false;  // a link between machines
    bool nvlink = false;   // an NVLink (LinkModel::nvlink)
};

class Topology {
public:
    explicit Topology(TopologySpec spec);

    const std::string& name() const { return spec_.name; }
    int device_count() const { return static_cast<int>(devices_.size()); }
    // Devices in the order the spec lists them: the order plans place stages in.
    const TopologyDevice& device(int index) const;
    const std::vector<TopologyDevice>& devices() const { return devices_; }
    // Index of the device called `name`; throws ConfigError if there is none.
    int device_index(const std::string& name) const;
    const std::vector<Channel>& channels() const { return channels_; }
    // Cores of each CPU pool.
    const std::vector<int>& pools() const { return pool_cores_; }

    // The channels a copy from device `from` to device `to` crosses, in order; empty when
    // from == to.
    std::vector<int> route(int from, int to) const;
    // The time of a copy of `bytes` alone on that route, in ms.
    double copy_ms(int from, int to, std::size_t bytes) const;

    // `devices` reordered into a ring whose slowest hop is as fast as it can be, as NCCL builds
    // its rings over NVLink and the nearest switches: exhaustive up to 9 devices, greedy
    // (nearest unvisited next) beyond.
    std::vector<int> ring_order(const std::vector<int>& devices) const;

    // The fabric of a device (an index into the spec's fabrics), -1 when it is on none; its
    // channels into and out of it; whether that fabric reduces (FabricSpec::reduces).
    int fabric(int device) const { return fabric_[static_cast<std::size_t>(device)]; }
    int fabric_port_in(int device) const { return into_[static_cast<std::size_t>(device)]; }
    int fabric_port_out(int device) const { return out_of_[static_cast<std::size_t>(device)]; }
    bool fabric_reduces(int fabric) const;

    // The machine of each device, numbered from 0 in device order (see above).
    int machine(int device) const { return machine_[static_cast<std::size_t>(device)]; }
    int machine_count() const { return machine_count_; }

    // Whether every device hangs off the same node with the same link and there are no peer
    // links or fabrics: then where a stage runs makes no difference.
    bool flat() const;

    // One line per device and link, for `tandem plan`.
    std::string describe() const;

private:
    int node_index(const std::string& name, const std::string& referrer) const;
    int add_channel(const std::string& from, const std::string& to, const LinkModel& link,
                    int count);
    void add_fabrics(const std::string& where);
    void find_machines();

    TopologySpec spec_;
    std::vector<int> parent_;       // per node; -1 for the root
    std::vector<int> depth_;        // per node
    std::vector<int> up_, down_;    // per node: channel to / from its parent
    std::vector<int> device_node_;  // per device: its node
    std::vector<TopologyDevice> devices_;
    std::vector<Channel> channels_;
    std::vector<int> pool_cores_;
    std::vector<std::vector<int>> peer_;  // [from device][to device]: channel or -1
    std::vector<int> fabric_;             // per device: its fabric or -1
    std::vector<int> into_, out_of_;      // per device: its channel into / out of its fabric
    std::vector<int> machine_;            // per device
    int machine_count_ = 0;
};

}  // namespace tandem
