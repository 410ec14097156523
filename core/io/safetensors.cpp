#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <set>

#include "device/device.h"
#include "io/atomic_file.h"
#include "io/json.h"

namespace tandem {
namespace {

// The format is little-endian; so is every machine Tandem targets, which lets tensors be
// copied as they lie in memory.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

constexpr const char* kMetadataKey = "__metadata__";
constexpr std::size_t kHeaderAlignment = 8;

struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    std::uint64_t begin, end;
};

bool parse_dtype(const std::string& text, DType& dtype) {
    for (DType d : {DType::f32, DType::i32, DType::u8})
        if (text == dtype_name(d)) {
            dtype = d;
            return true;
        }
    return false;
}

std::string shape_text(const Shape& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.dims().size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(shape.dims()[i]);
    }
    return out + "]";
}

// Reads one tensor entry of the header, checking it on its own (not yet against the data).
Entry parse_entry(const std::string& path, const std::string& name, const JsonValue& v) {
    const std::string where = path + ": tensor '" + name + "'";
    TANDEM_CHECK_AS(DataError, v.kind == JsonValue::Kind::object)
        << where << " is described by a JSON " << v.kind_name() << ", not an object";
    const JsonValue *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
    for (const auto& [key, value] : v.object) {
        if (key == "dtype")
            dtype = &value;
        else if (key == "shape")
            shape = &value;
        else if (key == "data_offsets")
            offsets = &value;
        else
            TANDEM_THROW(DataError) << where << " has an unknown field '" << key << "'";
    }
    const char* missing = !dtype ? "dtype" : !shape ? "shape" : !offsets ? "data_offsets" : nullptr;
    TANDEM_CHECK_AS(DataError, missing == nullptr) << where << " lacks '" << missing << "'";

    Entry e{name, DType::f32, {}, 0, 0};
    TANDEM_CHECK_AS(DataError, dtype->kind == JsonValue::Kind::string)
        << where << ": dtype is a JSON " << dtype->kind_name() << ", not a string";
    TANDEM_CHECK_AS(DataError, parse_dtype(dtype->string, e.dtype))
        << where << " has dtype '" << dtype->string
        << "', which Tandem does not read (it reads F32, I32 and U8)";

    TANDEM_CHECK_AS(DataError, shape->kind == JsonValue::Kind::array)
        << where << ": shape is a JSON " << shape->kind_name() << ", not an array";
    std::vector<std::int64_t> dims;
    // Overflow-checked element count: a hostile shape must not wrap around to a small size.
    std::uint64_t numel = 1;
    for (const auto& d : shape->array) {
        TANDEM_CHECK_AS(DataError, d.kind == JsonValue::Kind::integer && d.integer >= 0)
            << where << ": shape entries must be integers >= 0";
        const auto n = std::uint64_t(d.integer);
        TANDEM_CHECK_AS(DataError, n == 0 || numel <= (std::uint64_t(1) << 60) / n)
            << where << ": shape is too large";
        numel *= n;
        dims.push_back(d.integer);
    }
    e.shape = Shape(std::move(dims));

    TANDEM_CHECK_AS(DataError, offsets->kind == JsonValue::Kind::array &&
                                   offsets->array.size() == 2 &&
                                   offsets->array[0].kind == JsonValue::Kind::integer &&
                                   offsets->array[1].kind == JsonValue::Kind::integer)
        << where << ": data_offsets must be an array of two integers";
    const std::int64_t begin = offsets->array[0].integer, end = offsets->array[1].integer;
    TANDEM_CHECK_AS(DataError, begin >= 0 && end >= begin)
        << where << " has data_offsets [" << begin << ", " << end << "] out of order";
    e.begin = std::uint64_t(begin);
    e.end = std::uint64_t(end);
    const std::uint64_t expected = numel * dtype_size(e.dtype);
    TANDEM_CHECK_AS(DataError, e.end - e.begin == expected)
        << where << " has data_offsets [" << begin << ", " << end << "] (" << e.end - e.begin
        << " bytes), but shape " << shape_text(e.shape) << " of " << dtype_name(e.dtype)
        << " needs " << expected << " bytes";
    return e;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const JsonValue& v) {
    TANDEM_CHECK_AS(DataError, v.kind == JsonValue::Kind::object)
        << path << ": " << kMetadataKey << " is a JSON " << v.kind_name() << ", not an object";
    std::map<std::string, std::string> out;
    for (const auto& [key, value] : v.object) {
        TANDEM_CHECK_AS(DataError, value.kind == JsonValue::Kind::string)
            << path << ": " << kMetadataKey << " entry '" << key << "' is a JSON "
            << value.kind_name() << ", not a string";
        out.emplace(key, value.string);
    }
    return out;
}

