#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <set>

#include "base/atomic_file.h"
#include "base/json.h"
#include "device/device.h"
#include "io/safetensors_layout.h"

namespace tandem {
namespace {

// The format is little-endian; so is every machine Tandem targets, which lets tensors be
// copied as they lie in memory.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

constexpr std::size_t kHeaderAlignment = 8;

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
    std::vector<const std::pair<std::string, Tensor>*> sorted;
    std::set<std::string> names;
    for (const auto& entry : tensors) {
        const auto& [name, tensor] = entry;
        TANDEM_CHECK_AS(ConfigError, !name.empty() && name != kSafetensorsMetadataKey)
            << "cannot save " << path << ": '" << name << "' is not a valid tensor name";
        TANDEM_CHECK_AS(ConfigError, names.insert(name).second)
            << "cannot save " << path << ": two tensors are named '" << name << "'";
        TANDEM_CHECK_AS(ConfigError, tensor.defined())
            << "cannot save " << path << ": tensor '" << name << "' is undefined";
        sorted.push_back(&entry);
    }
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });

    std::string header = "{";
    if (!metadata.empty()) {
        append_json_string(header, kSafetensorsMetadataKey);
        header += ":{";
        bool first = true;
        for (const auto& [key, value] : metadata) {
            if (!first) header += ',';
            first = false;
            append_json_string(header, key);
            header += ':';
            append_json_string(header, value);
        }
        header += '}';
    }
    std::uint64_t offset = 0;
    for (const auto* entry : sorted) {
        const Tensor& t = entry->second;
        if (header.size() > 1) header += ',';
        append_json_string(header, entry->first);
        header += ":{\"dtype\":\"" + std::string(dtype_name(t.dtype())) + "\",\"shape\":[";
        for (std::size_t i = 0; i < t.shape().dims().size(); ++i) {
            if (i) header += ',';
            header += std::to_string(t.shape().dims()[i]);
        }
        header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
                  std::to_string(offset + t.nbytes()) + "]}";
        offset += t.nbytes();
    }
    header += '}';
    header.append((kHeaderAlignment - header.size() % kHeaderAlignment) % kHeaderAlignment, ' ');

    std::vector<char> file(8 + header.size() + offset);
    const std::uint64_t header_size = header.size();
    std::memcpy(file.data(), &header_size, 8);
    std::memcpy(file.data() + 8, header.data(), header.size());
    char* data = file.data() + 8 + header.size();
    for (const auto* entry : sorted) {
        // Logical order on the host: a channels_last or device tensor is converted first.
        const Tensor t = entry->second.to_layout(Layout::contiguous);
        if (t.nbytes() > 0) t.device().copy_to_host(data, t.raw(), t.nbytes());
        data += t.nbytes();
    }
    write_file_atomic(path, file);
}

SafetensorsContents load_safetensors(const std::string& path, Device& device) {
    const std::vector<char> file = read_file(path);
    const SafetensorsLayout layout = read_safetensors_layout({file.data(), file.size()}, path);
    SafetensorsContents contents;
    contents.metadata = layout.metadata;
    const char* data = file.data() + layout.data_offset;
    for (const auto& e : layout.entries) {
        Tensor t = Tensor::empty(e.shape, device, e.dtype);
        if (t.nbytes() > 0) device.copy_from_host(t.raw(), data + e.begin, t.nbytes());
        contents.tensors.emplace_back(e.name, std::move(t));
    }
    return contents;
}

}  // namespace tandem
