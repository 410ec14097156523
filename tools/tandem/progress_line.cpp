#include "progress_line.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace tandem::tool {
namespace {

double now() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string clock_text(double seconds) {
    const long s = static_cast<long>(seconds + 0.5);
    char text[32];
    std::snprintf(text, sizeof text, "%ld:%02ld", s / 60, s % 60);
    return text;
}

}  // namespace

ProgressLine::ProgressLine(std::string title, std::int64_t total)
    : title_(std::move(title)), total_(total > 0 ? total : 1), start_(now()),
      terminal_(isatty(STDOUT_FILENO) != 0) {}

void ProgressLine::update(std::int64_t done) {
    done_ = done;
    const double fraction = double(done) / double(total_);
    if (!terminal_ && fraction * 10 < next_tenth_) return;
    while (next_tenth_ <= fraction * 10) ++next_tenth_;
    const double elapsed = now() - start_;
    const int width = 24, filled = static_cast<int>(fraction * width + 0.5);
    const double eta = fraction > 0 ? elapsed * (1 - fraction) / fraction : 0;
    std::printf("%s%s [%s%s] %lld/%lld %.0f/s %s<%s%s", terminal_ ? "\r" : "", title_.c_str(),
                std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                static_cast<long long>(done), static_cast<long long>(total_),
                elapsed > 0 ? double(done) / elapsed : 0.0, clock_text(elapsed).c_str(),
                clock_text(eta).c_str(), terminal_ ? "\033[K" : "\n");
    std::fflush(stdout);
}

void ProgressLine::finish() {
    if (terminal_) std::printf("\n");
    std::fflush(stdout);
}

}  // namespace tandem::tool
