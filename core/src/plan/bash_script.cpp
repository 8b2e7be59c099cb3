// SPDX-License-Identifier: MIT
// The bash reader behind expandedCommands: a lexer that cuts the text into commands of words (with each part's
// quoting), and a shell that keeps the variables and arrays assigned so far and expands each command's words.
#include "bash_script.h"

#include "import_helpers.h"

#include "shardscape/support/strings.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

namespace shardscape::importing {

namespace {

struct Segment
{
    std::string text;
    bool expand = true; ///< $ expansions apply (not inside '...')
    bool split = true; ///< unquoted: expansions are split into words
};

struct Word
{
    std::vector<Segment> parts;
    int line = 0;
};

struct Command
{
    std::vector<Word> words;
    std::string array; ///< NAME for NAME=( words ), else empty
    int line = 0;
};

bool isIdentifier(std::string_view s)
{
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
        return false;
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

class Lexer
{
public:
    Lexer(std::string_view text, std::string_view origin)
        : m_text(text)
        , m_origin(origin)
    {
    }

    std::vector<Command> commands()
    {
        while (m_pos < m_text.size())
            step();
        endCommand();
        return std::move(m_commands);
    }

private:
    void step()
    {
        const char ch = m_text[m_pos];
        const char next = m_pos + 1 < m_text.size() ? m_text[m_pos + 1] : '\0';
        if (ch == '\\' && next == '\n') { // line continuation
            m_pos += 2;
            ++m_line;
        } else if (ch == '\\' && next != '\0') {
            append(std::string(1, next), false, false);
            m_pos += 2;
        } else if (ch == '\n') {
            ++m_line;
            ++m_pos;
            if (m_command.array.empty())
                endCommand();
            else
                endWord();
        } else if ((ch == ';' || ch == '|' || ch == '&') && m_command.array.empty()) {
            endCommand();
            ++m_pos;
        } else if (ch == ' ' || ch == '\t' || ch == '\r') {
            endWord();
            ++m_pos;
        } else if (ch == '#' && !m_inWord) {
            while (m_pos < m_text.size() && m_text[m_pos] != '\n')
                ++m_pos;
        } else if (ch == '(' && m_inWord && m_word.parts.size() == 1 && m_word.parts[0].split
                   && endsWith(m_word.parts[0].text, "=")
                   && isIdentifier(std::string_view(m_word.parts[0].text).substr(0, m_word.parts[0].text.size() - 1))) {
            m_command.array = m_word.parts[0].text.substr(0, m_word.parts[0].text.size() - 1);
            m_command.line = m_word.line;
            m_word = {};
            m_inWord = false;
            ++m_pos;
        } else if (ch == ')' && !m_command.array.empty()) {
            endWord();
            endCommand();
            ++m_pos;
        } else if (ch == '\'') {
            const auto end = m_text.find('\'', m_pos + 1);
            if (end == std::string_view::npos)
                fail(m_origin, m_line, "unterminated '...' quote");
            const std::string_view quoted = m_text.substr(m_pos + 1, end - m_pos - 1);
            append(std::string(quoted), false, false);
            m_line += static_cast<int>(std::count(quoted.begin(), quoted.end(), '\n'));
            m_pos = end + 1;
        } else if (ch == '"') {
            doubleQuoted();
        } else if (ch == '$' && (next == '(' || next == '{')) {
            // $( ... ) stays literal (not run); ${ ... } is expanded later. Either way, copy the balanced text.
            const char open = next;
            const char close = open == '(' ? ')' : '}';
            std::size_t end = m_pos + 1;
            int depth = 0;
            for (; end < m_text.size(); ++end) {
                if (m_text[end] == open)
                    ++depth;
                else if (m_text[end] == close && --depth == 0)
                    break;
            }
            if (end >= m_text.size())
                fail(m_origin, m_line, cat("unterminated $", open));
            append(std::string(m_text.substr(m_pos, end - m_pos + 1)), open == '{', true);
            m_pos = end + 1;
        } else {
            append(std::string(1, ch), true, true);
            ++m_pos;
        }
    }

    void doubleQuoted()
    {
        std::string text;
        std::size_t i = m_pos + 1;
        const int startLine = m_line;
        for (; i < m_text.size() && m_text[i] != '"'; ++i) {
            const char ch = m_text[i];
            if (ch == '\\' && i + 1 < m_text.size()) {
                const char escaped = m_text[i + 1];
                if (escaped == '\n') {
                    ++m_line;
                } else if (escaped == '"' || escaped == '\\' || escaped == '`') {
                    text += escaped;
                } else if (escaped == '$') {
                    text += "\\$"; // kept escaped so that expansion leaves it alone
                } else {
                    text += ch;
                    text += escaped;
                }
                ++i;
                continue;
            }
            if (ch == '\n')
                ++m_line;
            text += ch;
        }
        if (i >= m_text.size())
            fail(m_origin, startLine, "unterminated \"...\" quote");
        append(text, true, false);
        m_pos = i + 1;
    }

    void append(const std::string& text, bool expand, bool split)
    {
        if (!m_inWord) {
            m_inWord = true;
            m_word.line = m_line;
        }
        if (!m_word.parts.empty() && m_word.parts.back().expand == expand && m_word.parts.back().split == split)
            m_word.parts.back().text += text;
        else
            m_word.parts.push_back({text, expand, split});
    }

    void endWord()
    {
        if (!m_inWord)
            return;
        if (m_command.words.empty() && m_command.array.empty())
            m_command.line = m_word.line;
        m_command.words.push_back(std::move(m_word));
        m_word = {};
        m_inWord = false;
    }

    void endCommand()
    {
        endWord();
        if (!m_command.words.empty() || !m_command.array.empty())
            m_commands.push_back(std::move(m_command));
        m_command = {};
    }

    std::string_view m_text;
    std::string_view m_origin;
    std::size_t m_pos = 0;
    int m_line = 1;
    bool m_inWord = false;
    Word m_word;
    Command m_command;
    std::vector<Command> m_commands;
};

using Token = ScriptToken;

/**
 * How deep ${NAME:-default} defaults may nest. Launch scripts nest one or two; each level is expanded by a nested
 * call, so a file of 100,000 nested defaults overflowed the stack (SIGSEGV).
 */
constexpr int kMaxDefaultNesting = 32;

class Shell
{
public:
    explicit Shell(std::string_view origin)
        : m_origin(origin)
    {
    }

    /**
     * $NAME, ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:=default}, ${NAME[@]}; unknown ones stay as text.
     * `depth` counts the ${...} defaults this text is inside.
     */
    std::string expand(std::string_view s, int depth = 0) const
    {
        if (depth > kMaxDefaultNesting)
            fail(m_origin, m_line, cat("a ${NAME:-default} is nested more than ", kMaxDefaultNesting, " levels deep"),
                 "launch scripts nest defaults one or two levels: is this the right file?");
        std::string out;
        for (std::size_t i = 0; i < s.size(); ++i) {
            if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '$') {
                out += '$';
                ++i;
                continue;
            }
            if (s[i] != '$' || i + 1 >= s.size()) {
                out += s[i];
                continue;
            }
            if (s[i + 1] == '{') {
                const auto close = matching(s, i + 1);
                if (close == std::string_view::npos) {
                    out += s.substr(i);
                    break;
                }
                out += braced(s.substr(i + 2, close - i - 2), s.substr(i, close - i + 1), depth);
                i = close;
            } else if (std::isalpha(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '_') {
                std::size_t end = i + 1;
                while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_'))
                    ++end;
                const std::string name(s.substr(i + 1, end - i - 1));
                out += lookup(name).value_or(std::string(s.substr(i, end - i)));
                i = end - 1;
            } else if (s[i + 1] == '@' || s[i + 1] == '*' || std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
                ++i; // the script's own arguments: none when read here
            } else {
                out += s[i];
            }
        }
        return out;
    }

    std::vector<Token> expandWord(const Word& word) const
    {
        m_line = word.line;
        // "$@", "${NAME[@]}" and their unquoted forms splice whole lists.
        if (word.parts.size() == 1) {
            const std::string& t = word.parts[0].text;
            if (word.parts[0].expand && (t == "$@" || t == "$*"))
                return {};
            if (word.parts[0].expand && startsWith(t, "${") && endsWith(t, "[@]}")) {
                const auto it = m_arrays.find(t.substr(2, t.size() - 6));
                if (it != m_arrays.end())
                    return it->second;
            }
        }
        std::vector<Token> fields {{std::string(), word.line}};
        bool quoted = false;
        for (const auto& part : word.parts) {
            const std::string text = part.expand ? expand(part.text) : part.text;
            quoted = quoted || !part.split;
            if (!part.split) {
                fields.back().text += text;
                continue;
            }
            std::size_t pos = 0;
            bool firstPiece = true;
            while (pos <= text.size()) {
                const auto space = text.find_first_of(" \t\n", pos);
                const std::string piece
                    = text.substr(pos, space == std::string::npos ? std::string::npos : space - pos);
                if (!firstPiece && !fields.back().text.empty())
                    fields.push_back({std::string(), word.line});
                fields.back().text += piece;
                firstPiece = false;
                if (space == std::string::npos)
                    break;
                pos = space + 1;
            }
        }
        if (!quoted)
            fields.erase(std::remove_if(fields.begin(), fields.end(), [](const Token& t) { return t.text.empty(); }),
                         fields.end());
        return fields;
    }

    /** Runs assignments; returns the expanded words of any other command. */
    std::vector<Token> run(const Command& command)
    {
        if (!command.array.empty()) {
            std::vector<Token> items;
            for (const auto& word : command.words)
                for (auto& token : expandWord(word))
                    items.push_back(std::move(token));
            m_arrays[command.array] = std::move(items);
            return {};
        }
        std::size_t first = 0;
        if (!command.words.empty() && command.words[0].parts.size() == 1) {
            const std::string& w = command.words[0].parts[0].text;
            if (w == "export" || w == "local" || w == "declare" || w == "readonly")
                first = 1;
        }
        // Leading NAME=value words are assignments (for the rest of the script, as far as we are concerned).
        while (first < command.words.size()) {
            const Word& word = command.words[first];
            if (word.parts.empty() || !word.parts[0].split)
                break;
            const auto eq = word.parts[0].text.find('=');
            if (eq == std::string::npos || !isIdentifier(std::string_view(word.parts[0].text).substr(0, eq)))
                break;
            Word value = word;
            value.parts[0].text = word.parts[0].text.substr(eq + 1);
            m_line = word.line;
            std::string text;
            for (const auto& part : value.parts)
                text += part.expand ? expand(part.text) : part.text;
            m_vars[word.parts[0].text.substr(0, eq)] = text;
            ++first;
        }
        std::vector<Token> tokens;
        for (std::size_t i = first; i < command.words.size(); ++i)
            for (auto& token : expandWord(command.words[i]))
                tokens.push_back(std::move(token));
        return tokens;
    }

private:
    static std::size_t matching(std::string_view s, std::size_t open)
    {
        int depth = 0;
        for (std::size_t i = open; i < s.size(); ++i) {
            if (s[i] == '{')
                ++depth;
            else if (s[i] == '}' && --depth == 0)
                return i;
        }
        return std::string_view::npos;
    }

    std::optional<std::string> lookup(const std::string& name) const
    {
        if (const auto it = m_vars.find(name); it != m_vars.end())
            return it->second;
        return std::nullopt;
    }

    std::string braced(std::string_view inner, std::string_view whole, int depth) const
    {
        if (endsWith(inner, "[@]") || endsWith(inner, "[*]")) {
            const auto it = m_arrays.find(std::string(inner.substr(0, inner.size() - 3)));
            if (it == m_arrays.end())
                return std::string(whole);
            std::vector<std::string> items;
            for (const auto& t : it->second)
                items.push_back(t.text);
            return join(items, " ");
        }
        std::size_t end = 0;
        while (end < inner.size() && (std::isalnum(static_cast<unsigned char>(inner[end])) || inner[end] == '_'))
            ++end;
        const std::string name(inner.substr(0, end));
        const std::string_view op = inner.substr(end);
        const auto value = lookup(name);
        if (op.empty())
            return value.value_or(std::string(whole));
        for (const std::string_view prefix : {":-", ":=", "-", "="}) {
            if (startsWith(op, prefix)) {
                const bool colon = prefix.front() == ':';
                if (value && (!colon || !value->empty()))
                    return *value;
                return expand(op.substr(prefix.size()), depth + 1);
            }
        }
        return std::string(whole);
    }

    std::string_view m_origin;
    mutable int m_line = 0; ///< the line of the word being expanded, for messages
    std::map<std::string, std::string> m_vars;
    std::map<std::string, std::vector<Token>> m_arrays;
};

} // namespace

std::vector<std::vector<ScriptToken>> expandedCommands(std::string_view text, std::string_view origin)
{
    Lexer lexer(text, origin);
    Shell shell(origin);
    std::vector<std::vector<ScriptToken>> commands;
    for (const auto& command : lexer.commands())
        commands.push_back(shell.run(command));
    return commands;
}

} // namespace shardscape::importing
