#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <functional>

#include "base/atomic_file.h"
#include "base/error.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

std::span<const char> span_of(const std::string& s) {
    return {s.data(), s.size()};
}

void expect_data_error_naming(const std::function<void()>& f, const std::string& path) {
    try {
        f();
        FAIL() << "no DataError for " << path;
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
}

TEST(AtomicFile, WritesAndReplaces) {
    TempDir dir;
    const std::string path = dir.file("a.bin");
    write_file_atomic(path, span_of("first"));
    EXPECT_EQ(read_bytes(path), "first");
    const std::string second(100000, 'x');
    write_file_atomic(path, span_of(second));
    const auto back = read_file(path);
    EXPECT_EQ(std::string(back.begin(), back.end()), second);
    write_file_atomic(path, {});
    EXPECT_TRUE(read_file(path).empty());
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"a.bin"});  // no temporaries left
}

TEST(AtomicFile, MissingDirectoryIsADataError) {
    TempDir dir;
    const std::string path = dir.file("no/such/dir/a.bin");
    expect_data_error_naming([&] { write_file_atomic(path, span_of("x")); }, path);
    EXPECT_TRUE(dir.entries().empty());
}

TEST(AtomicFile, TargetThatIsADirectoryStaysIntact) {
    TempDir dir;
    const std::string path = dir.file("target");
    std::filesystem::create_directory(path);
    write_bytes(dir.file("target/inside"), "keep");
    expect_data_error_naming([&] { write_file_atomic(path, span_of("x")); }, path);
    EXPECT_TRUE(std::filesystem::is_directory(path));
    EXPECT_EQ(read_bytes(dir.file("target/inside")), "keep");
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"target"});  // temporary removed
}

// A write that fails half-way (the file-size limit stops it with EFBIG) must leave the
// previous file as it was and no temporary behind.
TEST(AtomicFile, FailedWriteKeepsThePreviousFile) {
    TempDir dir;
    const std::string path = dir.file("checkpoint");
    write_file_atomic(path, span_of("previous contents"));

    rlimit old_limit{};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old_limit;
    small.rlim_cur = 4096;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    const std::string big(64 * 1024, 'n');
    bool threw = false;
    std::string message;
    try {
        write_file_atomic(path, span_of(big));
    } catch (const DataError& e) {
        threw = true;
        message = e.what();
    }
    setrlimit(RLIMIT_FSIZE, &old_limit);
    std::signal(SIGXFSZ, old_handler);

    EXPECT_TRUE(threw);
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_EQ(read_bytes(path), "previous contents");
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"checkpoint"});
}

TEST(AtomicFile, ReadFileErrorsNameThePath) {
    TempDir dir;
    const std::string missing = dir.file("missing.bin");
    expect_data_error_naming([&] { read_file(missing); }, missing);
    const std::string directory = dir.path().string();
    expect_data_error_naming([&] { read_file(directory); }, directory);
}

}  // namespace
}  // namespace tandem::test
