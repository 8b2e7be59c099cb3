// SPDX-License-Identifier: MIT
#include "jobs/forwarding_progress.h"

namespace shardscape::ui {

ForwardingProgress::ForwardingProgress(GuiMailbox& mailbox, ProgressHandler onProgress, LogHandler onLog)
    : m_mailbox(mailbox)
    , m_onProgress(std::move(onProgress))
    , m_onLog(std::move(onLog))
{
}

void ForwardingProgress::progress(const std::string& phase, std::uint64_t done, std::uint64_t total)
{
    const std::uint64_t permille = total > 0 ? done * 1000 / total : 0;
    {
        std::lock_guard lock(m_mutex);
        const bool samePhase = phase == m_phase;
        if (samePhase && permille == m_lastPermille && done != total)
            return;
        // Search threads report out of order: never step backwards within a phase.
        if (samePhase && permille < m_lastPermille)
            return;
        m_phase = phase;
        m_lastPermille = permille;
        ++m_posted;
    }
    m_mailbox.post(
        [handler = m_onProgress, text = QString::fromStdString(phase), done, total] { handler(text, done, total); });
}

void ForwardingProgress::log(const std::string& line)
{
    m_mailbox.post([handler = m_onLog, text = QString::fromStdString(line)] { handler(text); });
}

std::uint64_t ForwardingProgress::postedCount() const
{
    std::lock_guard lock(m_mutex);
    return m_posted;
}

} // namespace shardscape::ui
