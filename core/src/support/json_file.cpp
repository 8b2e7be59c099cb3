// SPDX-License-Identifier: MIT
#include "shardscape/support/json_file.h"

#include "shardscape/support/error.h"
#include "shardscape/support/json_nesting.h"
#include "shardscape/support/strings.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <system_error>

namespace shardscape {

std::string readTextFile(const std::filesystem::path& path, std::uintmax_t maxBytes)
{
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status))
        throw InputError(cat(path.string(), ": no such file"), "check the path");
    if (std::filesystem::is_directory(status))
        throw InputError(cat(path.string(), ": is a directory, not a file"), "name the file inside it");
    const auto size = std::filesystem::file_size(path, ec);
    if (ec)
        throw InputError(cat(path.string(), ": cannot read its size (", ec.message(), ")"));
    if (size > maxBytes)
        throw InputError(cat(path.string(), ": file is ", humanBytes(static_cast<double>(size)), ", over the ",
                             humanBytes(static_cast<double>(maxBytes)), " limit"),
                         "is this the right file?");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw InputError(cat(path.string(), ": cannot open for reading"), "check its permissions");
    std::string text(static_cast<std::size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(size));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

namespace {

/** Line and column (both 1-based) of a byte offset. */
std::pair<std::size_t, std::size_t> lineColumn(std::string_view text, std::size_t offset)
{
    offset = std::min(offset, text.size());
    std::size_t line = 1;
    std::size_t column = 1;
    for (std::size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return {line, column};
}

/**
 * nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1, column 7: " prefix (we
 * print our own position), e.g. "syntax error while parsing value - invalid string: ill-formed UTF-8 byte; last
 * read: '"ab<FF>'". Control and non-ASCII bytes of the echoed input are written \xNN, so that a binary or non-UTF-8
 * file cannot garble the terminal or make the message itself invalid UTF-8.
 */
std::string parseErrorDetail(std::string_view what)
{
    const auto column = what.find(", column ");
    const auto colon = what.find(": ", column == std::string_view::npos ? 0 : column);
    if (colon != std::string_view::npos)
        what.remove_prefix(colon + 2);
    std::string detail;
    for (const char ch : what) {
        const auto byte = static_cast<unsigned char>(ch);
        if (byte < 0x20 || byte >= 0x7f) {
            static constexpr char kHex[] = "0123456789ABCDEF";
            detail += "\\x";
            detail += kHex[byte >> 4];
            detail += kHex[byte & 0xf];
        } else {
            detail += ch;
        }
    }
    return detail;
}

} // namespace

nlohmann::json parseJson(std::string_view text, std::string_view origin)
{
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        throw InputError(cat(origin, ": file is empty"), "expected a JSON document");
    // Every JSON input comes through here: bounded before any value is built, so nothing downstream (copies,
    // comparisons, messages quoting a value) can recurse deeper than kMaxJsonNesting.
    if (const auto excess = findJsonNestingExcess(text)) {
        const auto [line, column] = lineColumn(text, excess->offset);
        throw InputError(cat(origin, ":", line, ":", column, ": JSON nested more than ", excess->limit,
                             " levels deep (no Shardscape input nests more than about 6)"),
                         "is this the right file? Its brackets may not be closed where they should be");
    }
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& error) {
        // nlohmann reports the byte after the offending token; step back so the column points at it.
        const std::size_t offset = error.byte > 0 ? error.byte - 1 : 0;
        const auto [line, column] = lineColumn(text, offset);
        const std::string detail = parseErrorDetail(error.what());
        throw InputError(cat(origin, ":", line, ":", column, ": malformed JSON: ", detail),
                         "fix the syntax at that line and column");
    } catch (const nlohmann::json::exception& error) {
        // e.g. a number literal like 1e999 that overflows a double
        throw InputError(cat(origin, ": invalid JSON value: ", error.what()), "check the numbers in the file");
    }
}

nlohmann::json readJsonFile(const std::filesystem::path& path)
{
    return parseJson(readTextFile(path), path.string());
}

} // namespace shardscape
