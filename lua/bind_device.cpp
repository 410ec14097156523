// tandem.Device: T.devices(kind, n, {memory =, threads =}) and the device methods.
//
// Lifetime. A device userdata holds a shared_ptr, and so does every tensor's storage on it
// (core/tensor/storage.h). Kernels do not: a layer's kernel cache keys its kernels by Device*
// and the kernels hold a CpuDevice&, and a layer moved back to the host keeps the kernels it
// built for a device. So the last shared_ptr does not destroy a device: it retires it (its
// cached blocks go back to the system) and destroy_retired_devices() ends it once the Lua state
// is closed and no layer can refer to it. The `tandem` command calls it after lua_close.
// Retiring is safe from any thread (the last reference may go on a worker).
#include <iterator>
#include <mutex>
#include <sstream>
#include <vector>

#include "backends/backends.h"
#include "base/format.h"
#include "binding.h"
#include "device/cpu/cpu_device.h"
#include "device/device_schema.h"
#include "device/gpu_share.h"
#if TANDEM_CUDA
#include "device/cuda/cuda_backend.h"
#endif
#include "objects.h"
#include "option_table.h"
#include "parallel/mpi_world.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

std::mutex& retired_mutex() {
    static std::mutex m;
    return m;
}

// Deliberately never destroyed by a static destructor: destroying a CpuDevice joins its
// thread and releases oneDNN state, which is not safe once the program's statics are going.
std::vector<Device*>& retired() {
    static auto* devices = new std::vector<Device*>();
    return *devices;
}

void retire(Device* device) {
    device->allocator().release_cache();
    std::lock_guard lock(retired_mutex());
    retired().push_back(device);
}

}  // namespace

void destroy_retired_devices() {
    std::vector<Device*> devices;
    {
        std::lock_guard lock(retired_mutex());
        devices.swap(retired());
    }
    for (auto* device : devices) delete device;
}

std::shared_ptr<Device>& check_device(lua_State* L, int index) {
    return check_box<std::shared_ptr<Device>>(L, index, kDeviceType, "device");
}

void push_device(lua_State* L, std::shared_ptr<Device> device) {
    push_box(L, kDeviceType, std::move(device));
}

