// `tandem`: the command line. Sub-commands are looked up in one table; `tandem` alone opens
// the interactive session.
#include <cstdio>
#include <cstring>
#include <exception>

#include "commands.h"
#include "parallel/mpi_world.h"
#include "version.h"

namespace tandem::tool {
namespace {

struct Command {
    const char* name;
    const char* usage;    // the arguments, for the help text
    const char* summary;  // one line
    int (*run)(const Args&);
};

// Every sub-command.
const Command kCommands[] = {
    {"run", "RECIPE [--key=value ...] [--flag]", "run a Lua recipe with options", command_run},
    {"test", "FILE...", "run Lua test files (tandem.test harness)", command_test},
    {"bench", "NET [--batch=N] [--threads=T] [--json]",
     "time each layer and the whole training step of a net", command_bench},
    {"plan", "RECIPE --batch=B [--topology=NAME] [--devices=N] [--write=FILE] [--trace=FILE]",
     "rank every layout (groups, stages, micro-batches, pipeline) by simulation", command_plan},
    {"devices", "", "list the compiled backends and the devices present", command_devices},
    {"mkdb", "SOURCE DB [--resize=N] [--encoding=png|jpeg|raw] [--shuffle] [--threads=N]",
     "an image folder or list file into an LMDB database (--check DB verifies one)", command_mkdb},
    {"import-idx", "IMAGES LABELS DB", "MNIST-style idx files into an LMDB database",
     command_import_idx},
    {"mean", "SOURCE", "per-channel mean and std of a database, folder or list", command_mean},
    {"dbinfo", "SOURCE [--grid=out.png]", "count, classes, shapes, encodings; a grid of samples",
     command_dbinfo},
    {"gen-images", "DIR [--classes=4] [--per-class=16]", "write a synthetic colour-image folder",
     command_gen_images},
    {"help", "", "show this text", command_help},
};

const Command* find_command(const std::string& name) {
    for (const auto& c : kCommands)
        if (name == c.name) return &c;
    return nullptr;
}

}  // namespace

int command_help(const Args&) {
    std::printf("Tandem %s: train CNNs on several devices, driven by Lua recipes.\n\n",
                TANDEM_VERSION);
    std::printf(
        "usage:\n  tandem                      open the interactive session (T is loaded)\n");
    for (const auto& c : kCommands) {
        const std::string left = std::string(c.name) + (*c.usage ? " " : "") + c.usage;
        if (left.size() > 35)  // a long usage gets its own line
            std::printf("  tandem %s\n  %-42s %s\n", left.c_str(), "", c.summary);
        else
            std::printf("  tandem %-35s %s\n", left.c_str(), c.summary);
    }
    std::printf(
        "\nRecipe options reach the recipe as a table (`local opt = ...`, also the global opt):\n"
        "--epochs=3 gives opt.epochs = 3, --micro-batches=4 gives opt.micro_batches = 4,\n"
        "--fast alone gives opt.fast = true.\n");
    return 0;
}

}  // namespace tandem::tool

namespace {

// Under mpirun (tandem::mpi::launched) MPI starts before anything else and ends after the
// command; a command that fails with several ranks ends the whole job (mpi::abort_job), so no
// rank is left waiting for it.
int run_command(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
    // Line-buffered even into a pipe or a file, so progress reaches logs as it happens.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    namespace mpi = tandem::mpi;
    if (mpi::launched()) {
        if (!mpi::built()) {
            std::fprintf(stderr, "tandem: started by an MPI launcher, but this build has no MPI "
                                 "(TANDEM_MPI): every process runs alone\n");
        } else {
            try {
                mpi::initialize();
            } catch (const std::exception& e) {
                std::fprintf(stderr, "tandem: %s\n", e.what());
                return 1;
            }
        }
    }
    const int status = run_command(argc, argv);
    if (status != 0) mpi::abort_job("the command failed (its error is above)");
    mpi::finalize();
    return status;
}

namespace {

int run_command(int argc, char** argv) {
    using namespace tandem::tool;
    try {
        if (argc < 2) return command_repl({});
        const std::string name = argv[1];
        const Args args(argv + 2, argv + argc);
        if (name == "--help" || name == "-h") return command_help(args);
        if (const Command* command = find_command(name)) return command->run(args);
        std::string known;
        for (const auto& c : kCommands) known += std::string(known.empty() ? "" : ", ") + c.name;
        std::fprintf(stderr, "tandem: unknown command '%s' (known: %s; `tandem help` for usage)\n",
                     name.c_str(), known.c_str());
        return 2;
    } catch (const std::exception& e) {
        // Errors inside Lua are reported by each command; this is the tool's own failure.
        std::fprintf(stderr, "tandem: %s\n", e.what());
        return 1;
    }
}

}  // namespace
