// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/**
 * A strict reader for one JSON object: every getter checks type and range and throws InputError
 * "ORIGIN: PATH.KEY: expected ..., got ..." so the user sees which field is wrong and why.
 * checkNoUnknownKeys() rejects keys no getter asked for (typos must not be silently ignored).
 */
class JsonFields
{
public:
    JsonFields(const nlohmann::json& object, std::string origin, std::string path = {});

    bool has(std::string_view key) const;
    /** The raw value, or nullptr when absent. Marks the key as known. */
    const nlohmann::json* find(std::string_view key);

    std::string string(std::string_view key);
    std::optional<std::string> optString(std::string_view key);
    std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max);
    std::optional<std::int64_t> optInteger(std::string_view key, std::int64_t min, std::int64_t max);
    double number(std::string_view key, double min, double max);
    std::optional<double> optNumber(std::string_view key, double min, double max);
    bool boolean(std::string_view key, bool fallback);
    /** An array value (empty when absent and `required` is false). */
    const nlohmann::json& array(std::string_view key, bool required);
    const nlohmann::json& object(std::string_view key);

    /** Marks keys as known without reading them (e.g. informational fields). */
    void ignore(std::initializer_list<std::string_view> keys);
    void checkNoUnknownKeys() const;

    /** "PATH.KEY" for messages about a nested value. */
    std::string pathOf(std::string_view key) const;
    /** Throws InputError for `key` with the given complaint. */
    [[noreturn]] void fail(std::string_view key, const std::string& complaint, const std::string& hint = {}) const;

    const std::string& origin() const { return m_origin; }

private:
    const nlohmann::json& require(std::string_view key);
    const nlohmann::json& m_object;
    std::string m_origin;
    std::string m_path;
    std::vector<std::string_view> m_known; // keys are string literals at every call site
};

/** A short rendering of a JSON value for error messages (truncated). */
std::string describeJson(const nlohmann::json& value);

} // namespace shardscape
