// `tandem plot LOG... [--out=plot.png] [--x=epoch|step]`: the metrics logs of several runs
// (JSON lines, T.MetricsLog) drawn on one chart (core/io/metrics_chart.h).
#include <cstdio>

#include "base/error.h"
#include "commands.h"
#include "io/metrics_chart.h"
#include "tool_args.h"

namespace tandem::tool {

const ToolSpec kPlotSpec{
    "plot",
    "LOG...",
    "draw several runs' metrics logs on one chart (a PNG)",
    "LOG: metrics logs (JSON lines, as the recipes write them with T.MetricsLog). Each run's\n"
    "metrics become curves labelled with its file name, one panel per kind of figure (loss,\n"
    "accuracy, learning rate, images/s, ...). A training run draws its own log beside it.",
    {{"out", "FILE.png", "the chart to write (default plot.png)"},
     {"x", "epoch|step", "the x axis (default epoch)"}},
    1,
    -1};

int command_plot(const Args& args) {
    const ToolArgs a(args, kPlotSpec);
    const std::string x = a.text("x", "epoch");
    if (x != "epoch" && x != "step")
        throw CommandExit(2, "tandem plot: --x must be epoch or step, got '" + x + "'");
    const std::string out = a.text("out", "plot.png");
    std::vector<MetricsRun> runs;
    for (const auto& path : a.positional()) runs.push_back(read_metrics_log(path));
    TANDEM_CHECK_AS(DataError, draw_metrics_chart(runs, out, x))
        << "nothing to draw: no line of the logs has '" << x << "' and a numeric metric";
    std::printf("wrote %s: %zu run%s against the %s\n", out.c_str(), runs.size(),
                runs.size() == 1 ? "" : "s", x.c_str());
    return 0;
}

}  // namespace tandem::tool
