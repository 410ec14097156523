#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/error.h"

namespace tandem {
namespace {

std::string reason(int err) { return std::strerror(err); }

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

}  // namespace

void write_file_atomic(const std::string& path, std::span<const char> bytes) {
    TANDEM_CHECK_AS(DataError, !path.empty()) << "cannot write a file with an empty path";
    std::string temp_path;
    Fd fd(open_temporary(path, temp_path));
    try {
        write_all(fd.get(), bytes, path);
        TANDEM_CHECK_AS(DataError, ::fsync(fd.get()) == 0)
            << "cannot write " << path << ": fsync failed: " << reason(errno);
        TANDEM_CHECK_AS(DataError, ::close(fd.release()) == 0)
            << "cannot write " << path << ": close failed: " << reason(errno);
        TANDEM_CHECK_AS(DataError, ::rename(temp_path.c_str(), path.c_str()) == 0)
            << "cannot write " << path
            << ": cannot rename the temporary over it: " << reason(errno);
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
