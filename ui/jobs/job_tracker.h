// SPDX-License-Identifier: MIT
#pragma once

#include "jobs/gui_mailbox.h"
#include "shardscape/support/error.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <exception>
#include <list>
#include <memory>
#include <optional>
#include <stop_token>
#include <thread>
#include <type_traits>
#include <utility>

namespace shardscape::ui {

/** What a background job produced: a value, or an error text (cause and way out), and whether it was cancelled. */
template<typename T> struct JobOutcome
{
    std::optional<T> value;
    QString error;
    bool cancelled = false;
};

/**
 * Runs one kind of background work at a time, latest request wins (hotspot's JobTracker): every start() gets a new
 * generation and asks the previous job to stop; an outcome whose generation is no longer current is dropped on
 * arrival. Each job runs on its own std::thread and hands its outcome to the context's (GUI) thread through a
 * GuiMailbox, so it always arrives after start() has returned. Plain threads and a mutex, not QtConcurrent: every
 * hand-off is one ThreadSanitizer can check. Not copyable; lives as a member of its context.
 */
class JobTracker
{
public:
    explicit JobTracker(QObject* context)
        : m_mailbox(context)
    {
        m_mailbox.setOnDrained([this] { reapFinished(); });
    }
    ~JobTracker()
    {
        // A cancelled job returns within 100 ms; what it posts dies with the mailbox, undelivered.
        for (Worker& worker : m_workers)
            worker.stop.request_stop();
        for (Worker& worker : m_workers)
            worker.thread.join();
    }
    JobTracker(const JobTracker&) = delete;
    JobTracker& operator=(const JobTracker&) = delete;

    /**
     * Starts `work(std::stop_token)` off the GUI thread; `done(JobOutcome<R>)` runs on the context's thread when
     * this is still the latest request. InputError becomes the outcome's error text (its message(): cause and way
     * out); any other exception an "internal error". Returns the request's generation.
     */
    template<typename Work, typename Done> quint64 start(Work work, Done done)
    {
        using Result = std::invoke_result_t<Work&, std::stop_token>;
        cancel();
        const quint64 generation = ++m_generation;
        m_running = true;
        auto deliver = [this, generation, done = std::move(done)](JobOutcome<Result> outcome) mutable {
            if (generation != m_generation)
                return; // a newer request was made: this answer is stale
            m_running = false;
            done(std::move(outcome));
        };
        Worker& worker = m_workers.emplace_back();
        m_mailbox.hold();
        worker.thread = std::thread([&mailbox = m_mailbox, work = std::move(work), deliver = std::move(deliver),
                                     stop = worker.stop.get_token(), &finished = worker.finished]() mutable {
            auto outcome = std::make_shared<JobOutcome<Result>>(run(work, stop));
            mailbox.post([deliver = std::move(deliver), outcome]() mutable { deliver(std::move(*outcome)); });
            finished.store(true, std::memory_order_release);
        });
        return generation;
    }

    /** Asks the running job to stop (it returns within 100 ms); its outcome still arrives, marked cancelled. */
    void cancel()
    {
        if (!m_workers.empty())
            m_workers.back().stop.request_stop();
    }

    /** Stops the running job and drops its outcome, whatever it is. */
    void discard()
    {
        cancel();
        ++m_generation;
        m_running = false;
    }

    /** True from start() until the latest request's outcome has been delivered (or discarded). */
    bool isRunning() const { return m_running; }

    /** The latest request's generation: progress of older ones is stale too. */
    quint64 generation() const { return m_generation; }

    /** Where workers post progress for the GUI thread (ForwardingProgress); open while any worker runs. */
    GuiMailbox& mailbox() { return m_mailbox; }

private:
    struct Worker
    {
        std::thread thread;
        std::stop_source stop;
        std::atomic<bool> finished {false}; ///< set by the thread as it returns; the Worker outlives it (joined first)
    };

    template<typename Work, typename Result = std::invoke_result_t<Work&, std::stop_token>>
    static JobOutcome<Result> run(Work& work, const std::stop_token& stop)
    {
        JobOutcome<Result> outcome;
        try {
            outcome.value.emplace(work(stop));
        } catch (const InputError& e) {
            outcome.error = QString::fromStdString(e.message());
        } catch (const std::exception& e) {
            outcome.error = QStringLiteral("internal error: %1 (please report it with the inputs)")
                                .arg(QString::fromStdString(e.what()));
        } catch (...) {
            outcome.error = QStringLiteral("internal error: an unknown exception (please report it with the inputs)");
        }
        outcome.cancelled = stop.stop_requested();
        return outcome;
    }

    /** GUI thread, after each mailbox tick: joins the workers that have returned (their last post is queued). */
    void reapFinished()
    {
        for (auto it = m_workers.begin(); it != m_workers.end();) {
            if (!it->finished.load(std::memory_order_acquire)) {
                ++it;
                continue;
            }
            it->thread.join();
            it = m_workers.erase(it);
            m_mailbox.release();
        }
    }

    GuiMailbox m_mailbox; ///< declared first: the workers are joined (destructor body) before it goes
    std::list<Worker> m_workers;
    quint64 m_generation = 0;
    bool m_running = false;
};

} // namespace shardscape::ui
