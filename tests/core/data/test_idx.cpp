#include <gtest/gtest.h>
#include <zlib.h>

#include "base/error.h"
#include "data/idx.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

// An idx file: two zero bytes, type, rank, big-endian dims, then `data`.
std::string idx_file_bytes(unsigned char type, const std::vector<std::uint32_t>& dims,
                           const std::string& data) {
    std::string out = {'\0', '\0', char(type), char(dims.size())};
    for (auto d : dims)
        for (int shift = 24; shift >= 0; shift -= 8) out += char((d >> shift) & 0xFF);
    return out + data;
}

void write_gz(const std::string& path, const std::string& bytes) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
    ASSERT_EQ(gzclose(f), Z_OK);
}

std::string pixels(std::size_t n) {
    std::string out(n, '\0');
    for (std::size_t i = 0; i < n; ++i) out[i] = char((i * 37 + 11) & 0xFF);
    return out;
}

void expect_idx_error(const std::string& path, const std::string& what) {
    try {
        read_idx(path);
        FAIL() << "read a defective idx file; expected: " << what;
    } catch (const DataError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(path), std::string::npos) << message;
        EXPECT_NE(message.find(what), std::string::npos) << message;
    }
}

TEST(Idx, ReadsPlainAndGzippedFiles) {
    TempDir dir;
    const std::string data = pixels(3 * 4 * 5);
    const std::string bytes = idx_file_bytes(0x08, {3, 4, 5}, data);
    write_bytes(dir.file("plain-idx3-ubyte"), bytes);
    write_gz(dir.file("packed-idx3-ubyte.gz"), bytes);
    write_gz(dir.file("packed-without-suffix"), bytes);  // found by gzip's magic
    for (const char* name : {"plain-idx3-ubyte", "packed-idx3-ubyte.gz", "packed-without-suffix"}) {
        const IdxArray a = read_idx(dir.file(name));
        EXPECT_EQ(a.dims, (std::vector<std::int64_t>{3, 4, 5})) << name;
        EXPECT_EQ(std::string(a.bytes.begin(), a.bytes.end()), data) << name;
    }
}

TEST(Idx, DefectiveFilesAreDataErrorsNamingTheFile) {
    TempDir dir;
    const std::string good = idx_file_bytes(0x08, {10, 3}, pixels(30));
    auto write = [&](const std::string& name, const std::string& bytes) {
        write_bytes(dir.file(name), bytes);
        return dir.file(name);
    };
    expect_idx_error(dir.file("missing.gz"), "No such file");
    expect_idx_error(write("magic", "\x12\x34\x08\x01rest"), "bad magic 0x12340801");
    expect_idx_error(write("float", idx_file_bytes(0x0D, {2}, std::string(8, '\0'))),
                     "float elements (type 0x0d)");
    expect_idx_error(write("short", "\0\0"), "too short");
    expect_idx_error(write("dims", good.substr(0, 6)), "promises 2 dimensions, found only 0");
    expect_idx_error(write("data", good.substr(0, good.size() - 7)),
                     "expected 30 bytes of data, found 23");
    expect_idx_error(write("extra", good + "x"), "past the 30 bytes");
    write_gz(dir.file("cut.gz"), good.substr(0, good.size() - 5));
    expect_idx_error(dir.file("cut.gz"), "expected 30 bytes of data, found 25");

    // A gzip stream cut short (the compressed file truncated, not the data inside it).
    write_gz(dir.file("whole.gz"), idx_file_bytes(0x08, {4000}, pixels(4000)));
    const std::string packed = read_bytes(dir.file("whole.gz"));
    write_bytes(dir.file("stream_cut.gz"), packed.substr(0, packed.size() / 2));
    expect_idx_error(dir.file("stream_cut.gz"), "expected 4000 bytes of data, found");
}

}  // namespace
}  // namespace tandem::test
