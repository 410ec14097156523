// The simulator's machinery, shared by simulator.cpp (the event loop: compute, copies,
// collectives, the update phase) and simulator_queues.cpp (each device's queue, built from the
// engine's stage programs). Private to the simulator.
#pragma once

#include <cstddef>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "plan/nccl_tuning.h"
#include "plan/simulator.h"

namespace tandem::simulation {

// A compute activity: `work` ms at full speed; devices in a CPU pool share its cores.
struct Activity {
    double remaining = 0;
    int pool = -1;        // -1: runs at full speed (a GPU)
    int threads = 1;      // cores it asks of the pool
    bool update = false;  // an optimizer step: memory-bound, slowed by busy cores its own way
    double started = 0;
    std::function<void(double start, double end)> done;
};

// A hand-off at the end of an item: the signal set on the receiving device.
struct Send {
    int signal = -1;
    int to = -1;  // plan device
    std::size_t bytes = 0;
};

// One entry of a device's queue: one op of its stage program (parallel/program.h).
struct Item {
    enum Kind { compute, reduce } kind = compute;
    double work_ms = 0;
    int wait = -1;            // signal that must be set first
    std::vector<Send> sends;  // the program's sends that follow this op
    int collective = -1;      // for collectives: index into the step's collectives
    std::string name, category;
    int micro = -1;
    std::size_t hold = 0;       // bytes held from the start of this op ...
    std::size_t release = 0;    // ... bytes released at its end
    std::size_t transient = 0;  // bytes alive only during the op
    // A backward in parts is one span, as the engine records it: from the start of the part
    // that opens it to the end of the part that closes it.
    bool opens_span = true, closes_span = true;
};

struct Collective {
    std::vector<int> members;  // plan devices
    // GPUs, found on first use: the members in each ring's order (collectives.h)
    std::vector<std::vector<int>> rings;
    // The algorithm and protocol it runs, found on first use (Plan::nccl_auto).
    NcclChoice choice;
    bool chosen = false;
    std::size_t bytes = 0;
    int stage = 0, bucket = 0;
    int arrived = 0;
    bool started = false, finished = false;
    double start = 0;
};

class StepSimulator {
public:
    StepSimulator(const Plan& plan, const Topology& topology, const CostModel& costs, bool trace)
        : plan_(plan), topology_(topology), costs_(costs), trace_(trace) {}

    Simulation run();

private:
    void check_plan();
    void build_queues();
    void start_ready();
    void start_item(int device);
    void start_activity(Activity activity);
    void finish_item(int device, double start, double end);
    void send(int from, int to, int signal, std::size_t bytes, double at);
    // How long after a CPU device's hand-off its receiver runs: a wake-up, longer with every
    // core busy, and beyond the cores a woken worker's wait for one (the crowded hand-off). In
    // a pool of more workers' threads than cores the kernel may also wake the receiver on the
    // core of its sender, which goes on working, and leave it waiting there while another core
    // idles: about one wake-up in `cores` lands so, and waits until the sender blocks or for
    // the crowded hand-off, whichever comes first.
    double wake_up_ms(int from, int to) const;
    void start_collective(int c);
    void collective_step(int c, int step);
    double reserve(int from, int to, std::size_t bytes, double at);
    void set_signal(int signal, double at);
    void span(int device, const std::string& track_suffix, const std::string& name,
              const std::string& category, double start, double end,
              std::vector<TraceArg> args = {});
    // The flag a receive waits for: an activation (direction 0) or gradient (1) along `edge`.
    int signal(int direction, int group, int edge, int micro) const;
    bool on_cpu(int device) const {
        return topology_.device(device_of_[static_cast<std::size_t>(device)]).cpu;
    }
    void compute_phase_done(int device);
    void start_updates();

    const Plan& plan_;
    const Topology& topology_;
    const CostModel& costs_;
    bool trace_;
    int count_ = 0;               // plan devices
    std::vector<int> device_of_;  // plan device -> topology device
    StageGraph graph_;            // the plan's, or the chain its cuts make
    Simulation sim_;

    double now_ = 0;
    std::vector<std::vector<Item>> queues_;
    std::vector<std::size_t> position_;
    std::vector<bool> busy_;
    std::vector<std::size_t> live_, static_bytes_;
    std::vector<std::size_t> parameter_tensors_;  // per device: what its update goes over
    std::vector<bool> signal_set_;
    std::vector<double> signal_at_;
    std::vector<Collective> collectives_;
    std::vector<int> pool_workers_;  // per CPU pool: the threads of the plan's devices in it
    std::vector<int> lane_free_;     // per stage: next collective index on its comm lane (GPUs)
    std::vector<double> channel_free_;
    std::vector<Activity> running_;
    struct Timed {
        double at;
        long seq;
        std::function<void()> run;
        bool operator>(const Timed& o) const { return at != o.at ? at > o.at : seq > o.seq; }
    };
    std::priority_queue<Timed, std::vector<Timed>, std::greater<>> timed_;
    long seq_ = 0;
    int phase_done_ = 0, updates_left_ = -1;
    double last_backward_ = 0, all_compute_done_ = 0, step_end_ = 0;
    std::vector<bool> compute_done_;
    std::vector<double> span_start_;  // per device: where its open span began
};

}  // namespace tandem::simulation
