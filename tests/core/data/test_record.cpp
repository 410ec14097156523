#include <gtest/gtest.h>

#include "support/expect_error.h"

#include "base/error.h"
#include "data/record.h"

namespace tandem::test {
namespace {

std::span<const unsigned char> bytes_of(const std::string& s) {
    return {reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}

TEST(Record, RoundTrip) {
    const std::vector<unsigned char> pixels = {1, 2, 3, 4, 5, 6};
    const std::string r = encode_record({Encoding::raw, 7, 1, 2, 3}, pixels);
    ASSERT_EQ(r.size(), kRecordHeaderSize + 6);
    EXPECT_EQ(r.substr(0, 4), "TDRC");
    const RecordView v = decode_record(bytes_of(r), "k");
    EXPECT_EQ(v.header.label, 7);
    EXPECT_EQ(v.header.height, 1u);
    EXPECT_EQ(v.header.width, 2u);
    EXPECT_EQ(v.header.channels, 3u);
    EXPECT_EQ(v.header.encoding, Encoding::raw);
    EXPECT_EQ(std::vector<unsigned char>(v.payload.begin(), v.payload.end()), pixels);
}

TEST(Record, DamageIsNamed) {
    const std::vector<unsigned char> pixels(12, 9);
    const std::string r = encode_record({Encoding::raw, 1, 2, 2, 3}, pixels);
    expect_error<DataError>(
        [&] { decode_record(bytes_of(r.substr(0, r.size() - 5)), "00000003"); },
        "record '00000003' is truncated: header promises 12 bytes of payload, found 7");
    EXPECT_THROW(decode_record(bytes_of(r.substr(0, 10)), "k"), DataError);
    std::string bad = r;
    bad[0] = 'X';
    EXPECT_THROW(decode_record(bytes_of(bad), "k"), DataError);
    bad = r;
    bad[4] = 9;  // version
    EXPECT_THROW(decode_record(bytes_of(bad), "k"), DataError);
    bad = r;
    bad[6] = 7;  // encoding
    EXPECT_THROW(decode_record(bytes_of(bad), "k"), DataError);
    EXPECT_THROW(decode_record(bytes_of(r + "x"), "k"), DataError);
}

TEST(Record, EncodeChecks) {
    const std::vector<unsigned char> pixels(5);
    EXPECT_THROW(encode_record({Encoding::raw, 0, 2, 2, 1}, pixels), ConfigError);
    EXPECT_THROW(encode_record({Encoding::png, -1, 2, 2, 1}, pixels), ConfigError);
    EXPECT_THROW(encode_record({Encoding::png, 0, 2, 2, 2}, pixels), ConfigError);
    EXPECT_EQ(parse_encoding("jpg"), Encoding::jpeg);
    EXPECT_THROW(parse_encoding("gif"), ConfigError);
}

TEST(Record, InteractionRecordsHoldFloats) {
    const std::vector<float> values = {3, 0, 1.5f};  // 2 items then 1 feature
    const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
    const std::string r = encode_record({Encoding::interaction, 2, 2, 1, 1}, {bytes, 12});
    const RecordView v = decode_record(bytes_of(r), "k");
    EXPECT_EQ(v.header.encoding, Encoding::interaction);
    EXPECT_EQ(v.payload.size(), 12u);
    EXPECT_EQ(encoding_name(Encoding::interaction), "interaction");
    // 2 + 1 values are 12 bytes, not 3 (a raw image's count).
    EXPECT_THROW(encode_record({Encoding::interaction, 2, 2, 1, 1}, {bytes, 3}), ConfigError);
    EXPECT_THROW(decode_record(bytes_of(r.substr(0, r.size() - 4)), "k"), DataError);
}

}  // namespace
}  // namespace tandem::test
