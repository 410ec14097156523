#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "base/error.h"
#include "base/json.h"
#include "io/metrics_log.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
    std::istringstream in(read_bytes(path));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

TEST(MetricsLog, LinesParseBack) {
    TempDir dir;
    const std::string path = dir.file("runs/a/metrics.jsonl");  // parents created
    {
        MetricsLog log(path);
        log.write({{"epoch", std::int64_t(3)}, {"loss", 0.1}, {"phase", std::string("tr\"ain\n")}});
        log.write({{"nan", std::nan("")},
                   {"inf", std::numeric_limits<double>::infinity()},
                   {"big", std::int64_t(1) << 40},
                   {"tiny", 1e-300}});
        // Flushed per line: readable before the log closes.
        EXPECT_EQ(lines_of(path).size(), 2u);
    }
    const auto lines = lines_of(path);
    ASSERT_EQ(lines.size(), 2u);
    const JsonValue a = parse_json(lines[0]);
    ASSERT_EQ(a.object.size(), 3u);
    EXPECT_EQ(a.object[0].key, "epoch");
    EXPECT_EQ(a.object[0].value.kind, JsonValue::Kind::integer);
    EXPECT_EQ(a.object[0].value.integer, 3);
    EXPECT_EQ(a.object[1].value.kind, JsonValue::Kind::number);
    EXPECT_EQ(a.object[1].value.number, 0.1);  // exact round trip
    EXPECT_EQ(a.object[2].value.string, "tr\"ain\n");
    const JsonValue b = parse_json(lines[1]);
    EXPECT_EQ(b.object[0].value.kind, JsonValue::Kind::null);
    EXPECT_EQ(b.object[1].value.kind, JsonValue::Kind::null);
    EXPECT_EQ(b.object[2].value.integer, std::int64_t(1) << 40);
    EXPECT_EQ(b.object[3].value.number, 1e-300);
}

TEST(MetricsLog, AppendsOrTruncates) {
    TempDir dir;
    const std::string path = dir.file("m.jsonl");
    MetricsLog(path).write({{"step", std::int64_t(1)}});
    MetricsLog(path).write({{"step", std::int64_t(2)}});
    EXPECT_EQ(lines_of(path), (std::vector<std::string>{R"({"step": 1})", R"({"step": 2})"}));
    MetricsLog(path, false).write({{"step", std::int64_t(3)}});
    EXPECT_EQ(lines_of(path), std::vector<std::string>{R"({"step": 3})"});
}

TEST(MetricsLog, ErrorsNameThePath) {
    TempDir dir;
    const std::string file = dir.file("plain");
    write_bytes(file, "x");
    const std::string path = file + "/metrics.jsonl";  // parent is a file
    try {
        MetricsLog log(path);
        FAIL() << "opened " << path;
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    MetricsLog log(dir.file("ok.jsonl"));
    EXPECT_THROW(log.write({{"a", 1.0}, {"a", 2.0}}), ConfigError);
}

}  // namespace
}  // namespace tandem::test
