#include "io/metrics_log_schema.h"

namespace tandem {

const OptionSchema& metrics_log_option_schema() {
    static const OptionSchema schema{
        "metrics_log",
        "T.MetricsLog",
        {
            {.name = "append",
             .type = OptionType::flag,
             .help = "add to the file (false: start it afresh)",
             .fallback = true},
            {.name = "chart",
             .type = OptionType::flag,
             .help = "redraw the log's curves into the PNG beside it at every write",
             .fallback = true},
        }};
    return schema;
}

}  // namespace tandem
