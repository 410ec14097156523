// What a Loader measures (issue 3, "visibility"): how long its consumer waited for batches and
// how fast each stage ran while it was working. Rates are per second of the stage's own busy
// time, so they say what a stage could deliver, not what the consumer took; decode_rate is per
// decode thread.
#pragma once

#include <cstdint>

namespace tandem {

struct LoaderStats {
    std::int64_t batches = 0;  // handed to the consumer by next()
    double wait_seconds = 0;   // the consumer's time blocked in next(), all of it
    // The same after each epoch's first batch (the pipeline filling), and the consumer's time
    // from that first batch to its last: their ratio is the warm data-wait fraction.
    double warm_wait_seconds = 0;
    double warm_seconds = 0;
    std::int64_t records_read = 0;
    double read_seconds = 0;
    std::int64_t images_decoded = 0;  // decoded and transformed
    double decode_seconds = 0;        // summed over decode threads
    std::int64_t batches_assembled = 0;
    double assemble_seconds = 0;
    std::int64_t skipped = 0;  // corrupt samples skipped (every time one is met, all epochs)
    std::int64_t corrupt = 0;  // distinct samples found corrupt
    int decode_threads = 0;

    double wait_fraction() const { return warm_seconds > 0 ? warm_wait_seconds / warm_seconds : 0; }
    double read_rate() const { return read_seconds > 0 ? records_read / read_seconds : 0; }
    double decode_rate() const { return decode_seconds > 0 ? images_decoded / decode_seconds : 0; }
    double assemble_rate() const {
        return assemble_seconds > 0 ? batches_assembled / assemble_seconds : 0;
    }
};

}  // namespace tandem
