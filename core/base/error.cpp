#include "base/error.h"

namespace tandem {

std::string Error::full_message() const {
    std::string text = what();
    for (const auto& line : context_) {
        text += "\n  ";
        text += line;
    }
    return text;
}

}  // namespace tandem