namespace {

// Pushes a list of devices (owned with retire() as the deleter: see the top of this file).
void push_devices(lua_State* L, const std::vector<std::shared_ptr<Device>>& devices) {
    lua_createtable(L, static_cast<int>(devices.size()), 0);
    for (std::size_t i = 0; i < devices.size(); ++i) {
        push_device(L, devices[i]);
        lua_rawseti(L, -2, static_cast<int>(i) + 1);
    }
}

// The CUDA ordinals T.devices('cuda', wanted) takes (wanted < 0: 'all'). Throws "no CUDA
// device: ..." when the backend is not compiled in, no GPU or driver is found, or too few.
// With several MPI ranks on this node, every one of them calls it: they compare the GPUs
// they see and share them out (device/gpu_share.h).
std::vector<int> cuda_ordinals(int wanted) {
    const BackendStatus status = backend_status();
    if (mpi::local_size() == 1) {
        std::vector<int> ordinals;
        for (int i = 0, count = cuda_devices_to_make(status, wanted); i < count; ++i)
            ordinals.push_back(i);
        return ordinals;
    }
    // Gathered before any rank may throw for having no GPU, so none is left in the gather.
    std::vector<std::vector<std::string>> seen;
    for (const auto& text : mpi::node_all_gather(join(status.cuda_bus_ids, " "))) {
        std::istringstream words(text);
        seen.emplace_back(std::istream_iterator<std::string>(words),
                          std::istream_iterator<std::string>());
    }
    cuda_devices_to_make(status, -1);
    return node_gpu_share(seen, mpi::local_rank(), wanted);
}

// T.devices('cuda', n | 'all' [, {memory =, workspace =, benchmark =, tf32 =}]): one device per
// GPU.
int cuda_devices_new(lua_State* L) {
    int wanted = -1;
    if (lua_type(L, 2) == LUA_TSTRING) {
        if (std::string(lua_tostring(L, 2)) != "all")
            throw ArgError(2, "device count must be a number or 'all'");
    } else {
        wanted = static_cast<int>(check_int_in(L, 2, 1, 256, "device count"));
    }
    const OptionTable given(L, 3, cuda_device_option_schema());
    const std::vector<int> ordinals = cuda_ordinals(wanted);
#if TANDEM_CUDA
    CudaDeviceOptions options;
    options.memory = given.bytes("memory");
    options.workspace = given.bytes("workspace");
    options.benchmark = given.flag("benchmark");
    options.tf32 = given.flag("tf32");
    std::vector<std::shared_ptr<Device>> devices;
    for (int i : ordinals)
        devices.push_back(std::shared_ptr<Device>(make_cuda_device(i, options).release(), retire));
    push_devices(L, devices);
    return 1;
#else
    (void)ordinals, (void)given;
    return 0;  // unreachable: cuda_devices_to_make throws when CUDA is not compiled in
#endif
}

// T.devices(kind, n [, {memory = '512MB' | bytes, threads = k}]): a list of n new devices (the
// options are device/device_schema.h's, for each kind).
int devices_new(lua_State* L) {
    const std::string kind = check_string(L, 1);
    if (kind == "cuda") return cuda_devices_new(L);
    if (kind != "cpu") throw ArgError(1, "unknown device kind '" + kind + "' (known: cpu, cuda)");
    const auto count = static_cast<int>(check_int_in(L, 2, 1, 256, "device count"));
    const OptionTable given(L, 3, cpu_device_option_schema());
    CpuDeviceOptions options;
    options.memory = given.bytes("memory");
    options.threads = static_cast<int>(given.integer("threads"));

    std::vector<std::shared_ptr<Device>> devices;
    for (int i = 0; i < count; ++i)
        devices.push_back(std::shared_ptr<Device>(new CpuDevice(i, options), retire));
    push_devices(L, devices);
    return 1;
}

int device_name(lua_State* L) {
    lua_pushstring(L, check_device(L, 1)->name().c_str());
    return 1;
}

int device_kind(lua_State* L) {
    lua_pushstring(L, std::string(device_kind_name(check_device(L, 1)->kind())).c_str());
    return 1;
}

int device_index(lua_State* L) {
    lua_pushnumber(L, check_device(L, 1)->index());
    return 1;
}

int device_threads(lua_State* L) {
    lua_pushnumber(L, check_device(L, 1)->threads());
    return 1;
}

// d:memory(): {in_use, peak, cached, cap, allocations}, in bytes.
int device_memory(lua_State* L) {
    const MemoryStats s = check_device(L, 1)->allocator().stats();
    lua_createtable(L, 0, 5);
    set_number(L, "in_use", static_cast<double>(s.in_use));
    set_number(L, "peak", static_cast<double>(s.peak));
    set_number(L, "cached", static_cast<double>(s.cached));
    set_number(L, "cap", static_cast<double>(s.cap));
    set_number(L, "allocations", static_cast<double>(s.allocations));
    return 1;
}

int device_reset_peak(lua_State* L) {
    check_device(L, 1)->allocator().reset_peak();
    return 0;
}

int device_tostring(lua_State* L) {
    auto* box = static_cast<Box<std::shared_ptr<Device>>*>(luaL_testudata(L, 1, kDeviceType));
    if (box == nullptr) throw ArgError(1, "tandem.Device expected, got " + type_name(L, 1));
    if (!box->value) {
        lua_pushstring(L, "Device(freed)");
        return 1;
    }
    Device& d = **box->value;
    const std::string text = "Device(" + d.name() + ", " +
                             format_bytes(static_cast<double>(d.allocator().stats().cap)) +
                             " cap, " + std::to_string(d.threads()) + " threads)";
    lua_pushstring(L, text.c_str());
    return 1;
}

const luaL_Reg kDeviceMethods[] = {
    {"name", wrap<device_name>},
    {"kind", wrap<device_kind>},
    {"index", wrap<device_index>},
    {"threads", wrap<device_threads>},
    {"memory", wrap<device_memory>},
    {"reset_peak", wrap<device_reset_peak>},
    {nullptr, nullptr},
};

// core.parse_bytes('512MB'): the byte count of a size, as T.devices' memory option reads it (the
// one reader of sizes, for Lua's checks of recipe options); a ConfigError for text it cannot read.
int bytes_parse(lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(parse_bytes(check_string(L, 1))));
    return 1;
}

const luaL_Reg kDeviceFunctions[] = {
    {"devices", wrap<devices_new>},
    {"parse_bytes", wrap<bytes_parse>},
    {nullptr, nullptr},
};

}  // namespace

void register_device(lua_State* L, int module) {
    using Ptr = std::shared_ptr<Device>;
    define_type(
        L, module,
        {kDeviceType, wrap<release_box<Ptr, kDeviceType>>, kDeviceMethods, wrap<device_tostring>});
    add_functions(L, module, kDeviceFunctions);
}

}  // namespace tandem::lua
