// `tandem` alone: the interactive session.
//
// Each input is first tried as an expression ("return <input>"), so `net` or `1 + 2` print
// their value; otherwise it runs as statements. Input that ends before its chunk does (the
// parser stops at '<eof>') continues on the next line. Errors print as "error: ..." and the
// session goes on. On a terminal, readline gives line editing and a history kept in
// ~/.tandem_history; from a pipe, lines are read plainly (only a plain prompt is written), so
// the session can be scripted and tested.
#include <readline/history.h>
#include <readline/readline.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "backends/backends.h"
#include "commands.h"
#include "lua_state.h"
#include "version.h"

namespace tandem::tool {
namespace {

constexpr int kHistoryLines = 1000;

// Tab completion: the words are lua/tandem/pretty.lua's completions(text), asked of the
// session's Lua state (readline's callbacks take no context, so it is kept here).
lua_State* g_session = nullptr;
std::vector<std::string> g_matches;

std::vector<std::string> lua_completions(lua_State* L, const char* text) {
    std::vector<std::string> out;
    const int top = lua_gettop(L);
    lua_getglobal(L, "require");
    lua_pushstring(L, "tandem.pretty");
    if (lua_pcall(L, 1, 1, 0) == 0) {
        lua_getfield(L, -1, "completions");
        lua_pushstring(L, text);
        if (lua_pcall(L, 1, 1, 0) == 0 && lua_istable(L, -1)) {
            for (int i = 1;; ++i) {
                lua_rawgeti(L, -1, i);
                if (!lua_isstring(L, -1)) break;
                out.emplace_back(lua_tostring(L, -1));
                lua_pop(L, 1);
            }
        }
    }
    lua_settop(L, top);
    return out;
}

char* next_match(const char*, int state) {
    static std::size_t next = 0;
    if (state == 0) next = 0;
    return next < g_matches.size() ? strdup(g_matches[next++].c_str()) : nullptr;
}

char** complete(const char* text, int, int) {
    rl_attempted_completion_over = 1;  // names only, never file names
    g_matches = g_session ? lua_completions(g_session, text) : std::vector<std::string>{};
    return rl_completion_matches(text, next_match);
}

class LineReader {
public:
    LineReader() : terminal_(isatty(STDIN_FILENO) != 0) {
        if (!terminal_) return;
        rl_attempted_completion_function = complete;
        // '.' and ':' stay inside a word, so "T.nn.Co" completes as one.
        rl_basic_word_break_characters = const_cast<char*>(" \t\n\"'`@$><=;|&{(,+-*/%^~#[]");
        if (const char* home = std::getenv("HOME"))
            history_file_ = std::string(home) + "/.tandem_history";
        if (!history_file_.empty()) read_history(history_file_.c_str());
    }
    ~LineReader() {
        if (terminal_ && !history_file_.empty()) {
            write_history(history_file_.c_str());
            history_truncate_file(history_file_.c_str(), kHistoryLines);
        }
    }

    // The next line, or nothing at the end of input.
    std::optional<std::string> read(const char* prompt) {
        if (terminal_) {
            char* line = readline(prompt);
            if (line == nullptr) return std::nullopt;
            std::string text(line);
            std::free(line);
            // Line by line: the history file keeps one entry per line, so a chunk spanning
            // lines would come back in pieces anyway.
            if (!text.empty()) add_history(text.c_str());
            return text;
        }
        std::fputs(prompt, stdout);
        std::fflush(stdout);
        std::string text;
        if (!std::getline(std::cin, text)) return std::nullopt;
        return text;
    }

    bool terminal() const { return terminal_; }

private:
    bool terminal_;
    std::string history_file_;
};

enum class Parse { ok, incomplete, error };

// Compiles `chunk` (as an expression first) and leaves the function, or the error, on the stack.
Parse compile(lua_State* L, std::string chunk) {
    if (!chunk.empty() && chunk[0] == '=') chunk = "return " + chunk.substr(1);  // Lua 5.1 habit
    // Not "return <chunk>": that makes a call in it a tail call, whose frame (and with it the
    // error position and the function's name in messages) is gone when it fails.
    const std::string expression = "return (function(...) return ... end)(" + chunk + "\n)";
    if (luaL_loadbuffer(L, expression.data(), expression.size(), "=stdin") == 0) return Parse::ok;
    lua_pop(L, 1);
    if (luaL_loadbuffer(L, chunk.data(), chunk.size(), "=stdin") == 0) return Parse::ok;
    const char* message = lua_tostring(L, -1);
    const char* eof = std::strstr(message, "'<eof>'");
    if (eof != nullptr && std::strlen(eof) == std::strlen("'<eof>'")) {
        lua_pop(L, 1);
        return Parse::incomplete;
    }
    return Parse::error;
}

// Prints the values on the stack above `base` through tandem.pretty (tostring if missing).
void show_results(lua_State* L, int base) {
    const int count = lua_gettop(L) - base;
    if (count == 0) return;
    lua_getglobal(L, "require");
    lua_pushstring(L, "tandem.pretty");
    if (lua_pcall(L, 1, 1, 0) == 0) {
        lua_getfield(L, -1, "print_values");
        lua_remove(L, -2);
    } else {
        lua_pop(L, 1);
        lua_getglobal(L, "print");
    }
    lua_insert(L, base + 1);
    if (call_protected(L, count, 0) != 0) report_error(L);
}

void load_tandem(lua_State* L) {
    lua_getglobal(L, "require");
    lua_pushstring(L, "tandem");
    if (call_protected(L, 1, 1) != 0) {
        report_error(L);
        return;
    }
    lua_setglobal(L, "T");
}

void print_banner() {
    std::printf("Tandem %s (%s).\n", TANDEM_VERSION, LUAJIT_VERSION);
    // The same line as the first of `tandem devices`.
    std::printf("%s\n", backends_line(backend_status()).c_str());
    std::printf("T = require 'tandem' is loaded. Ctrl-D quits.\n");
    std::fflush(stdout);
}

}  // namespace

int command_repl(const Args& args) {
    if (!args.empty()) throw CommandExit(2, "tandem: the interactive session takes no arguments");
    LuaState state("repl");
    lua_State* L = state.get();
    print_banner();
    load_tandem(L);
    g_session = L;

    LineReader reader;
    std::string chunk;
    while (auto line = reader.read(chunk.empty() ? "> " : ">> ")) {
        chunk = chunk.empty() ? *line : chunk + "\n" + *line;
        const int base = lua_gettop(L);
        const Parse parse = compile(L, chunk);
        if (parse == Parse::incomplete) continue;
        chunk.clear();
        if (parse == Parse::error) {
            report_error(L);
            continue;
        }
        if (call_protected(L, 0, LUA_MULTRET) != 0) {
            report_error(L);
            continue;
        }
        show_results(L, base);
        lua_settop(L, base);
    }
    g_session = nullptr;
    if (!chunk.empty()) std::fprintf(stderr, "error: the input ended inside an unfinished chunk\n");
    if (reader.terminal()) std::printf("\n");
    return 0;
}

}  // namespace tandem::tool
