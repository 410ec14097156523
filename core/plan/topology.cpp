#include "plan/topology.h"

#include <algorithm>
#include <sstream>

#include "base/error.h"
#include "base/format.h"
#include "device/workspace_budget.h"

namespace tandem {
namespace {

// `f()`, with an unknown link or device model named with the topology and the node it is on
// ("topology 'mine': node 'gpu0': unknown device model 'GTX9999'; known: ...", issue 19).
template <class F>
decltype(auto) naming(const std::string& where, F f) {
    try {
        return f();
    } catch (const ConfigError& e) {
        throw ConfigError(where + e.what());
    }
}

}  // namespace

std::size_t TopologyDevice::kernel_reserve_bytes() const {
    return cpu ? 0 : std::min(memory_bytes, default_workspace_budget(memory_bytes));
}

std::size_t TopologyDevice::usable_bytes() const {
    return memory_bytes - kernel_reserve_bytes();
}

Topology::Topology(TopologySpec spec) : spec_(std::move(spec)) {
    const auto& nodes = spec_.nodes;
    const std::string where = "topology '" + spec_.name + "': ";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        TANDEM_CHECK_AS(ConfigError, !nodes[i].name.empty())
            << where << "node " << i + 1 << " has no name";
        for (std::size_t j = 0; j < i; ++j)
            TANDEM_CHECK_AS(ConfigError, nodes[j].name != nodes[i].name)
                << where << "two nodes are called '" << nodes[i].name << "'";
    }

    // The tree: one root, every other node's parent known, no cycle.
    const int n = static_cast<int>(nodes.size());
    parent_.assign(static_cast<std::size_t>(n), -1);
    int root = -1;
    for (int i = 0; i < n; ++i) {
        const auto& node = nodes[static_cast<std::size_t>(i)];
        if (node.parent.empty()) {
            TANDEM_CHECK_AS(ConfigError, root < 0)
                << where << "'" << nodes[static_cast<std::size_t>(root)].name << "' and '"
                << node.name
                << "' both have no parent: every node but the root must be linked to one";
            root = i;
            continue;
        }
        parent_[static_cast<std::size_t>(i)] = node_index(node.parent, node.name);
        TANDEM_CHECK_AS(ConfigError, !node.link.empty())
            << where << "node '" << node.name << "' has parent '" << node.parent
            << "' but no link to it";
    }
    TANDEM_CHECK_AS(ConfigError, root >= 0)
        << where << "no root: every node has a parent, so they form a cycle";
    depth_.assign(static_cast<std::size_t>(n), -1);
    depth_[static_cast<std::size_t>(root)] = 0;
    for (int i = 0; i < n; ++i) {
        // Walk up until a node of known depth; more than n steps means a cycle.
        std::vector<int> path;
        int at = i;
        while (depth_[static_cast<std::size_t>(at)] < 0) {
            path.push_back(at);
            TANDEM_CHECK_AS(ConfigError, static_cast<int>(path.size()) <= n) << [&] {
                std::string cycle;
                for (std::size_t k = 0; k < path.size() && k <= static_cast<std::size_t>(n); ++k)
                    cycle += nodes[static_cast<std::size_t>(path[k])].name + " -> ";
                return where + "the parents form a cycle: " + cycle + "...";
            }();
            at = parent_[static_cast<std::size_t>(at)];
        }
        for (auto it = path.rbegin(); it != path.rend(); ++it)
            depth_[static_cast<std::size_t>(*it)] =
                depth_[static_cast<std::size_t>(parent_[static_cast<std::size_t>(*it)])] + 1;
    }

