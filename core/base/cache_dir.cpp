#include "base/cache_dir.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <span>

#include "base/atomic_file.h"

namespace tandem {

std::filesystem::path cache_dir() {
    if (const char* dir = std::getenv("TANDEM_CACHE_DIR"); dir && *dir) return dir;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return std::filesystem::path(xdg) / "tandem";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::filesystem::path(home) / ".cache" / "tandem";
    return {};
}

std::filesystem::path cache_file(std::string_view kind, const std::string& key) {
    const std::filesystem::path dir = cache_dir();
    if (dir.empty()) return {};
    char hash[24];
    std::snprintf(hash, sizeof hash, "-%016zx.json", std::hash<std::string>{}(key));
    return dir / (std::string(kind) + hash);
}

bool write_cache_file(const std::filesystem::path& file, std::string_view text) {
    try {
        std::error_code ignored;
        std::filesystem::create_directories(file.parent_path(), ignored);
        write_file_atomic(file.string(), std::span<const char>(text.data(), text.size()));
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

std::string build_identity() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&build_identity), &info) == 0 || !info.dli_fname)
        return "unknown build";
    // The dynamic linker names the main program as it was started (perhaps a relative path).
    std::error_code error;
    std::filesystem::path file = std::filesystem::absolute(info.dli_fname, error);
    struct stat st {};
    if (error || stat(file.c_str(), &st) != 0) {
        file = std::filesystem::read_symlink("/proc/self/exe", error);
        if (error || stat(file.c_str(), &st) != 0) return info.dli_fname;
    }
    return file.string() + ", " + std::to_string(st.st_size) + " bytes, modified " +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace tandem
