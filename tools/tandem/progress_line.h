// A progress bar for the data tools: "mkdb [#####.....] 5120/10000 1843/s 0:02<0:03". On a
// terminal it redraws one line; into a pipe or a file it prints a line every 10%.
#pragma once

#include <cstdint>
#include <string>

namespace tandem::tool {

class ProgressLine {
public:
    ProgressLine(std::string title, std::int64_t total);
    void update(std::int64_t done);
    // Ends the line (terminal) and prints the final count.
    void finish();

private:
    std::string title_;
    std::int64_t total_;
    double start_;
    bool terminal_;
    int next_tenth_ = 1;
    std::int64_t done_ = 0;
};

}  // namespace tandem::tool
