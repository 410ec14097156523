// Tandem's error model: exceptions that name everything, never exit/abort.
//
// Every error carries a message and a context chain that callers append to on the way up
// ("in layer 3 'conv2' (Conv2d), forward"), so users read the innermost cause first and then
// the path to it. The Lua binding turns these into Lua errors with full_message().
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}

    // Appends one line of context ("in layer 3 'conv2' (Conv2d), forward").
    void add_context(std::string line) { context_.push_back(std::move(line)); }
    const std::vector<std::string>& context() const { return context_; }

    // The message followed by each context line, innermost first.
    std::string full_message() const;

private:
    std::vector<std::string> context_;
};

// A tensor shape does not fit what a layer or operation expects.
class ShapeError : public Error {
    using Error::Error;
};
// A device allocator refused a request past its cap.
class DeviceMemoryError : public Error {
    using Error::Error;
};
// Bad or missing data: a file, a record, a checkpoint.
class DataError : public Error {
    using Error::Error;
};
// An unknown or invalid option, from a recipe or the command line.
class ConfigError : public Error {
    using Error::Error;
};
// A failing call into a backend library (oneDNN, CUDA, LMDB, ...).
class BackendError : public Error {
    using Error::Error;
};
// A step was stopped because another worker failed.
class CancelledError : public Error {
    using Error::Error;
};

namespace detail {

// Streams a message and throws E when it goes out of scope via throw_now().
// Used only through TANDEM_CHECK / TANDEM_THROW below.
template <class E>
class ErrorBuilder {
public:
    template <class T>
    ErrorBuilder& operator<<(const T& value) {
        out_ << value;
        return *this;
    }
    [[noreturn]] void throw_now() const { throw E(out_.str()); }

private:
    std::ostringstream out_;
};

// Lets `TANDEM_CHECK(c) << "..."` throw after the whole message is streamed.
struct Thrower {
    template <class E>
    [[noreturn]] void operator&(const ErrorBuilder<E>& b) const {
        b.throw_now();
    }
};

}  // namespace detail
}  // namespace tandem

// TANDEM_CHECK(cond) << "message";   throws tandem::Error when cond is false.
// TANDEM_CHECK_AS(ShapeError, cond) << "...";   throws the given subclass.
// glog's form: a conditional expression, so it nests safely inside an unbraced if/else.
#define TANDEM_CHECK_AS(E, cond) \
    (cond) ? (void)0 : ::tandem::detail::Thrower() & ::tandem::detail::ErrorBuilder<::tandem::E>()
#define TANDEM_CHECK(cond) TANDEM_CHECK_AS(Error, cond)
#define TANDEM_THROW(E) TANDEM_CHECK_AS(E, false)
