// Trace: a timeline of what each worker did, written as Chrome trace JSON (chrome://tracing,
// Perfetto: ui.perfetto.dev).
//
// Workers record complete spans (ph "X"): a name ("forward", the engine's op names of
// parallel/program.h), a category (forward, backward, loss, transfer, allreduce, gradients,
// optimizer, data), a track (the worker or device, "cpu:1"),
// a start and a duration in microseconds since the trace began (steady clock), and optional
// arguments (micro_batch, stage, bytes). Each track becomes one thread row, named by a
// thread_name metadata event. Recording takes a lock for one push; spans are cheap enough for
// every micro-batch of every stage.
//
//   TraceSpan span(trace, device.name(), "backward", "backward");  // trace may be null
//   span.arg("micro_batch", m).arg("stage", s);
//   ... work ...                                                   // recorded at scope end
//
// The same spans measure the pipeline bubble: busy_fraction(track, from, to) is the share of
// the window the track spent inside spans.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tandem {

// One argument of a span: an integer, a number or a text.
struct TraceArg {
    std::string key;
    std::variant<std::int64_t, double, std::string> value;

    template <std::integral T>
    TraceArg(std::string k, T v) : key(std::move(k)), value(static_cast<std::int64_t>(v)) {}
    template <std::floating_point T>
    TraceArg(std::string k, T v) : key(std::move(k)), value(static_cast<double>(v)) {}
    TraceArg(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
    TraceArg(std::string k, const char* v) : key(std::move(k)), value(std::string(v)) {}
};

struct TraceEvent {
    std::string name;
    std::string category;
    std::string track;
    double start_us = 0;
    double duration_us = 0;
    std::vector<TraceArg> args;
};

class Trace {
public:
    using Clock = std::chrono::steady_clock;

    Trace();
    Trace(const Trace&) = delete;
    Trace& operator=(const Trace&) = delete;

    // Microseconds since the trace began.
    double now_us() const;
    double to_us(Clock::time_point t) const;

    // Records one complete span. Thread-safe.
    void add(std::string_view track, std::string_view name, std::string_view category,
             double start_us, double duration_us, std::vector<TraceArg> args = {});

    // A copy of the spans recorded so far, in the order they were recorded.
    std::vector<TraceEvent> events() const;
    // Track names in the order they first appeared (the rows of the timeline).
    std::vector<std::string> tracks() const;
    std::size_t size() const;
    void clear();

    // Time the track spent inside spans within [from_us, to_us): the union of its spans,
    // clipped to the window (nested or overlapping spans count once). With `categories`
    // non-empty, only spans of those categories count.
    double busy_us(std::string_view track, double from_us, double to_us,
                   const std::vector<std::string>& categories = {}) const;
    // busy_us / (to_us - from_us); 0 for an empty window.
    double busy_fraction(std::string_view track, double from_us, double to_us,
                         const std::vector<std::string>& categories = {}) const;

    // {"traceEvents": [...], "displayTimeUnit": "ms"}: metadata events naming the process
    // and each track, then the spans.
    std::string to_json() const;
    // to_json() written atomically (a reader never sees half a trace); DataError naming the
    // path when it cannot.
    void write(const std::string& path) const;

private:
    Clock::time_point start_;
    mutable std::mutex mutex_;
    std::vector<TraceEvent> events_;
    std::vector<std::string> tracks_;
    std::map<std::string, int, std::less<>> track_ids_;
};

// RAII span: measures from construction to end() or destruction and records it in `trace`.
// With a null trace it does nothing at all (no clock read, no copy). Strings are copied at
// construction, so temporaries are fine.
class TraceSpan {
public:
    TraceSpan(Trace* trace, std::string_view track, std::string_view name,
              std::string_view category);
    ~TraceSpan();
    TraceSpan(const TraceSpan&) = delete;
    TraceSpan& operator=(const TraceSpan&) = delete;

    // Adds an argument (micro_batch, stage, bytes); no-op without a trace.
    template <class T>
    TraceSpan& arg(std::string key, T value) {
        if (trace_) args_.emplace_back(std::move(key), std::move(value));
        return *this;
    }
    // Records the span now instead of at scope end (once).
    void end();

private:
    Trace* trace_;
    std::string track_;
    std::string name_;
    std::string category_;
    double start_us_ = 0;
    std::vector<TraceArg> args_;
};

}  // namespace tandem
