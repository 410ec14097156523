#include <gtest/gtest.h>

#include "base/json.h"

namespace tandem::test {
namespace {

TEST(Json, ParsesValues) {
    const JsonValue v = parse_json(R"( {"a": [1, -2, 9223372036854775807, -9223372036854775808],)"
                                   R"( "s": "x\"\\\/\n\u00e9\ud83d\ude00",)"
                                   R"( "f": 0.25, "e": -1.5e3, "t": true, "n": null, "o": {}} )");
    ASSERT_EQ(v.kind, JsonValue::Kind::object);
    ASSERT_EQ(v.object.size(), 7u);
    const auto& a = v.object[0].value.array;
    ASSERT_EQ(a.size(), 4u);
    EXPECT_EQ(a[0].integer, 1);
    EXPECT_EQ(a[1].integer, -2);
    EXPECT_EQ(a[2].integer, INT64_MAX);
    EXPECT_EQ(a[3].integer, INT64_MIN);
    EXPECT_EQ(v.object[1].value.string, "x\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
    EXPECT_EQ(v.object[2].value.kind, JsonValue::Kind::number);
    EXPECT_EQ(v.object[2].value.number, 0.25);
    EXPECT_EQ(v.object[3].value.number, -1500.0);
    EXPECT_TRUE(v.object[4].value.boolean);
    EXPECT_EQ(v.object[5].value.kind, JsonValue::Kind::null);
    EXPECT_TRUE(v.object[6].value.object.empty());
}

TEST(Json, RejectsMalformedTextWithTheOffset) {
    struct Case {
        const char* text;
        std::size_t offset;
    };
    const Case cases[] = {
        {R"({"a": 1,})", 8}, {R"({"a" 1})", 5},         {R"([1, 2)", 5},
        {R"({"a": 01})", 6}, {R"({"a": 1} x)", 9},      {R"({"a": 1, "a": 2})", 9},
        {R"(["\q"])", 2},    {"[\"a\nb\"]", 3},         {R"([99999999999999999999])", 1},
        {R"([tru])", 1},     {R"({"a": "\ud800"})", 7}, {"", 0},
    };
    for (const auto& c : cases) {
        try {
            parse_json(c.text);
            ADD_FAILURE() << "accepted: " << c.text;
        } catch (const JsonError& e) {
            EXPECT_EQ(e.offset(), c.offset) << c.text << ": " << e.what();
        }
    }
}

TEST(Json, QuotesStrings) {
    std::string out;
    append_json_string(out, "a\"b\\c\n\x01");
    EXPECT_EQ(out, R"("a\"b\\c\n\u0001")");
    EXPECT_EQ(parse_json(out).string, "a\"b\\c\n\x01");
}

}  // namespace
}  // namespace tandem::test
