#include "io/trace.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "base/atomic_file.h"
#include "base/json.h"

namespace tandem {
namespace {

// Microseconds with nanosecond digits: Chrome's ts and dur are (fractional) microseconds.
void append_us(std::string& out, double us) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.3f", us);
    out += buffer;
}

void append_value(std::string& out, const std::variant<std::int64_t, double, std::string>& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
        out += std::to_string(*i);
    } else if (const auto* d = std::get_if<double>(&v)) {
        if (!std::isfinite(*d)) {
            out += "null";  // JSON has no NaN or infinity
            return;
        }
        char buffer[64];
        std::snprintf(buffer, sizeof buffer, "%.17g", *d);
        out += buffer;
    } else {
        append_json_string(out, std::get<std::string>(v));
    }
}

}  // namespace

Trace::Trace() : start_(Clock::now()) {}

double Trace::to_us(Clock::time_point t) const {
    return std::chrono::duration<double, std::micro>(t - start_).count();
}

double Trace::now_us() const {
    return to_us(Clock::now());
}

void Trace::add(std::string_view track, std::string_view name, std::string_view category,
                double start_us, double duration_us, std::vector<TraceArg> args) {
    TraceEvent event{std::string(name), std::string(category),      std::string(track),
                     start_us,          std::max(0.0, duration_us), std::move(args)};
    std::lock_guard lock(mutex_);
    if (track_ids_.find(track) == track_ids_.end()) {
        track_ids_.emplace(std::string(track), static_cast<int>(tracks_.size()));
        tracks_.emplace_back(track);
    }
    events_.push_back(std::move(event));
}

std::vector<TraceEvent> Trace::events() const {
    std::lock_guard lock(mutex_);
    return events_;
}

std::vector<std::string> Trace::tracks() const {
    std::lock_guard lock(mutex_);
    return tracks_;
}

std::size_t Trace::size() const {
    std::lock_guard lock(mutex_);
    return events_.size();
}

void Trace::clear() {
    std::lock_guard lock(mutex_);
    events_.clear();
    tracks_.clear();
    track_ids_.clear();
}

double Trace::busy_us(std::string_view track, double from_us, double to_us,
                      const std::vector<std::string>& categories) const {
    std::vector<std::pair<double, double>> spans;
    {
        std::lock_guard lock(mutex_);
        for (const TraceEvent& e : events_) {
            if (e.track != track) continue;
            if (!categories.empty() &&
                std::find(categories.begin(), categories.end(), e.category) == categories.end())
                continue;
            const double begin = std::max(e.start_us, from_us);
            const double end = std::min(e.start_us + e.duration_us, to_us);
            if (end > begin) spans.emplace_back(begin, end);
        }
    }
    // The union of the clipped intervals, so a span nested in another counts once.
    std::sort(spans.begin(), spans.end());
    double busy = 0;
    double covered = from_us;
    for (const auto& [begin, end] : spans) {
        const double b = std::max(begin, covered);
        if (end > b) {
            busy += end - b;
            covered = end;
        }
    }
    return busy;
}

double Trace::busy_fraction(std::string_view track, double from_us, double to_us,
                            const std::vector<std::string>& categories) const {
    if (!(to_us > from_us)) return 0;
    return busy_us(track, from_us, to_us, categories) / (to_us - from_us);
}

std::string Trace::to_json() const {
    const std::string pid = std::to_string(::getpid());
    std::lock_guard lock(mutex_);
    std::string out = "{\"traceEvents\": [\n";
    out += "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + pid +
           ", \"tid\": 0, \"args\": {\"name\": \"tandem\"}}";
    // Tracks are tids 1, 2, ... in order of appearance, sorted that way in the viewer.
    for (std::size_t t = 0; t < tracks_.size(); ++t) {
        const std::string tid = std::to_string(t + 1);
        out += ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " + pid +
               ", \"tid\": " + tid + ", \"args\": {\"name\": ";
        append_json_string(out, tracks_[t]);
        out += "}},\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": " + pid +
               ", \"tid\": " + tid + ", \"args\": {\"sort_index\": " + tid + "}}";
    }
    for (const TraceEvent& e : events_) {
        out += ",\n{\"name\": ";
        append_json_string(out, e.name);
        out += ", \"cat\": ";
        append_json_string(out, e.category);
        out += ", \"ph\": \"X\", \"pid\": " + pid +
               ", \"tid\": " + std::to_string(track_ids_.find(e.track)->second + 1) + ", \"ts\": ";
        append_us(out, e.start_us);
        out += ", \"dur\": ";
        append_us(out, e.duration_us);
        if (!e.args.empty()) {
            out += ", \"args\": {";
            for (std::size_t a = 0; a < e.args.size(); ++a) {
                if (a) out += ", ";
                append_json_string(out, e.args[a].key);
                out += ": ";
                append_value(out, e.args[a].value);
            }
            out += "}";
        }
        out += "}";
    }
    out += "\n], \"displayTimeUnit\": \"ms\"}\n";
    return out;
}

void Trace::write(const std::string& path) const {
    const std::string json = to_json();
    write_file_atomic(path, std::span<const char>(json.data(), json.size()));
}

TraceSpan::TraceSpan(Trace* trace, std::string_view track, std::string_view name,
                     std::string_view category)
    : trace_(trace) {
    if (!trace_) return;
    track_ = track;
    name_ = name;
    category_ = category;
    start_us_ = trace_->now_us();
}

TraceSpan::~TraceSpan() {
    // A trace is a diagnostic: failing to record a span (out of memory) must not end the
    // process from a destructor, nor replace the exception that may be unwinding through it.
    try {
        end();
    } catch (...) {
    }
}

void TraceSpan::end() {
    if (!trace_) return;
    Trace* trace = std::exchange(trace_, nullptr);
    trace->add(track_, name_, category_, start_us_, trace->now_us() - start_us_, std::move(args_));
}

}  // namespace tandem
