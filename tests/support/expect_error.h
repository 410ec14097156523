// expect_error<E>(call, words): the call throws E, and its message holds `words` (the user's
// mistake, named as the user would see it). A call that returns, or throws another type, fails.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace tandem::test {

template <class E, class Call>
void expect_error(Call&& call, std::string_view words) {
    try {
        call();
        ADD_FAILURE() << "no error; expected one saying: " << words;
    } catch (const E& e) {
        EXPECT_NE(std::string_view(e.what()).find(words), std::string_view::npos) << e.what();
    }
}

}  // namespace tandem::test