    // Channels for every tree link, devices and their CPU pools.
    up_.assign(static_cast<std::size_t>(n), -1);
    down_.assign(static_cast<std::size_t>(n), -1);
    std::vector<int> pool_of_node(static_cast<std::size_t>(n), -1);
    for (int i = 0; i < n; ++i) {
        const auto& node = nodes[static_cast<std::size_t>(i)];
        if (node.cores > 0) {
            pool_of_node[static_cast<std::size_t>(i)] = static_cast<int>(pool_cores_.size());
            pool_cores_.push_back(node.cores);
        }
        if (parent_[static_cast<std::size_t>(i)] < 0) continue;
        const LinkModel& link = naming(where + "node '" + node.name + "': ",
                                       [&]() -> const LinkModel& { return link_model(node.link); });
        TANDEM_CHECK_AS(ConfigError, node.count >= 1)
            << where << "node '" << node.name << "' has " << node.count << " links to '"
            << node.parent << "'";
        up_[static_cast<std::size_t>(i)] = add_channel(node.name, node.parent, link, node.count);
        down_[static_cast<std::size_t>(i)] = add_channel(node.parent, node.name, link, node.count);
    }
    for (int i = 0; i < n; ++i) {
        const auto& node = nodes[static_cast<std::size_t>(i)];
        if (node.device.empty()) continue;
        TopologyDevice d;
        d.name = node.name;
        d.model = node.device;
        d.cpu = node.device == "cpu";
        d.threads = node.threads;
        TANDEM_CHECK_AS(ConfigError, node.threads >= 1)
            << where << "device '" << node.name << "' has " << node.threads << " threads";
        if (d.cpu) {
            for (int at = i; at >= 0 && d.pool < 0; at = parent_[static_cast<std::size_t>(at)])
                d.pool = pool_of_node[static_cast<std::size_t>(at)];
            TANDEM_CHECK_AS(ConfigError, d.pool >= 0) << where << "CPU device '" << node.name
                                                      << "' is under no node that gives its cores";
            TANDEM_CHECK_AS(ConfigError, node.memory_bytes > 0)
                << where << "CPU device '" << node.name << "' needs its memory";
            d.memory_bytes = node.memory_bytes;
        } else {
            const DeviceModel& model =
                naming(where + "node '" + node.name + "': ", [&]() -> const DeviceModel& {
                    return device_model(node.device);
                });
            d.memory_bytes = node.memory_bytes > 0
                                 ? node.memory_bytes
                                 : static_cast<std::size_t>(model.memory_gib * double(1 << 30));
        }
        device_node_.push_back(i);
        devices_.push_back(std::move(d));
    }
    TANDEM_CHECK_AS(ConfigError, !devices_.empty())
        << where << "no devices (a node with device = ...)";

    const std::size_t count = devices_.size();
    peer_.assign(count, std::vector<int>(count, -1));
    for (const auto& p : spec_.peers) {
        const int a = device_index(p.a), b = device_index(p.b);
        TANDEM_CHECK_AS(ConfigError, a != b) << where << "peer link from '" << p.a << "' to itself";
        TANDEM_CHECK_AS(ConfigError, p.count >= 1)
            << where << "peer link " << p.a << " - " << p.b << " has count " << p.count;
        const LinkModel& link = naming(where + "peer link " + p.a + " - " + p.b + ": ",
                                       [&]() -> const LinkModel& { return link_model(p.link); });
        peer_[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] =
            add_channel(p.a, p.b, link, p.count);
        peer_[static_cast<std::size_t>(b)][static_cast<std::size_t>(a)] =
            add_channel(p.b, p.a, link, p.count);
    }
    add_fabrics(where);
    find_machines();
}

void Topology::add_fabrics(const std::string& where) {
    const std::size_t count = devices_.size();
    fabric_.assign(count, -1);
    into_.assign(count, -1);
    out_of_.assign(count, -1);
    for (std::size_t f = 0; f < spec_.fabrics.size(); ++f) {
        const FabricSpec& fabric = spec_.fabrics[f];
        TANDEM_CHECK_AS(ConfigError, !fabric.name.empty())
            << where << "fabric " << f + 1 << " has no name";
        const std::string in = where + "fabric '" + fabric.name + "': ";
        for (std::size_t g = 0; g < f; ++g)
            TANDEM_CHECK_AS(ConfigError, spec_.fabrics[g].name != fabric.name)
                << where << "two fabrics are called '" << fabric.name << "'";
        TANDEM_CHECK_AS(ConfigError, fabric.count >= 1)
            << in << "count must be at least 1, got " << fabric.count;
        TANDEM_CHECK_AS(ConfigError, fabric.devices.size() >= 2)
            << in << "needs at least two devices, got " << fabric.devices.size();
        const LinkModel& link =
            naming(in, [&]() -> const LinkModel& { return link_model(fabric.link); });
        // The port's latency is the link's, charged once on the way in: a copy crosses the
        // switch in one hop of the link, not two.
        LinkModel out_link = link;
        out_link.latency_us = 0;
        for (const std::string& name : fabric.devices) {
            const auto it = std::find_if(devices_.begin(), devices_.end(),
                                         [&](const TopologyDevice& d) { return d.name == name; });
            TANDEM_CHECK_AS(ConfigError, it != devices_.end())
                << in << "'" << name << "' is not a device (a node with device = ...)";
            const auto d = static_cast<std::size_t>(it - devices_.begin());
            TANDEM_CHECK_AS(ConfigError, fabric_[d] < 0)
                << in << "device '" << name << "' is already on fabric '"
                << spec_.fabrics[static_cast<std::size_t>(fabric_[d])].name << "'";
            fabric_[d] = static_cast<int>(f);
            into_[d] = add_channel(name, fabric.name, link, fabric.count);
            out_of_[d] = add_channel(fabric.name, name, out_link, fabric.count);
        }
    }
}

