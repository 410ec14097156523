// Pictures of training runs: the metrics logs (metrics_log.h, JSON lines) of one or more runs
// drawn as curves against the epoch (or the step), one panel per kind of figure (loss,
// accuracy, learning rate, images/s, anything else numeric), into a PNG. Every training run
// redraws its own beside its log (MetricsLog), and `tandem plot LOG...` puts several runs on
// one chart, so comparing two layouts or two learning rates is a glance.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tandem {

struct MetricsRun {
    std::string name;                                 // the legend's label: the log's file name
    std::vector<std::map<std::string, double>> rows;  // the numeric fields of each line
};

// The numeric fields of every line of a metrics log. DataError naming the file and the line for
// a line that is not a JSON object, or when the file cannot be read; an empty file is a run
// with no rows.
MetricsRun read_metrics_log(const std::string& path);

// Draws `runs` against the field `x` ("epoch" or "step"; rows without it are left out) into
// `png_path` (written atomically). Fields named like a loss, an accuracy, a learning rate
// ("lr") or images/s get their panels; other numeric fields one each, except the x fields and
// those that never change. Where `x` goes back within a log (a new run appended to an old
// log), the curves start again from there. Returns false, writing nothing, when there is
// nothing to draw (no row has `x` and a metric); DataError when the file cannot be written.
bool draw_metrics_chart(const std::vector<MetricsRun>& runs, const std::string& png_path,
                        const std::string& x = "epoch");

// The PNG beside a log: "logs/run.jsonl" -> "logs/run.png".
std::string chart_path_for(const std::string& log_path);

}  // namespace tandem
