// SPDX-License-Identifier: MIT
#include "megatron_args.h"

#include "import_helpers.h"

#include "shardscape/support/strings.h"

#include <charconv>
#include <exception>

namespace shardscape::importing {

MegatronArgs::MegatronArgs(const std::vector<ScriptToken>& tokens, std::string origin,
                           std::vector<std::string>& warnings)
    : m_origin(std::move(origin))
{
    std::string current;
    for (const auto& token : tokens) {
        const bool flag = startsWith(token.text, "--");
        if (flag) {
            const auto eq = token.text.find('=');
            current = token.text.substr(0, eq);
            Arg& arg = m_args[current];
            arg = Arg {{}, token.line};
            if (eq != std::string::npos)
                arg.values.push_back(token.text.substr(eq + 1));
        } else if (current.empty()) {
            warnings.push_back(
                cat("pretrain_gpt.py argument '", token.text, "' (line ", token.line, ") is not an option: ignored"));
        } else {
            m_args[current].values.push_back(token.text);
        }
    }
}

std::optional<std::string> MegatronArgs::string(const std::string& flag) const
{
    const auto it = m_args.find(flag);
    if (it == m_args.end())
        return std::nullopt;
    if (it->second.values.size() != 1)
        failFlag(flag, cat("expected one value, got ", it->second.values.size()));
    return it->second.values.front();
}

std::vector<std::string> MegatronArgs::list(const std::string& flag) const
{
    const auto it = m_args.find(flag);
    return it == m_args.end() ? std::vector<std::string> {} : it->second.values;
}

std::optional<std::int64_t> MegatronArgs::integer(const std::string& flag, std::int64_t min, std::int64_t max) const
{
    const auto text = string(flag);
    if (!text)
        return std::nullopt;
    std::int64_t value = 0;
    const auto result = std::from_chars(text->data(), text->data() + text->size(), value);
    if (result.ec != std::errc() || result.ptr != text->data() + text->size())
        failFlag(flag, cat("'", *text, "' is not an integer"),
                 text->find('$') != std::string::npos ? "the value comes from something this script does not set"
                                                      : std::string());
    if (value < min || value > max)
        failFlag(flag, cat("value ", value, " is outside [", min, ", ", max, "]"));
    return value;
}

std::optional<double> MegatronArgs::number(const std::string& flag) const
{
    const auto text = string(flag);
    if (!text)
        return std::nullopt;
    try {
        std::size_t used = 0;
        const double value = std::stod(*text, &used);
        if (used == text->size())
            return value;
    } catch (const std::exception&) {
    }
    failFlag(flag, cat("'", *text, "' is not a number"));
}

void MegatronArgs::failFlag(const std::string& flag, const std::string& what, const std::string& hint) const
{
    fail(m_origin, line(flag), cat(flag, ": ", what), hint);
}

} // namespace shardscape::importing
