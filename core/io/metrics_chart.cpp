#include "io/metrics_chart.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/json.h"
#include "io/png_file.h"

namespace tandem {
namespace {

constexpr int kPanelWidth = 560, kPanelHeight = 340, kColumns = 2, kMaxPanels = 6;
constexpr int kLeft = 72, kRight = 16, kTop = 28, kBottom = 40;

// Which panel a field goes to: the kinds every training run logs first, then one per field.
std::string panel_of(const std::string& field) {
    if (field.find("loss") != std::string::npos) return "loss";
    if (field.find("acc") != std::string::npos) return "accuracy";
    if (field == "lr" || field.ends_with("_lr")) return "learning rate";
    if (field.find("per_s") != std::string::npos) return "images/s";
    return field;
}

int panel_rank(const std::string& panel) {
    static const char* kFirst[] = {"loss", "accuracy", "learning rate", "images/s"};
    for (int i = 0; i < 4; ++i)
        if (panel == kFirst[i]) return i;
    return 4;
}

struct Series {
    std::string label;
    std::vector<cv::Point2d> points;
};

struct Panel {
    std::string title;
    std::vector<Series> series;
};

// Distinct colours (BGR), one per curve in order.
cv::Scalar colour(std::size_t i) {
    static const cv::Scalar kPalette[] = {
        {180, 119, 31}, {14, 127, 255},  {44, 160, 44},   {40, 39, 214},  {189, 103, 148},
        {75, 86, 140},  {194, 119, 227}, {127, 127, 127}, {34, 189, 188}, {207, 190, 23}};
    return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

// About five round tick values covering [low, high].
std::vector<double> ticks(double low, double high) {
    const double span = high - low;
    const double raw = span / 5;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    double step = magnitude;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (raw <= m * magnitude) {
            step = m * magnitude;
            break;
        }
    std::vector<double> out;
    for (double v = std::ceil(low / step) * step; v <= high + step * 1e-9; v += step)
        out.push_back(v);
    return out;
}

std::string tick_text(double v) {
    char text[32];
    if (v != 0 && (std::fabs(v) < 1e-3 || std::fabs(v) >= 1e5))
        std::snprintf(text, sizeof text, "%.1e", v);
    else
        std::snprintf(text, sizeof text, "%.4g", v);
    return text;
}

void put_text(cv::Mat& image, const std::string& text, cv::Point at, double scale, cv::Scalar c) {
    cv::putText(image, text, at, cv::FONT_HERSHEY_SIMPLEX, scale, c, 1, cv::LINE_AA);
}

void draw_panel(cv::Mat& image, const Panel& panel, cv::Rect area, const std::string& x_name) {
    const cv::Scalar ink(40, 40, 40), grid(225, 225, 225);
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (const auto& s : panel.series)
        for (const auto& p : s.points) {
            x0 = std::min(x0, p.x), x1 = std::max(x1, p.x);
            y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
        }
    if (x1 <= x0) x0 -= 1, x1 += 1;
    if (y1 <= y0)
        y0 -= std::max(1e-9, std::fabs(y0) * 0.05 + 1e-9),
            y1 += std::max(1e-9, std::fabs(y1) * 0.05 + 1e-9);
    const double pad = (y1 - y0) * 0.05;
    y0 -= pad, y1 += pad;
    const cv::Rect plot(area.x + kLeft, area.y + kTop, area.width - kLeft - kRight,
                        area.height - kTop - kBottom);
    auto to_pixel = [&](cv::Point2d p) {
        return cv::Point(
            plot.x + static_cast<int>(std::lround((p.x - x0) / (x1 - x0) * plot.width)),
            plot.y + plot.height -
                static_cast<int>(std::lround((p.y - y0) / (y1 - y0) * plot.height)));
    };
    for (double v : ticks(y0, y1)) {
        const int y = to_pixel({x0, v}).y;
        cv::line(image, {plot.x, y}, {plot.x + plot.width, y}, grid, 1);
        put_text(image, tick_text(v), {area.x + 4, y + 4}, 0.38, ink);
    }
    for (double v : ticks(x0, x1)) {
        const int x = to_pixel({v, y0}).x;
        cv::line(image, {x, plot.y}, {x, plot.y + plot.height}, grid, 1);
        put_text(image, tick_text(v), {x - 10, plot.y + plot.height + 16}, 0.38, ink);
    }
    cv::rectangle(image, plot, ink, 1);
    put_text(image, panel.title, {plot.x, area.y + 18}, 0.5, ink);
    put_text(image, x_name, {plot.x + plot.width - 40, plot.y + plot.height + 34}, 0.4, ink);
    for (std::size_t i = 0; i < panel.series.size(); ++i) {
        std::vector<cv::Point> pixels;
        for (const auto& p : panel.series[i].points) pixels.push_back(to_pixel(p));
        if (pixels.size() > 1) cv::polylines(image, pixels, false, colour(i), 2, cv::LINE_AA);
        for (const auto& p : pixels) cv::circle(image, p, 3, colour(i), cv::FILLED, cv::LINE_AA);
    }
    // The legend, on white, in the corner of the plot the curves cross least.
    const int rows = static_cast<int>(panel.series.size());
    const int w = 192, h = 16 * rows + 6;
    const cv::Rect corners[] = {{plot.x + plot.width - w - 4, plot.y + 4, w, h},
                                {plot.x + plot.width - w - 4, plot.y + plot.height - h - 4, w, h},
                                {plot.x + 4, plot.y + 4, w, h},
                                {plot.x + 4, plot.y + plot.height - h - 4, w, h}};
    cv::Rect legend = corners[0];
    int fewest = INT32_MAX;
    for (const cv::Rect& corner : corners) {
        int covered = 0;
        for (const auto& s : panel.series)
            for (const auto& p : s.points) covered += corner.contains(to_pixel(p));
        if (covered < fewest) fewest = covered, legend = corner;
    }
    cv::rectangle(image, legend, cv::Scalar(255, 255, 255), cv::FILLED);
    cv::rectangle(image, legend, grid, 1);
    for (int i = 0; i < rows; ++i) {
        const cv::Point at(legend.x + 6, legend.y + 15 + 16 * i);
        cv::line(image, {at.x, at.y - 4}, {at.x + 18, at.y - 4},
                 colour(static_cast<std::size_t>(i)), 2, cv::LINE_AA);
        put_text(image, panel.series[static_cast<std::size_t>(i)].label.substr(0, 28),
                 {at.x + 24, at.y}, 0.38, ink);
    }
}

}  // namespace

MetricsRun read_metrics_log(const std::string& path) {
    const std::vector<char> bytes = read_file(path);
    MetricsRun run;
    const auto slash = path.find_last_of('/');
    run.name = slash == std::string::npos ? path : path.substr(slash + 1);
    std::size_t begin = 0, line = 0;
    while (begin < bytes.size()) {
        std::size_t end = begin;
        while (end < bytes.size() && bytes[end] != '\n') ++end;
        ++line;
        const std::string_view text(bytes.data() + begin, end - begin);
        begin = end + 1;
        if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        JsonValue value;
        try {
            value = parse_json(text);
        } catch (const JsonError& e) {
            TANDEM_THROW(DataError)
                << path << ", line " << line << ": not a metrics line (JSON): " << e.what();
        }
        TANDEM_CHECK_AS(DataError, value.kind == JsonValue::Kind::object)
            << path << ", line " << line << ": a metrics line is a JSON object, got a "
            << value.kind_name();
        std::map<std::string, double> row;
        for (const auto& member : value.object)
            if (member.value.kind == JsonValue::Kind::integer ||
                member.value.kind == JsonValue::Kind::number)
                row[member.key] = member.value.number;
        run.rows.push_back(std::move(row));
    }
    return run;
}

bool draw_metrics_chart(const std::vector<MetricsRun>& runs, const std::string& png_path,
                        const std::string& x) {
    // Every curve: a (run, field) with the x field, in a panel by the field's kind.
    std::map<std::string, Panel> panels;
    for (const auto& run : runs) {
        std::map<std::string, Series> curves;
        double last_x = -INFINITY;
        for (const auto& row : run.rows) {
            const auto at = row.find(x);
            if (at == row.end()) continue;
            if (at->second <= last_x) curves.clear();  // a new run appended to the log
            last_x = at->second;
            for (const auto& [field, value] : row) {
                if (field == "epoch" || field == "step" || !std::isfinite(value)) continue;
                Series& s = curves[field];
                s.label = runs.size() > 1 ? run.name + ": " + field : field;
                s.points.emplace_back(at->second, value);
            }
        }
        for (auto& [field, series] : curves) {
            const bool changes =
                std::any_of(series.points.begin(), series.points.end(),
                            [&](const cv::Point2d& p) { return p.y != series.points[0].y; });
            const std::string panel = panel_of(field);
            if (!changes && panel_rank(panel) == 4) continue;  // a constant of no standard kind
            panels[panel].title = panel;
            panels[panel].series.push_back(std::move(series));
        }
    }
    if (panels.empty()) return false;
    std::vector<const Panel*> order;
    for (const auto& [name, panel] : panels) order.push_back(&panel);
    std::stable_sort(order.begin(), order.end(), [](const Panel* a, const Panel* b) {
        return panel_rank(a->title) < panel_rank(b->title);
    });
    if (order.size() > kMaxPanels) order.resize(kMaxPanels);

    const int columns = std::min<int>(kColumns, static_cast<int>(order.size()));
    const int rows = (static_cast<int>(order.size()) + columns - 1) / columns;
    cv::Mat image(rows * kPanelHeight, columns * kPanelWidth, CV_8UC3, cv::Scalar(255, 255, 255));
    for (std::size_t i = 0; i < order.size(); ++i) {
        const int c = static_cast<int>(i) % columns, r = static_cast<int>(i) / columns;
        draw_panel(image, *order[i], {c * kPanelWidth, r * kPanelHeight, kPanelWidth, kPanelHeight},
                   x);
    }
    write_png(png_path, image);
    return true;
}

std::string chart_path_for(const std::string& log_path) {
    const auto slash = log_path.find_last_of('/');
    const auto dot = log_path.find_last_of('.');
    const bool has_extension =
        dot != std::string::npos && (slash == std::string::npos || dot > slash);
    return (has_extension ? log_path.substr(0, dot) : log_path) + ".png";
}

}  // namespace tandem
