#include "io/safetensors_layout.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/json.h"

namespace tandem {
namespace {

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
SafetensorsEntry parse_entry(const std::string& path, const std::string& name, const JsonValue& v) {
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

    SafetensorsEntry e{name, DType::f32, {}, 0, 0};
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
        << path << ": " << kSafetensorsMetadataKey << " is a JSON " << v.kind_name()
        << ", not an object";
    std::map<std::string, std::string> out;
    for (const auto& [key, value] : v.object) {
        TANDEM_CHECK_AS(DataError, value.kind == JsonValue::Kind::string)
            << path << ": " << kSafetensorsMetadataKey << " entry '" << key << "' is a JSON "
            << value.kind_name() << ", not a string";
        out.emplace(key, value.string);
    }
    return out;
}

// The data must be covered exactly: entries back to back from 0 and nothing after the last,
// as the reference implementation requires. Anything else means a corrupt or foreign file.
void check_coverage(const std::string& path, std::vector<const SafetensorsEntry*> order,
                    std::uint64_t data_bytes) {
    std::sort(order.begin(), order.end(), [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    std::uint64_t at = 0;
    const SafetensorsEntry* previous = nullptr;
    for (const SafetensorsEntry* e : order) {
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

SafetensorsLayout read_safetensors_layout(std::string_view file, const std::string& path) {
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

    SafetensorsLayout layout;
    for (const auto& [name, value] : header.object) {
        if (name == kSafetensorsMetadataKey)
            layout.metadata = parse_metadata(path, value);
        else
            layout.entries.push_back(parse_entry(path, name, value));
    }
    std::vector<const SafetensorsEntry*> order;
    for (const auto& e : layout.entries) order.push_back(&e);
    layout.data_offset = 8 + header_size;
    check_coverage(path, order, file.size() - layout.data_offset);
    std::sort(layout.entries.begin(), layout.entries.end(),
              [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.name < b.name; });
    return layout;
}

}  // namespace tandem
