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
        // The update still waiting in the mailbox takes the newer figures of its phase.
        std::lock_guard stateLock(m_state->mutex);
        if (m_state->waiting && m_state->waiting->phase == phase) {
            m_state->waiting->done = done;
            m_state->waiting->total = total;
            return;
        }
        auto update = std::make_shared<Update>();
        update->phase = phase;
        update->done = done;
        update->total = total;
        m_state->waiting = update;
        ++m_posted;
        m_mailbox.post([handler = m_onProgress, state = m_state, update] {
            std::string phaseNow;
            std::uint64_t doneNow = 0;
            std::uint64_t totalNow = 0;
            {
                std::lock_guard guard(state->mutex);
                if (state->waiting == update)
                    state->waiting.reset();
                phaseNow = update->phase;
                doneNow = update->done;
                totalNow = update->total;
            }
            handler(QString::fromStdString(phaseNow), doneNow, totalNow);
        });
    }
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