// The data must be covered exactly: entries back to back from 0 and nothing after the last,
// as the reference implementation requires. Anything else means a corrupt or foreign file.
void check_coverage(const std::string& path, std::vector<const Entry*> order,
                    std::uint64_t data_bytes) {
    std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    std::uint64_t at = 0;
    const Entry* previous = nullptr;
    for (const Entry* e : order) {
        TANDEM_CHECK_AS(DataError, e->begin == at)
            << path << ": tensor '" << e->name << "' has data_offsets [" << e->begin << ", "
            << e->end << "], which " << (e->begin < at ? "overlap" : "leave a gap after")
            << (previous ? " tensor '" + previous->name + "'" : std::string(" the data start"))
            << " (ending at " << at << ")";
        at = e->end;
        previous = e;
    }
    TANDEM_CHECK_AS(DataError, at <= data_bytes) << path << " is truncated: header promises " << at
                                                 << " data bytes, file has " << data_bytes;
    TANDEM_CHECK_AS(DataError, at == data_bytes)
        << path << " has " << data_bytes << " data bytes, but its header accounts for only " << at;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
    std::vector<const std::pair<std::string, Tensor>*> sorted;
    std::set<std::string> names;
    for (const auto& entry : tensors) {
        const auto& [name, tensor] = entry;
        TANDEM_CHECK_AS(ConfigError, !name.empty() && name != kMetadataKey)
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
        append_json_string(header, kMetadataKey);
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
    TANDEM_CHECK_AS(DataError, file.size() >= 8)
        << path << " is too short for a safetensors file: " << file.size()
        << " bytes, the header length alone takes 8";
    std::uint64_t header_size = 0;
    std::memcpy(&header_size, file.data(), 8);
    TANDEM_CHECK_AS(DataError, header_size <= file.size() - 8)
        << path << ": header length " << header_size << " runs past the end of the file ("
        << file.size() << " bytes); the file is truncated or not safetensors";
    const std::string_view header_text(file.data() + 8, header_size);

    JsonValue header;
    try {
        header = parse_json(header_text);
    } catch (const JsonError& e) {
        TANDEM_THROW(DataError) << path << ": malformed JSON header at byte " << e.offset()
                                << " of the header (file offset " << e.offset() + 8
                                << "): " << e.what();
    }
    TANDEM_CHECK_AS(DataError, header.kind == JsonValue::Kind::object)
        << path << ": the header is a JSON " << header.kind_name() << ", not an object";

    SafetensorsContents contents;
    std::vector<Entry> entries;
    for (const auto& [name, value] : header.object) {
        if (name == kMetadataKey)
            contents.metadata = parse_metadata(path, value);
        else
            entries.push_back(parse_entry(path, name, value));
    }
    std::vector<const Entry*> order;
    for (const auto& e : entries) order.push_back(&e);
    const std::uint64_t data_bytes = file.size() - 8 - header_size;
    check_coverage(path, order, data_bytes);

    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.name < b.name; });
    const char* data = file.data() + 8 + header_size;
    for (const auto& e : entries) {
        Tensor t = Tensor::empty(e.shape, device, e.dtype);
        if (t.nbytes() > 0) device.copy_from_host(t.raw(), data + e.begin, t.nbytes());
        contents.tensors.emplace_back(e.name, std::move(t));
    }
    return contents;
}

}  // namespace tandem
