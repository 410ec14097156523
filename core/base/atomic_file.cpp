#include "base/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/error.h"

namespace tandem {
namespace {

std::string reason(int err) {
    return std::strerror(err);
}

// The directory part of `path` ("." for a bare name), for the temporary and the fsync.
std::string directory_of(const std::string& path) {
    const auto slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

// A file descriptor closed when it goes out of scope (errors on that close are moot: the
// paths that matter close explicitly and check).
class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }

private:
    int fd_;
};

void write_all(int fd, std::span<const char> bytes, const std::string& path) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        TANDEM_CHECK_AS(DataError, n > 0)
            << "cannot write " << path << ": " << (n < 0 ? reason(errno) : "no progress")
            << " (after " << done << " of " << bytes.size() << " bytes)";
        done += static_cast<std::size_t>(n);
    }
}

// Opens a fresh temporary next to `path`. O_EXCL with a name made of the pid and a counter
// never clashes with another writer; mode 0666 lets the umask decide, as for any new file.
int open_temporary(const std::string& path, std::string& temp_path) {
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0;; ++attempt) {
        temp_path = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter.fetch_add(1));
        const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) return fd;
        TANDEM_CHECK_AS(DataError, errno == EEXIST && attempt < 100)
            << "cannot write " << path << ": cannot create a temporary file " << temp_path << ": "
            << reason(errno);
    }
}

// A write killed outright (kill -9, a power cut) leaves its temporary with nobody to remove it:
// before writing `path`, remove the "<name>.tmp.<pid>.<n>" files beside it whose process is
// gone. (The writer of another machine sharing the folder looks gone here too; its rename then
// fails and says so, and its previous file is intact.)
void remove_stale_temporaries(const std::string& path) {
    const std::string dir = directory_of(path);
    const auto slash = path.find_last_of('/');
    const std::string prefix =
        (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
    DIR* listing = ::opendir(dir.c_str());
    if (listing == nullptr) return;  // the write itself will say what is wrong with the folder
    while (const dirent* entry = ::readdir(listing)) {
        const std::string name = entry->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        char* end = nullptr;
        const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
        if (pid <= 0 || end == nullptr || *end != '.') continue;
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
            ::unlink((dir + "/" + name).c_str());
    }
    ::closedir(listing);
}

// The kill -9 test's failpoints (tests/lua/test_checkpoint_kill.lua): with
// TANDEM_KILL_DURING_WRITE="<point>:<n>", the n-th atomic write of the process kills it with
// SIGKILL at <point>: "opened" (temporary created), "half" (half the bytes written), "synced"
// (all written and synced) or "renamed" (renamed over the target, folder not yet synced).
class KillPoint {
public:
    KillPoint() : write_(++writes_) {
        const char* spec = std::getenv("TANDEM_KILL_DURING_WRITE");
        if (spec == nullptr) return;
        const std::string text = spec;
        const auto colon = text.find(':');
        if (colon != std::string::npos && std::atoi(text.c_str() + colon + 1) == write_)
            point_ = text.substr(0, colon);
    }
    void at(const char* point) const {
        if (!point_.empty() && point_ == point) ::kill(::getpid(), SIGKILL);
    }

private:
    static inline std::atomic<int> writes_{0};
    int write_;
    std::string point_;
};

}  // namespace

void write_file_atomic(const std::string& path, std::span<const char> bytes) {
    TANDEM_CHECK_AS(DataError, !path.empty()) << "cannot write a file with an empty path";
    remove_stale_temporaries(path);
    const KillPoint kill_point;
    std::string temp_path;
    Fd fd(open_temporary(path, temp_path));
    kill_point.at("opened");
    try {
        write_all(fd.get(), bytes.first(bytes.size() / 2), path);
        kill_point.at("half");
        write_all(fd.get(), bytes.subspan(bytes.size() / 2), path);
        TANDEM_CHECK_AS(DataError, ::fsync(fd.get()) == 0)
            << "cannot write " << path << ": fsync failed: " << reason(errno);
        TANDEM_CHECK_AS(DataError, ::close(fd.release()) == 0)
            << "cannot write " << path << ": close failed: " << reason(errno);
        kill_point.at("synced");
        TANDEM_CHECK_AS(DataError, ::rename(temp_path.c_str(), path.c_str()) == 0)
            << "cannot write " << path
            << ": cannot rename the temporary over it: " << reason(errno);
        kill_point.at("renamed");
    } catch (...) {
        ::unlink(temp_path.c_str());
        throw;
    }
    // The rename is durable only once the directory entry is on disk.
    const std::string dir = directory_of(path);
    Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    TANDEM_CHECK_AS(DataError, dir_fd.get() >= 0)
        << "wrote " << path << " but cannot open its directory to sync it: " << reason(errno);
    // Some file systems cannot sync a directory (EINVAL); there is nothing more to do there.
    TANDEM_CHECK_AS(DataError, ::fsync(dir_fd.get()) == 0 || errno == EINVAL)
        << "wrote " << path << " but cannot sync its directory " << dir << ": " << reason(errno);
}

std::vector<char> read_file(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    TANDEM_CHECK_AS(DataError, fd.get() >= 0) << "cannot open " << path << ": " << reason(errno);
    struct stat info {};
    TANDEM_CHECK_AS(DataError, ::fstat(fd.get(), &info) == 0)
        << "cannot read " << path << ": " << reason(errno);
    TANDEM_CHECK_AS(DataError, !S_ISDIR(info.st_mode))
        << "cannot read " << path << ": " << reason(EISDIR);
    // The size is a hint (a /proc file reports 0, a file may grow): read until end of file.
    std::vector<char> bytes(static_cast<std::size_t>(std::max<off_t>(info.st_size, 0)));
    std::size_t done = 0;
    char spill[1 << 16];
    for (;;) {
        // Past the expected size, read into a small buffer: a file that ends where fstat
        // said costs one empty read, not a doubled allocation.
        const bool full = done == bytes.size();
        char* dst = full ? spill : bytes.data() + done;
        const std::size_t room = full ? sizeof spill : bytes.size() - done;
        const ssize_t n = ::read(fd.get(), dst, room);
        if (n < 0 && errno == EINTR) continue;
        TANDEM_CHECK_AS(DataError, n >= 0) << "cannot read " << path << ": " << reason(errno);
        if (n == 0) break;
        if (full) bytes.insert(bytes.end(), spill, spill + n);
        done += static_cast<std::size_t>(n);
    }
    bytes.resize(done);
    return bytes;
}

}  // namespace tandem
