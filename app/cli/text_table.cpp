// SPDX-License-Identifier: MIT
#include "text_table.h"

#include <algorithm>
#include <ostream>

namespace shardscape::cli {

void TextTable::addColumn(std::string title, Align align)
{
    m_titles.push_back(std::move(title));
    m_aligns.push_back(align);
}

void TextTable::addRow(std::vector<std::string> cells)
{
    cells.resize(m_titles.size());
    m_rows.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out) const
{
    std::vector<std::size_t> widths(m_titles.size());
    for (std::size_t c = 0; c < m_titles.size(); ++c) {
        widths[c] = m_titles[c].size();
        for (const auto& row : m_rows)
            widths[c] = std::max(widths[c], row[c].size());
    }
    const auto printRow = [&](const std::vector<std::string>& cells) {
        std::string line;
        for (std::size_t c = 0; c < cells.size(); ++c) {
            const std::string pad(widths[c] - cells[c].size(), ' ');
            line += m_aligns[c] == Align::Right ? pad + cells[c] : cells[c] + pad;
            if (c + 1 < cells.size())
                line += "  ";
        }
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        out << line << '\n';
    };
    printRow(m_titles);
    std::vector<std::string> rule;
    for (const auto w : widths)
        rule.emplace_back(w, '-');
    printRow(rule);
    for (const auto& row : m_rows)
        printRow(row);
}

} // namespace shardscape::cli
