#include "base/thread_times.h"

#include <dirent.h>
#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

namespace tandem {

namespace {

constexpr std::string_view kTrainingPrefix = "tandem ";
constexpr std::size_t kThreadNameMax = 15;  // Linux keeps 16 bytes, the terminating zero included

void set_calling_thread_name(std::string name) {
    name.resize(std::min(name.size(), kThreadNameMax));
    // Naming is for people (top -H, gdb) and for the meter below: a failure loses only that.
    pthread_setname_np(pthread_self(), name.c_str());
}

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// A thread's counts: nanoseconds on a core, nanoseconds waiting in the run queue (then its time
// slices, not read).
bool read_schedstat(const std::string& path, std::uint64_t& ran_ns, std::uint64_t& waited_ns) {
    std::ifstream in(path);
    return static_cast<bool>(in >> ran_ns >> waited_ns);
}

}  // namespace

void name_training_thread(std::string_view role) {
    set_calling_thread_name(std::string(kTrainingPrefix) + std::string(role));
}

void name_thread(std::string_view name) {
    set_calling_thread_name(std::string(name));
}

std::optional<ThreadTimes> TrainingThreadTimes::sample() {
    // Read under the lock too: a sample that read earlier but stored later would take every
    // thread's smaller counts for new threads and count them twice.
    std::lock_guard lock(mutex_);
    std::unique_ptr<DIR, int (*)(DIR*)> tasks(opendir("/proc/self/task"), closedir);
    if (!tasks) return std::nullopt;
    std::map<int, Counts> now;
    while (const dirent* entry = readdir(tasks.get())) {
        const int tid = std::atoi(entry->d_name);
        if (tid <= 0) continue;  // "." and ".."
        const std::string dir = std::string("/proc/self/task/") + entry->d_name;
        if (first_line(dir + "/comm").rfind(kTrainingPrefix, 0) != 0) continue;
        // A thread that ended between the listing and the read has nothing left to count.
        Counts c;
        if (read_schedstat(dir + "/schedstat", c.ran_ns, c.waited_ns)) now[tid] = c;
    }
    // The main thread always exists: without its counts the kernel keeps none.
    std::uint64_t main_ran = 0, main_waited = 0;
    if (!read_schedstat("/proc/self/schedstat", main_ran, main_waited)) return std::nullopt;

    sampled_ = true;
    for (const auto& [tid, seen] : last_) {
        const auto it = now.find(tid);
        // Ended, or its id taken by a new thread (whose counts start again from zero).
        if (it == now.end() || it->second.ran_ns < seen.ran_ns ||
            it->second.waited_ns < seen.waited_ns) {
            ended_.ran_ns += seen.ran_ns;
            ended_.waited_ns += seen.waited_ns;
        }
    }
    last_ = std::move(now);
    Counts total = ended_;
    for (const auto& [tid, c] : last_) {
        total.ran_ns += c.ran_ns;
        total.waited_ns += c.waited_ns;
    }
    return ThreadTimes{total.ran_ns * 1e-9, total.waited_ns * 1e-9};
}

void TrainingThreadTimes::note_ending_thread() {
    {
        std::lock_guard lock(mutex_);
        if (!sampled_) return;
    }
    sample();
}

TrainingThreadTimes& training_thread_times() {
    // Never destroyed: a worker may end during the process's exit, after the statics.
    static auto* meter = new TrainingThreadTimes;
    return *meter;
}

}  // namespace tandem
