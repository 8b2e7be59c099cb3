// SPDX-License-Identifier: MIT
#pragma once

// Helpers shared by the core tests.
#include "shardscape/support/error.h"

#include <fstream>
#include <string>

namespace shardscape::test {

/**
 * The message (cause and way out) of the InputError `call` throws, or "(no error)" when it throws none.
 * Any other exception propagates, so Qt Test fails the test: bad input must always be an InputError.
 */
template<typename Call> std::string inputErrorOf(Call&& call)
{
    try {
        call();
    } catch (const InputError& error) {
        return error.message();
    }
    return "(no error)";
}

/** Writes `text` to `path` as bytes. */
inline void writeFile(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary);
    out << text;
}

} // namespace shardscape::test
