// Which of our threads train, and how much core time they got against how much they waited for.
//
// A step slowed by other processes on its cores (or by our own loader threads) does not show in
// the data-wait figure: its threads are ready to run and sit in the kernel's run queue instead.
// Linux counts that wait per thread (/proc/self/task/<tid>/schedstat: time on a core, time
// runnable but waiting for one), so the progress line can say what the step lost.
//
// The training threads are the ones whose name begins with "tandem ": each device's worker and
// each all-reduce lane (Worker names its thread), and the OpenMP threads a worker starts, which
// take their creator's name. The loader's threads carry names of their own ("loader ...").
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>

namespace tandem {

// Names the calling thread "tandem <role>" (cut to the 15 characters Linux keeps), marking it a
// training thread for TrainingThreadTimes.
void name_training_thread(std::string_view role);
// Names the calling thread `name` as it is (cut to 15 characters): a helper, not a training
// thread (a name that does not begin with "tandem ").
void name_thread(std::string_view name);

struct ThreadTimes {
    double ran_s = 0;     // on a core
    double waited_s = 0;  // runnable, waiting for a core
};

// The training threads' times, summed over every one a sample has seen; one that has ended keeps
// what was last seen of it, so the totals only grow and two samples' difference is the time
// between them (less what an ended thread did after the last sample that saw it, which a worker
// keeps small by taking a sample as it ends).
class TrainingThreadTimes {
public:
    // The totals now; none where the kernel does not keep the counts (no schedstat).
    std::optional<ThreadTimes> sample();
    // Called by a training thread about to end (with the threads it started), so that a thread
    // that starts and ends between two samples (a planner's profile on its own devices) still
    // counts. Nothing to do until something has sampled.
    void note_ending_thread();

private:
    // Nanoseconds, as the kernel counts them: sums of whole numbers keep the totals exact, so they
    // never fall when a thread moves from the living to the ended.
    struct Counts {
        std::uint64_t ran_ns = 0, waited_ns = 0;
    };
    std::mutex mutex_;
    bool sampled_ = false;
    std::map<int, Counts> last_;  // by thread id, as last seen
    Counts ended_;                // threads gone since (or whose id was taken again)
};

// The process's one meter (the binding's core.training_thread_times).
TrainingThreadTimes& training_thread_times();

}  // namespace tandem
