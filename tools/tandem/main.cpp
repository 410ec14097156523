// `tandem`: the command line. Sub-commands are looked up in one table; `tandem` alone opens
// the interactive session.
#include <cstdio>
#include <cstring>
#include <exception>

#include "commands.h"
#include "omp_wait_policy.h"
#include "parallel/mpi_world.h"
#include "version.h"

namespace tandem::tool {
namespace {

struct Command {
    const ToolSpec* spec;  // its name, arguments, summary and options
    int (*run)(const Args&);
};

// Every sub-command.
const Command kCommands[] = {
    {&kRunSpec, command_run},
    {&kTestSpec, command_test},
    {&kBenchSpec, command_bench},
    {&kPlanSpec, command_plan},
    {&kDevicesSpec, command_devices},
    {&kMkdbSpec, command_mkdb},
    {&kImportIdxSpec, command_import_idx},
    {&kMeanSpec, command_mean},
    {&kDbinfoSpec, command_dbinfo},
    {&kGenImagesSpec, command_gen_images},
    {&kImportInteractionsSpec, command_import_interactions},
    {&kGenInteractionsSpec, command_gen_interactions},
    {&kPlotSpec, command_plot},
    {&kHelpSpec, command_help},
};

const Command* find_command(const std::string& name) {
    for (const auto& c : kCommands)
        if (name == c.spec->name) return &c;
    return nullptr;
}

}  // namespace

const ToolSpec kHelpSpec{"help", "[COMMAND]", "show this text, or a command's help", "", {}, 0, 1};

int command_help(const Args& args) {
    // `tandem help mkdb` is `tandem mkdb --help`.
    if (!args.empty() && args[0] != "--help" && args[0] != "-h") {
        if (const Command* command = find_command(args[0])) return command->run({"--help"});
        std::string known;
        for (const auto& c : kCommands)
            known += std::string(known.empty() ? "" : ", ") + c.spec->name;
        throw CommandExit(2, "tandem help: no command '" + args[0] + "' (known: " + known + ")");
    }
    std::printf("Tandem %s: train CNNs on several devices, driven by Lua recipes.\n\n",
                TANDEM_VERSION);
    std::printf(
        "usage:\n  tandem                      open the interactive session (T is loaded)\n");
    for (const auto& c : kCommands) {
        const ToolSpec& s = *c.spec;
        std::string left = std::string(s.name) + (*s.arguments ? " " : "") + s.arguments;
        if (!s.options.empty()) left += " [options]";
        if (left.size() > 35)  // a long usage gets its own line
            std::printf("  tandem %s\n  %-42s %s\n", left.c_str(), "", s.summary);
        else
            std::printf("  tandem %-35s %s\n", left.c_str(), s.summary);
    }
    std::printf(
        "\n`tandem COMMAND --help` describes a command and its options; `tandem run RECIPE "
        "--help`\n"
        "lists a recipe's options with their defaults.\n");
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
    tandem::tool::bound_openmp_spinning(argv);
    // Line-buffered even into a pipe or a file, so progress reaches logs as it happens.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    namespace mpi = tandem::mpi;
    if (mpi::launched()) {
        if (!mpi::built()) {
            std::fprintf(stderr,
                         "tandem: started by an MPI launcher, but this build has no MPI "
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
        for (const auto& c : kCommands)
            known += std::string(known.empty() ? "" : ", ") + c.spec->name;
        std::fprintf(stderr, "tandem: unknown command '%s' (known: %s; `tandem help` for usage)\n",
                     name.c_str(), known.c_str());
        return 2;
    } catch (const CommandExit& e) {
        // --help (0) or a mistake on the command line (2): the message alone.
        std::fprintf(e.status == 0 ? stdout : stderr, e.status == 0 ? "%s" : "error: %s\n",
                     e.what());
        return e.status;
    } catch (const std::exception& e) {
        // Errors inside Lua are reported by each command; this is the tool's own failure.
        std::fprintf(stderr, "tandem: %s\n", e.what());
        return 1;
    }
}

}  // namespace
