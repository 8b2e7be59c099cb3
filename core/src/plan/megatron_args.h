// SPDX-License-Identifier: MIT
// The arguments after pretrain_gpt.py as Megatron-LM's argparse sees them: "--flag v1 v2" and "--flag=v", read with
// range checks and errors that name the script's line. Private to core/src/plan (import_megatron.cpp).
#pragma once

#include "bash_script.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardscape::importing {

class MegatronArgs
{
public:
    /** Words that are not options before the first option go to `warnings` (ignored, as argparse would refuse). */
    MegatronArgs(const std::vector<ScriptToken>& tokens, std::string origin, std::vector<std::string>& warnings);

    bool has(const std::string& flag) const { return m_args.count(flag) > 0; }
    int line(const std::string& flag) const { return has(flag) ? m_args.at(flag).line : 0; }
    /** The flag's one value; nullopt when absent. */
    std::optional<std::string> string(const std::string& flag) const;
    /** Every value of the flag (empty when absent). */
    std::vector<std::string> list(const std::string& flag) const;
    /** The flag's integer in [min, max]; nullopt when absent. */
    std::optional<std::int64_t> integer(const std::string& flag, std::int64_t min, std::int64_t max) const;
    std::optional<double> number(const std::string& flag) const;
    /** Throws InputError "ORIGIN:LINE: FLAG: WHAT". */
    [[noreturn]] void failFlag(const std::string& flag, const std::string& what, const std::string& hint = {}) const;

private:
    struct Arg
    {
        std::vector<std::string> values;
        int line = 0;
    };
    std::string m_origin;
    std::map<std::string, Arg> m_args;
};

} // namespace shardscape::importing
