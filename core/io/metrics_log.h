// MetricsLog: training metrics as JSON lines, one object per call, flushed at once so a crash
// or a `tail -f` never sees half a line.
//
//   {"epoch": 3, "step": 1400, "loss": 0.4121, "lr": 0.05, "phase": "train"}
//
// Fields keep the order given. Doubles are written with enough digits to read back exactly;
// NaN and infinities (which JSON cannot hold) become null. One writer at a time: the class does
// no locking.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tandem {

using MetricValue = std::variant<double, std::int64_t, std::string>;

class MetricsLog {
public:
    // Opens `path` for appending (or truncates it with append = false), creating its parent
    // directories. DataError naming the path when it cannot. With `chart`, every write redraws
    // the log's curves into the PNG beside it (metrics_chart.h: logs/run.jsonl -> logs/run.png).
    explicit MetricsLog(const std::string& path, bool append = true, bool chart = false);

    // Writes one line; DataError naming the path when the write fails, ConfigError when a
    // field name repeats (JSON objects cannot hold it twice).
    void write(const std::vector<std::pair<std::string, MetricValue>>& fields);

    const std::string& path() const { return path_; }

    // One JSON object (no newline) for `fields`, as write() puts it on a line.
    static std::string format_line(const std::vector<std::pair<std::string, MetricValue>>& fields);

private:
    struct Closer {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::string path_;
    bool chart_;
    std::unique_ptr<std::FILE, Closer> file_;
};

}  // namespace tandem
