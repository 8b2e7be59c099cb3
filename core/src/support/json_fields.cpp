// SPDX-License-Identifier: MIT
#include "shardscape/support/json_fields.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cmath>

namespace shardscape {

std::string describeJson(const nlohmann::json& value)
{
    std::string text = value.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
    if (text.size() > 40)
        text = text.substr(0, 37) + "...";
    return cat(value.type_name(), " ", text);
}

JsonFields::JsonFields(const nlohmann::json& object, std::string origin, std::string path)
    : m_object(object)
    , m_origin(std::move(origin))
    , m_path(std::move(path))
{
    if (!m_object.is_object())
        throw InputError(cat(m_origin, ": ", m_path.empty() ? std::string("document") : m_path,
                             ": expected a JSON object, got ", describeJson(m_object)));
}

std::string JsonFields::pathOf(std::string_view key) const
{
    return m_path.empty() ? std::string(key) : cat(m_path, ".", key);
}

void JsonFields::fail(std::string_view key, const std::string& complaint, const std::string& hint) const
{
    throw InputError(cat(m_origin, ": ", pathOf(key), ": ", complaint), hint);
}

bool JsonFields::has(std::string_view key) const
{
    const auto it = m_object.find(key);
    return it != m_object.end() && !it->is_null();
}

const nlohmann::json* JsonFields::find(std::string_view key)
{
    m_known.emplace_back(key);
    const auto it = m_object.find(key);
    return it == m_object.end() || it->is_null() ? nullptr : &*it;
}

const nlohmann::json& JsonFields::require(std::string_view key)
{
    const auto* value = find(key);
    if (!value)
        fail(key, "required field is missing");
    return *value;
}

std::string JsonFields::string(std::string_view key)
{
    const auto& value = require(key);
    if (!value.is_string())
        fail(key, cat("expected a string, got ", describeJson(value)));
    return value.get<std::string>();
}

std::optional<std::string> JsonFields::optString(std::string_view key)
{
    return has(key) ? std::optional<std::string>(string(key)) : (find(key), std::nullopt);
}

std::int64_t JsonFields::integer(std::string_view key, std::int64_t min, std::int64_t max)
{
    const auto& value = require(key);
    std::int64_t n = 0;
    if (value.is_number_integer()) {
        if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
            fail(key, cat("value ", describeJson(value), " is too large"), cat("use at most ", max));
        n = value.get<std::int64_t>();
    } else if (value.is_number_float()) {
        const double d = value.get<double>();
        if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9e18)
            fail(key, cat("expected an integer, got ", describeJson(value)));
        n = static_cast<std::int64_t>(d);
    } else {
        fail(key, cat("expected an integer, got ", describeJson(value)));
    }
    if (n < min || n > max)
        fail(key, cat("value ", n, " is out of range [", min, ", ", max, "]"));
    return n;
}

std::optional<std::int64_t> JsonFields::optInteger(std::string_view key, std::int64_t min, std::int64_t max)
{
    return has(key) ? std::optional<std::int64_t>(integer(key, min, max)) : (find(key), std::nullopt);
}

double JsonFields::number(std::string_view key, double min, double max)
{
    const auto& value = require(key);
    if (!value.is_number())
        fail(key, cat("expected a number, got ", describeJson(value)));
    const double d = value.get<double>();
    if (!std::isfinite(d) || d < min || d > max)
        fail(key, cat("value ", d, " is out of range [", min, ", ", max, "]"));
    return d;
}

std::optional<double> JsonFields::optNumber(std::string_view key, double min, double max)
{
    return has(key) ? std::optional<double>(number(key, min, max)) : (find(key), std::nullopt);
}

bool JsonFields::boolean(std::string_view key, bool fallback)
{
    const auto* value = find(key);
    if (!value)
        return fallback;
    if (!value->is_boolean())
        fail(key, cat("expected true or false, got ", describeJson(*value)));
    return value->get<bool>();
}

const nlohmann::json& JsonFields::array(std::string_view key, bool required)
{
    static const nlohmann::json kEmpty = nlohmann::json::array();
    const auto* value = find(key);
    if (!value) {
        if (required)
            fail(key, "required field is missing");
        return kEmpty;
    }
    if (!value->is_array())
        fail(key, cat("expected an array, got ", describeJson(*value)));
    return *value;
}

const nlohmann::json& JsonFields::object(std::string_view key)
{
    const auto& value = require(key);
    if (!value.is_object())
        fail(key, cat("expected an object, got ", describeJson(value)));
    return value;
}

void JsonFields::ignore(std::initializer_list<std::string_view> keys)
{
    for (const auto key : keys)
        m_known.emplace_back(key);
}

void JsonFields::checkNoUnknownKeys() const
{
    for (const auto& [key, value] : m_object.items()) {
        if (std::find(m_known.begin(), m_known.end(), std::string_view(key)) == m_known.end()) {
            std::vector<std::string> allowed;
            for (const auto known : m_known)
                allowed.emplace_back(known);
            std::sort(allowed.begin(), allowed.end());
            allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
            const auto near = nearestNames(key, allowed, 1);
            const bool close
                = !near.empty() && editDistance(key, near.front()) <= std::max<std::size_t>(2, key.size() / 3);
            fail(key, "unknown key",
                 close ? cat("did you mean '", near.front(), "'?") : cat("allowed keys: ", join(allowed)));
        }
    }
}

} // namespace shardscape
