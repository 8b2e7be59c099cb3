// SPDX-License-Identifier: MIT
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace shardscape::cli {

/** A plain-text table with right-aligned numeric columns, for terminal output. */
class TextTable
{
public:
    enum class Align
    {
        Left,
        Right
    };
    void addColumn(std::string title, Align align);
    void addRow(std::vector<std::string> cells);
    void print(std::ostream& out) const;

private:
    std::vector<std::string> m_titles;
    std::vector<Align> m_aligns;
    std::vector<std::vector<std::string>> m_rows;
};

} // namespace shardscape::cli
