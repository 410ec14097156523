#include "io/metrics_log.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/json.h"
#include "io/metrics_chart.h"

namespace tandem {
namespace {

void append_value(std::string& out, const MetricValue& value) {
    if (const auto* d = std::get_if<double>(&value)) {
        if (!std::isfinite(*d)) {
            out += "null";
            return;
        }
        // Shortest text that reads back as the same double.
        char buffer[32];
        const auto result = std::to_chars(buffer, buffer + sizeof buffer, *d);
        out.append(buffer, result.ptr);
    } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
        out += std::to_string(*i);
    } else {
        append_json_string(out, std::get<std::string>(value));
    }
}

}  // namespace

MetricsLog::MetricsLog(const std::string& path, bool append, bool chart)
    : path_(path), chart_(chart) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) {
        std::error_code error;
        std::filesystem::create_directories(parent, error);
        TANDEM_CHECK_AS(DataError, !error)
            << "cannot open the metrics log " << path << ": cannot create directory "
            << parent.string() << ": " << error.message();
    }
    file_.reset(std::fopen(path.c_str(), append ? "ab" : "wb"));
    TANDEM_CHECK_AS(DataError, file_ != nullptr)
        << "cannot open the metrics log " << path << ": " << std::strerror(errno);
}

std::string MetricsLog::format_line(
    const std::vector<std::pair<std::string, MetricValue>>& fields) {
    std::string line = "{";
    for (std::size_t i = 0; i < fields.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            TANDEM_CHECK_AS(ConfigError, fields[i].first != fields[j].first)
                << "metrics line with the field '" << fields[i].first << "' twice";
    for (const auto& [name, value] : fields) {
        if (line.size() > 1) line += ", ";
        append_json_string(line, name);
        line += ": ";
        append_value(line, value);
    }
    return line + "}";
}

void MetricsLog::write(const std::vector<std::pair<std::string, MetricValue>>& fields) {
    const std::string line = format_line(fields) + "\n";
    const bool ok = std::fwrite(line.data(), 1, line.size(), file_.get()) == line.size() &&
                    std::fflush(file_.get()) == 0;
    TANDEM_CHECK_AS(DataError, ok)
        << "cannot write to the metrics log " << path_ << ": " << std::strerror(errno);
    if (chart_) draw_metrics_chart({read_metrics_log(path_)}, chart_path_for(path_));
}

}  // namespace tandem
