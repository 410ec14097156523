// Helpers for communicator tests: ranks on threads, inputs whose sum shows its order, and
// the canonical pairwise tree to compare with.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <exception>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "parallel/comm_inproc.h"

namespace tandem::test {

// Runs fn(rank) on `ranks` threads; returns each rank's exception (null when it returned).
inline std::vector<std::exception_ptr> run_ranks(int ranks, const std::function<void(int)>& fn) {
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
        threads.emplace_back([&, r] {
            try {
                fn(r);
            } catch (...) {
                errors[static_cast<std::size_t>(r)] = std::current_exception();
            }
        });
    for (auto& t : threads) t.join();
    return errors;
}

inline void expect_no_errors(const std::vector<std::exception_ptr>& errors) {
    for (std::size_t r = 0; r < errors.size(); ++r) {
        if (!errors[r]) continue;
        try {
            std::rethrow_exception(errors[r]);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "rank " << r << " threw: " << e.what();
        }
    }
}

// Values spread over six orders of magnitude, so that a change of summation order shows.
inline std::vector<std::vector<float>> make_inputs(int ranks, std::size_t count, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-3, 3);
    std::vector<std::vector<float>> x(static_cast<std::size_t>(ranks), std::vector<float>(count));
    for (auto& v : x)
        for (auto& e : v) e = unit(gen) * std::pow(10.0f, static_cast<float>(exponent(gen)));
    return x;
}

// The canonical pairwise tree over ranks [lo, hi) for element i.
inline float pairwise(const std::vector<std::vector<float>>& x, std::size_t lo, std::size_t hi,
                      std::size_t i) {
    if (hi - lo == 1) return x[lo][i];
    const std::size_t mid = lo + canonical_tree_split(hi - lo);
    return pairwise(x, lo, mid, i) + pairwise(x, mid, hi, i);
}

}  // namespace tandem::test