void Topology::find_machines() {
    // Devices joined by a route that crosses no network link share a machine, and so do the
    // devices joined to them (on a DGX-1, gpu0 and gpu5 have no NVLink between them but both
    // have one to gpu1): a search over those pairs, numbered in device order.
    const int n = device_count();
    machine_.assign(static_cast<std::size_t>(n), -1);
    machine_count_ = 0;
    for (int first = 0; first < n; ++first) {
        if (machine_[static_cast<std::size_t>(first)] >= 0) continue;
        std::vector<int> todo{first};
        machine_[static_cast<std::size_t>(first)] = machine_count_;
        while (!todo.empty()) {
            const int a = todo.back();
            todo.pop_back();
            for (int b = 0; b < n; ++b) {
                if (machine_[static_cast<std::size_t>(b)] >= 0) continue;
                const auto hops = route(a, b);
                if (std::none_of(hops.begin(), hops.end(), [&](int c) {
                        return channels_[static_cast<std::size_t>(c)].network;
                    })) {
                    machine_[static_cast<std::size_t>(b)] = machine_count_;
                    todo.push_back(b);
                }
            }
        }
        ++machine_count_;
    }
}

int Topology::node_index(const std::string& name, const std::string& referrer) const {
    for (std::size_t i = 0; i < spec_.nodes.size(); ++i)
        if (spec_.nodes[i].name == name) return static_cast<int>(i);
    TANDEM_THROW(ConfigError) << "topology '" << spec_.name << "': node '" << referrer
                              << "' names an unknown parent '" << name << "'";
}

int Topology::add_channel(const std::string& from, const std::string& to, const LinkModel& link,
                          int count) {
    channels_.push_back(
        {from + "->" + to, link.bandwidth_gbs * count, link.latency_us, link.network, link.nvlink});
    return static_cast<int>(channels_.size()) - 1;
}

bool Topology::fabric_reduces(int fabric) const {
    return fabric >= 0 && spec_.fabrics[static_cast<std::size_t>(fabric)].reduces;
}

const TopologyDevice& Topology::device(int index) const {
    TANDEM_CHECK(index >= 0 && index < device_count())
        << "device " << index << " of topology '" << spec_.name << "' (it has " << device_count()
        << ")";
    return devices_[static_cast<std::size_t>(index)];
}

int Topology::device_index(const std::string& name) const {
    for (std::size_t i = 0; i < devices_.size(); ++i)
        if (devices_[i].name == name) return static_cast<int>(i);
    std::vector<std::string> names;
    for (const auto& d : devices_) names.push_back(d.name);
    TANDEM_THROW(ConfigError) << "topology '" << spec_.name << "' has no device '" << name
                              << "'; its devices: " << join(names, ", ");
}

