// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>
#include <QTimer>

#include <deque>
#include <functional>
#include <mutex>

namespace shardscape::ui {

/**
 * Calls that worker threads hand to the GUI thread, run there in the order they were posted. Qt's queued calls would
 * do the same, but they cross threads through futexes inside libQt6Core that ThreadSanitizer cannot see, so TSan
 * reports every object they carry; this queue is a std::mutex, which TSan sees, so a TSan run checks our hand-offs
 * instead of drowning in Qt's. The owner's thread drains it on a 10 ms timer that runs only while someone holds the
 * mailbox open (a running worker), so an idle GUI is not woken. Calls still queued when the mailbox dies are dropped.
 */
class GuiMailbox
{
public:
    /** `context`: the thread that runs the calls (the one constructing the mailbox) and a bound on their lifetime. */
    explicit GuiMailbox(QObject* context);
    GuiMailbox(const GuiMailbox&) = delete;
    GuiMailbox& operator=(const GuiMailbox&) = delete;

    /** Any thread: queues `call` for the owner's thread. */
    void post(std::function<void()> call);

    /**
     * Owner's thread: keep draining until the matching release(), one per worker that may post. The last release()
     * runs what is still queued, so a worker's final post is delivered even when it lands after the last tick.
     */
    void hold();
    void release();

    /** Owner's thread: after each timer tick's calls (JobTracker reaps its finished workers there). */
    void setOnDrained(std::function<void()> onDrained) { m_onDrained = std::move(onDrained); }

private:
    void drain();
    /** Runs every queued call. Reentrant: a call that spins an event loop (a dialog) still keeps the order. */
    void runPending();

    QTimer m_timer;
    std::function<void()> m_onDrained;
    int m_holds = 0;
    std::mutex m_mutex;
    std::deque<std::function<void()>> m_calls;
};

} // namespace shardscape::ui
