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

// A thread's counts: nanoseconds on a core, nanoseconds waiting in the run queue, time slices.
std::optional<ThreadTimes> read_schedstat(const std::string& path) {
    std::ifstream in(path);
    unsigned long long ran_ns = 0, waited_ns = 0;
    if (!(in >> ran_ns >> waited_ns)) return std::nullopt;
    return ThreadTimes{ran_ns * 1e-9, waited_ns * 1e-9};
}

}  // namespace

void name_training_thread(std::string_view role) {
    set_calling_thread_name(std::string(kTrainingPrefix) + std::string(role));
}

void name_thread(std::string_view name) {
    set_calling_thread_name(std::string(name));
}

std::optional<ThreadTimes> TrainingThreadTimes::sample() {
    std::unique_ptr<DIR, int (*)(DIR*)> tasks(opendir("/proc/self/task"), closedir);
    if (!tasks) return std::nullopt;
    std::map<int, ThreadTimes> now;
    while (const dirent* entry = readdir(tasks.get())) {
        const int tid = std::atoi(entry->d_name);
        if (tid <= 0) continue;  // "." and ".."
        const std::string dir = std::string("/proc/self/task/") + entry->d_name;
        if (first_line(dir + "/comm").rfind(kTrainingPrefix, 0) != 0) continue;
        // A thread that ended between the listing and the read has nothing left to count.
        if (auto times = read_schedstat(dir + "/schedstat")) now[tid] = *times;
    }
    // The main thread always exists: without its counts the kernel keeps none.
    if (!read_schedstat("/proc/self/schedstat")) return std::nullopt;

    std::lock_guard lock(mutex_);
    for (const auto& [tid, seen] : last_) {
        const auto it = now.find(tid);
        // Ended, or its id taken by a new thread (whose counts start again from zero).
        if (it == now.end() || it->second.ran_s < seen.ran_s ||
            it->second.waited_s < seen.waited_s) {
            ended_.ran_s += seen.ran_s;
            ended_.waited_s += seen.waited_s;
        }
    }
    last_ = std::move(now);
    ThreadTimes total = ended_;
    for (const auto& [tid, times] : last_) {
        total.ran_s += times.ran_s;
        total.waited_s += times.waited_s;
    }
    return total;
}

TrainingThreadTimes& training_thread_times() {
    static TrainingThreadTimes meter;
    return meter;
}

}  // namespace tandem
