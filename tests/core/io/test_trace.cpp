#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/json.h"
#include "io/trace.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

const JsonValue* field(const JsonValue& object, const std::string& key) {
    for (const auto& [k, v] : object.object)
        if (k == key) return &v;
    return nullptr;
}

TEST(Trace, WritesChromeTraceJson) {
    Trace trace;
    const int threads = 4, spans = 50;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            const std::string track = "cpu:" + std::to_string(t);
            for (int m = 0; m < spans; ++m) {
                TraceSpan span(&trace, track, "forward \"mb\" " + std::to_string(m), "forward");
                span.arg("micro_batch", m)
                    .arg("stage", t)
                    .arg("bytes", std::size_t(1) << 33)
                    .arg("lr", 0.5);
            }
        });
    for (auto& w : workers) w.join();
    trace.add("cpu:0", "sgd", "optimizer", 10.0, 2.5, {{"note", "x"}});
    EXPECT_EQ(trace.size(), static_cast<std::size_t>(threads * spans + 1));

    TempDir dir;
    const std::string path = dir.file("trace.json");
    trace.write(path);
    const JsonValue root = parse_json(read_bytes(path));
    ASSERT_EQ(root.kind, JsonValue::Kind::object);
    ASSERT_TRUE(field(root, "displayTimeUnit"));
    EXPECT_EQ(field(root, "displayTimeUnit")->string, "ms");
    const JsonValue* events = field(root, "traceEvents");
    ASSERT_TRUE(events);
    ASSERT_EQ(events->kind, JsonValue::Kind::array);

    std::map<std::int64_t, std::string> thread_names;
    std::map<std::string, int> per_track;
    std::set<std::int64_t> pids;
    int complete = 0;
    for (const JsonValue& e : events->array) {
        const std::string ph = field(e, "ph")->string;
        pids.insert(field(e, "pid")->integer);
        if (ph == "M" && field(e, "name")->string == "thread_name")
            thread_names[field(e, "tid")->integer] = field(*field(e, "args"), "name")->string;
    }
    for (const JsonValue& e : events->array) {
        if (field(e, "ph")->string != "X") continue;
        ++complete;
        ASSERT_TRUE(field(e, "ts") && field(e, "dur") && field(e, "cat") && field(e, "name"));
        EXPECT_GE(field(e, "ts")->number, 0.0);
        EXPECT_GE(field(e, "dur")->number, 0.0);
        const std::string track = thread_names.at(field(e, "tid")->integer);
        ++per_track[track];
        if (field(e, "cat")->string == "forward") {
            const JsonValue* args = field(e, "args");
            ASSERT_TRUE(args);
            EXPECT_EQ(field(*args, "micro_batch")->kind, JsonValue::Kind::integer);
            EXPECT_EQ(field(*args, "stage")->integer, std::stoi(track.substr(4)));
            EXPECT_EQ(field(*args, "bytes")->integer, std::int64_t(1) << 33);
            EXPECT_EQ(field(*args, "lr")->number, 0.5);
            EXPECT_EQ(field(e, "name")->string.rfind("forward \"mb\" ", 0), 0u);
        } else {
            EXPECT_EQ(field(e, "cat")->string, "optimizer");
            EXPECT_EQ(field(e, "ts")->number, 10.0);
            EXPECT_EQ(field(e, "dur")->number, 2.5);
            EXPECT_EQ(track, "cpu:0");
        }
    }
    EXPECT_EQ(complete, threads * spans + 1);
    EXPECT_EQ(pids.size(), 1u);
    ASSERT_EQ(thread_names.size(), static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t)
        EXPECT_EQ(per_track["cpu:" + std::to_string(t)], spans + (t == 0 ? 1 : 0));
}

TEST(Trace, SpansMeasureTime) {
    Trace trace;
    const double before = trace.now_us();
    {
        TraceSpan span(&trace, "w", "outer", "backward");
        volatile double sink = 0;
        for (int i = 0; i < 100000; ++i) sink = sink + i;
        span.end();  // recorded now, not again at scope end
    }
    const double after = trace.now_us();
    const auto events = trace.events();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_GE(events[0].start_us, before);
    EXPECT_LE(events[0].start_us + events[0].duration_us, after);
    EXPECT_GT(events[0].duration_us, 0.0);
}

TEST(Trace, NullTraceDoesNothing) {
    TraceSpan span(nullptr, "cpu:0", "forward", "forward");
    span.arg("micro_batch", 1).arg("name", "x");
    span.end();
    Trace trace;
    { TraceSpan other(nullptr, "cpu:0", "f", "forward"); }
    EXPECT_EQ(trace.size(), 0u);
    EXPECT_TRUE(trace.tracks().empty());
}

TEST(Trace, BusyFraction) {
    Trace trace;
    trace.add("a", "f0", "forward", 0, 10);
    trace.add("a", "b0", "backward", 5, 10);  // overlaps f0: [0, 15) counts once
    trace.add("a", "ar", "allreduce", 20, 10);
    trace.add("b", "f0", "forward", 0, 40);
    EXPECT_DOUBLE_EQ(trace.busy_us("a", 0, 40), 25.0);
    EXPECT_DOUBLE_EQ(trace.busy_fraction("a", 0, 40), 0.625);
    EXPECT_DOUBLE_EQ(trace.busy_us("a", 8, 25), 12.0);  // [8, 15) and [20, 25)
    EXPECT_DOUBLE_EQ(trace.busy_us("a", 0, 40, {"forward", "backward"}), 15.0);
    EXPECT_DOUBLE_EQ(trace.busy_fraction("b", 10, 20), 1.0);
    EXPECT_DOUBLE_EQ(trace.busy_fraction("c", 0, 40), 0.0);
    EXPECT_DOUBLE_EQ(trace.busy_fraction("a", 5, 5), 0.0);
    EXPECT_EQ(trace.tracks(), (std::vector<std::string>{"a", "b"}));
    trace.clear();
    EXPECT_EQ(trace.size(), 0u);
}

}  // namespace
}  // namespace tandem::test
