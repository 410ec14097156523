// libFuzzer: arbitrary bytes as a safetensors file (checkpoints). Reading one may refuse it with
// a DataError that names the file; it may not crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.h"
#include "io/safetensors_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view file(reinterpret_cast<const char*>(data), size);
    try {
        const auto layout = tandem::read_safetensors_layout(file, "fuzz.safetensors");
        // What the loader then relies on: every tensor's bytes lie inside the file.
        for (const auto& e : layout.entries)
            if (e.end > size - layout.data_offset || e.begin > e.end) __builtin_trap();
    } catch (const tandem::DataError&) {
    }
    return 0;
}
