// The reading half of safetensors (safetensors.h): a file's bytes into the layout of its
// tensors, checked strictly, without touching a device. load_safetensors copies the data by it;
// tests/fuzz/fuzz_safetensors.cpp feeds it arbitrary bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/shape.h"

namespace tandem {

// The header key of the string-to-string metadata map.
inline constexpr const char* kSafetensorsMetadataKey = "__metadata__";

struct SafetensorsEntry {
    std::string name;
    DType dtype;
    Shape shape;
    std::uint64_t begin, end;  // relative to the start of the data
};

struct SafetensorsLayout {
    std::vector<SafetensorsEntry> entries;  // sorted by name
    std::map<std::string, std::string> metadata;
    std::size_t data_offset = 0;  // where the data starts in the file
};

// Every defect (too short, a header length past the end, malformed JSON, an unknown dtype,
// offsets that overlap, leave gaps or do not match shape * dtype size, truncated or surplus
// data) is a DataError naming `path`.
SafetensorsLayout read_safetensors_layout(std::string_view file, const std::string& path);

}  // namespace tandem
