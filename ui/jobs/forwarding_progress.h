// SPDX-License-Identifier: MIT
#pragma once

#include "jobs/gui_mailbox.h"
#include "shardscape/support/progress.h"

#include <QString>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace shardscape::ui {

/**
 * A ProgressSink that search threads call and that hands progress and log lines to the GUI thread through a
 * GuiMailbox. Throttled: a phase's progress is sent when the phase changes, when it finishes or when it moved by
 * at least 0.1% since the last one sent, so a million-candidate search posts at most about a thousand events.
 * Coalesced: while a phase's update waits in the mailbox, newer figures of the same phase overwrite it instead of
 * queueing behind it, so the GUI thread handles at most one update per phase per drain (dozens of queued updates
 * used to cost a 16-18 ms tick on a slow machine). Thread-safe. The mailbox must outlive the job (JobTracker joins
 * its workers before its mailbox goes).
 */
class ForwardingProgress final : public ProgressSink
{
public:
    using ProgressHandler = std::function<void(const QString& phase, quint64 done, quint64 total)>;
    using LogHandler = std::function<void(const QString& line)>;

    ForwardingProgress(GuiMailbox& mailbox, ProgressHandler onProgress, LogHandler onLog);

    void progress(const std::string& phase, std::uint64_t done, std::uint64_t total) override;
    void log(const std::string& line) override;

    /** Progress updates posted so far (tests check the throttle). */
    std::uint64_t postedCount() const;

private:
    /** One posted update: the GUI thread reads it when the call runs, so later figures can still land in it. */
    struct Update
    {
        std::string phase;
        std::uint64_t done = 0;
        std::uint64_t total = 0;
    };
    /** Shared with the posted calls, which may run after this sink is gone. */
    struct State
    {
        std::mutex mutex;
        std::shared_ptr<Update> waiting; ///< posted, not yet run
    };

    GuiMailbox& m_mailbox;
    ProgressHandler m_onProgress;
    LogHandler m_onLog;
    std::shared_ptr<State> m_state = std::make_shared<State>();
    mutable std::mutex m_mutex;
    std::string m_phase;
    std::uint64_t m_lastPermille = 0;
    std::uint64_t m_posted = 0;
};

} // namespace shardscape::ui
