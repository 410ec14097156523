// safetensors files: the checkpoint format (https://github.com/huggingface/safetensors).
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON header, then the data. The
// header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
// relative to the start of the data) and may hold "__metadata__", a string-to-string map. We
// write tensors sorted by name, each in logical (row-major) order whatever its layout or device,
// and pad the header with spaces to a multiple of 8 bytes as the reference implementation does.
// Tandem reads and writes F32, I32 and U8.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace tandem {

class Device;

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Writes atomically (write_file_atomic). ConfigError on duplicate, empty or reserved
// ("__metadata__") names and undefined tensors; DataError when the file cannot be written.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsContents {
    NamedTensors tensors;  // sorted by name, contiguous layout, on the device given to load
    std::map<std::string, std::string> metadata;
};

// Reads the whole file and checks it strictly: every defect (missing or short file, a header
// length past the end, malformed JSON, an unknown dtype, offsets that overlap, leave gaps or do
// not match shape * dtype size, truncated or surplus data) is a DataError naming the file.
SafetensorsContents load_safetensors(const std::string& path, Device& device);

}  // namespace tandem
