// libFuzzer: arbitrary bytes as an idx file (MNIST's format), plain or gzip-compressed (the
// reader sniffs gzip's magic). Refusing it is a DataError naming the file; it may not crash,
// hang or allocate what the header claims before checking the data is there.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "base/error.h"
#include "data/idx.h"

namespace {

// One file per fuzzing process, rewritten for every input (tmpfs when there is one).
const std::string& scratch_path() {
    static const std::string path = [] {
        const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        return std::string(dir) + "/tandem_fuzz_idx_" + std::to_string(getpid());
    }();
    return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = scratch_path();
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    try {
        const tandem::IdxArray a = tandem::read_idx(path);
        std::size_t n = a.dims.empty() ? 0 : 1;
        for (auto d : a.dims) n *= static_cast<std::size_t>(d);
        if (n != a.bytes.size()) __builtin_trap();  // what the reader promises
    } catch (const tandem::DataError&) {
    }
    return 0;
}
