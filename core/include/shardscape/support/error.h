// SPDX-License-Identifier: MIT
#pragma once

#include <stdexcept>
#include <string>

namespace shardscape {

/**
 * Bad input from the user: a malformed file, an unknown preset, an impossible or infeasible request.
 * The CLI maps it to exit code 2 and the GUI to a message box. `what()` names the cause in one line;
 * `hint()` says what the user can do about it (may be empty).
 */
class InputError : public std::runtime_error
{
public:
    explicit InputError(const std::string& cause, std::string hint = {})
        : std::runtime_error(cause)
        , m_hint(std::move(hint))
    {
    }
    const std::string& hint() const noexcept { return m_hint; }

    /** The cause and the hint on one line, as the CLI prints it. */
    std::string message() const
    {
        return m_hint.empty() ? std::string(what()) : std::string(what()) + " (" + m_hint + ")";
    }

private:
    std::string m_hint;
};

/** A configuration that cannot run (does not fit, does not divide); still bad input for exit codes. */
class InfeasibleError : public InputError
{
public:
    using InputError::InputError;
};

} // namespace shardscape