std::vector<int> Topology::route(int from, int to) const {
    (void)device(from), (void)device(to);
    if (from == to) return {};
    const int direct = peer_[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
    if (direct >= 0) return {direct};
    const auto f = static_cast<std::size_t>(from), t = static_cast<std::size_t>(to);
    if (fabric_[f] >= 0 && fabric_[f] == fabric_[t]) return {into_[f], out_of_[t]};
    int a = device_node_[static_cast<std::size_t>(from)],
        b = device_node_[static_cast<std::size_t>(to)];
    std::vector<int> up, down;
    while (a != b) {
        if (depth_[static_cast<std::size_t>(a)] >= depth_[static_cast<std::size_t>(b)]) {
            up.push_back(up_[static_cast<std::size_t>(a)]);
            a = parent_[static_cast<std::size_t>(a)];
        } else {
            down.push_back(down_[static_cast<std::size_t>(b)]);
            b = parent_[static_cast<std::size_t>(b)];
        }
    }
    up.insert(up.end(), down.rbegin(), down.rend());
    return up;
}

double Topology::copy_ms(int from, int to, std::size_t bytes) const {
    double latency_us = 0, bandwidth = 0;
    for (int c : route(from, to)) {
        const Channel& ch = channels_[static_cast<std::size_t>(c)];
        latency_us += ch.latency_us;
        bandwidth = bandwidth == 0 ? ch.bandwidth_gbs : std::min(bandwidth, ch.bandwidth_gbs);
    }
    if (bandwidth == 0) return 0;
    return latency_us / 1e3 + static_cast<double>(bytes) / (bandwidth * 1e6);
}

std::vector<int> Topology::ring_order(const std::vector<int>& devices) const {
    const std::size_t n = devices.size();
    if (n < 3) return devices;
    // Hop costs: a 1 MiB copy weighs bandwidth and latency.
    constexpr std::size_t probe = std::size_t(1) << 20;
    std::vector<std::vector<double>> hop(n, std::vector<double>(n, 0));
    for (std::size_t a = 0; a < n; ++a)
        for (std::size_t b = 0; b < n; ++b)
            if (a != b) hop[a][b] = copy_ms(devices[a], devices[b], probe);
    // A ring is as fast as its slowest hop. Up to 9 devices: every ring from the first device,
    // depth first, pruned by the best slowest hop so far; beyond: greedy nearest neighbour.
    std::vector<std::size_t> ring{0}, best;
    std::vector<bool> used(n, false);
    used[0] = true;
    double best_slowest = 0;
    auto search = [&](auto&& self, double slowest) -> void {
        if (!best.empty() && slowest >= best_slowest) return;
        if (ring.size() == n) {
            const double closing = std::max(slowest, hop[ring.back()][0]);
            if (best.empty() || closing < best_slowest) best = ring, best_slowest = closing;
            return;
        }
        for (std::size_t next = 1; next < n; ++next) {
            if (used[next]) continue;
            used[next] = true;
            ring.push_back(next);
            self(self, std::max(slowest, hop[ring[ring.size() - 2]][next]));
            ring.pop_back();
            used[next] = false;
            if (n > 9) break;  // greedy: only the first choice below
        }
    };
    if (n <= 9) {
        search(search, 0.0);
    } else {
        while (ring.size() < n) {
            std::size_t pick = 0;
            for (std::size_t next = 1; next < n; ++next)
                if (!used[next] && (pick == 0 || hop[ring.back()][next] < hop[ring.back()][pick]))
                    pick = next;
            used[pick] = true;
            ring.push_back(pick);
        }
        best = ring;
    }
    std::vector<int> out;
    for (std::size_t i : best) out.push_back(devices[i]);
    return out;
}

bool Topology::flat() const {
    if (!spec_.peers.empty() || !spec_.fabrics.empty()) return false;
    const auto& first = spec_.nodes[static_cast<std::size_t>(device_node_.front())];
    for (int node : device_node_) {
        const auto& n = spec_.nodes[static_cast<std::size_t>(node)];
        if (n.parent != first.parent || n.link != first.link) return false;
    }
    return true;
}

std::string Topology::describe() const {
    std::ostringstream out;
    out << "topology " << spec_.name << ": " << devices_.size() << " devices\n";
    for (std::size_t i = 0; i < spec_.nodes.size(); ++i) {
        const auto& node = spec_.nodes[i];
        out << std::string(2 * static_cast<std::size_t>(depth_[i]) + 2, ' ') << node.name;
        if (!node.device.empty())
            out << " [" << node.device << ", "
                << format_bytes(double(
                       devices_[static_cast<std::size_t>(device_index(node.name))].memory_bytes))
                << "]";
        if (node.cores > 0) out << " (" << node.cores << " cores)";
        if (!node.parent.empty())
            out << "  <- " << (node.count > 1 ? std::to_string(node.count) + " x " : "")
                << node.link;
        out << "\n";
    }
    for (const auto& p : spec_.peers)
        out << "  peer " << p.a << " <-> " << p.b << ": " << p.count << " x " << p.link << "\n";
    for (const auto& f : spec_.fabrics)
        out << "  fabric " << f.name << ": " << join(f.devices, ", ") << ", each " << f.count
            << " x " << f.link << "\n";
    if (machine_count_ > 1) out << "  " << machine_count_ << " machines\n";
    return out.str();
}

}  // namespace tandem
