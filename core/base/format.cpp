#include "base/format.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "base/error.h"

namespace tandem {

std::string format_bytes(double bytes) {
    static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (std::fabs(bytes) >= 1024.0 && unit < 4) {
        bytes /= 1024.0;
        ++unit;
    }
    char text[32];
    if (unit == 0)
        std::snprintf(text, sizeof text, "%.0f B", bytes);
    else
        std::snprintf(text, sizeof text, "%.1f %s", bytes, kUnits[unit]);
    return text;
}

std::size_t parse_bytes(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
        ++i;
    std::string number(text.substr(0, i));
    std::string unit;
    for (char c : text.substr(i))
        if (!std::isspace(static_cast<unsigned char>(c)))
            unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    double value = 0;
    try {
        std::size_t used = 0;
        value = std::stod(number, &used);
        TANDEM_CHECK_AS(ConfigError, used == number.size()) << "";
    } catch (const std::exception&) {
        TANDEM_THROW(ConfigError) << "cannot read a size from '" << text
                                  << "' (expected e.g. 512MB, 2GiB or 1048576)";
    }
    double scale = 0;
    if (unit.empty() || unit == "B")
        scale = 1;
    else if (unit == "K" || unit == "KB" || unit == "KIB")
        scale = 1024.0;
    else if (unit == "M" || unit == "MB" || unit == "MIB")
        scale = 1024.0 * 1024;
    else if (unit == "G" || unit == "GB" || unit == "GIB")
        scale = 1024.0 * 1024 * 1024;
    else if (unit == "T" || unit == "TB" || unit == "TIB")
        scale = 1024.0 * 1024 * 1024 * 1024;
    TANDEM_CHECK_AS(ConfigError, scale > 0 && value >= 0)
        << "cannot read a size from '" << text << "' (units: B, KB, MB, GB, TB)";
    return static_cast<std::size_t>(value * scale);
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
    std::string text;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i) text += separator;
        text += parts[i];
    }
    return text;
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

}  // namespace tandem
