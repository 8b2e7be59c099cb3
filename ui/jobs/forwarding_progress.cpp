// SPDX-License-Identifier: MIT
#include "jobs/forwarding_progress.h"

#include "shardscape/support/tsan_annotations.h"

#include <QMetaObject>

namespace shardscape::ui {

namespace {

/**
 * Posts `call` to the receiver's thread. The queued event crosses threads through Qt's futexes, which TSan cannot
 * see: release after building the call and after posting it, acquire where it runs.
 */
template<typename Call> void post(QObject* receiver, Call call)
{
    static const char sync = 0;
    auto ordered = [call = std::move(call)]() mutable {
        tsanAcquire(&sync);
        call();
    };
    tsanRelease(&sync);
    QMetaObject::invokeMethod(receiver, std::move(ordered), Qt::QueuedConnection);
    tsanRelease(&sync);
}

} // namespace

ForwardingProgress::ForwardingProgress(QObject* receiver, ProgressHandler onProgress, LogHandler onLog)
    : m_receiver(receiver)
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
    post(m_receiver,
         [handler = m_onProgress, text = QString::fromStdString(phase), done, total] { handler(text, done, total); });
}

void ForwardingProgress::log(const std::string& line)
{
    post(m_receiver, [handler = m_onLog, text = QString::fromStdString(line)] { handler(text); });
}

std::uint64_t ForwardingProgress::postedCount() const
{
    std::lock_guard lock(m_mutex);
    return m_posted;
}

} // namespace shardscape::ui
