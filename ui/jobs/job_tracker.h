// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/support/error.h"
#include "shardscape/support/tsan_annotations.h"

#include <QFuture>
#include <QMetaObject>
#include <QObject>
#include <QString>
#include <QThreadPool>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>
#include <optional>
#include <stop_token>
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
 * arrival. Work runs on the tracker's own thread pool with QtConcurrent::run and continues with `.then(context, ...)`
 * so outcomes land on the context's (GUI) thread and die with it. Not copyable; lives as a member of its context.
 */
class JobTracker
{
public:
    explicit JobTracker(QObject* context)
        : m_context(context)
    {
        // A cancelled job may still be winding down (< 100 ms) while its successor starts.
        m_pool.setMaxThreadCount(4);
    }
    ~JobTracker()
    {
        // Stop and wait for the workers: once they have returned, their continuations are queued events of the
        // context, which Qt discards when the context is destroyed right after us.
        discard();
        m_pool.waitForDone();
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
        m_stop.request_stop();
        m_stop = std::stop_source {};
        const quint64 generation = ++m_generation;
        m_running = true;
        // Qt hands the work to the pool and the outcome back through futexes TSan cannot see (libQt6Core is not
        // instrumented): state the orders QThreadPool and QFuture guarantee, GUI -> worker -> continuation.
        const void* sync = &m_pool;
        tsanRelease(sync);
        QFuture<JobOutcome<Result>> future
            = QtConcurrent::run(&m_pool, [work = std::move(work), stop = m_stop.get_token(), sync]() mutable {
                  tsanAcquire(sync);
                  JobOutcome<Result> outcome;
                  try {
                      outcome.value.emplace(work(stop));
                  } catch (const InputError& e) {
                      outcome.error = QString::fromStdString(e.message());
                  } catch (const std::exception& e) {
                      outcome.error = QStringLiteral("internal error: %1 (please report it with the inputs)")
                                          .arg(QString::fromStdString(e.what()));
                  }
                  outcome.cancelled = stop.stop_requested();
                  // The continuation attached meanwhile may run right here, on this worker.
                  tsanAcquire(sync);
                  tsanRelease(sync);
                  return outcome;
              });
        auto deliver = [this, generation, done = std::move(done)](JobOutcome<Result> outcome) mutable {
            if (generation != m_generation)
                return; // a newer request was made: this answer is stale
            m_running = false;
            done(std::move(outcome));
        };
        m_starting = true;
        future.then(m_context, [this, sync, deliver = std::move(deliver)](JobOutcome<Result> outcome) mutable {
            tsanAcquire(sync);
            // A job that finished before .then() was attached continues right here, inside start(): post it, so
            // that every answer arrives after start() has returned (and after its "started" signal).
            if (m_starting)
                QMetaObject::invokeMethod(
                    m_context,
                    [deliver = std::move(deliver), outcome = std::move(outcome)]() mutable {
                        deliver(std::move(outcome));
                    },
                    Qt::QueuedConnection);
            else
                deliver(std::move(outcome));
            tsanRelease(sync); // the worker may free this continuation
        });
        m_starting = false;
        tsanRelease(sync); // the continuation just attached runs on the worker when the job is still running
        return generation;
    }

    /** Asks the running job to stop (it returns within 100 ms); its outcome still arrives, marked cancelled. */
    void cancel() { m_stop.request_stop(); }

    /** Stops the running job and drops its outcome, whatever it is. */
    void discard()
    {
        m_stop.request_stop();
        ++m_generation;
        m_running = false;
    }

    /** True from start() until the latest request's outcome has been delivered (or discarded). */
    bool isRunning() const { return m_running; }

    /** The latest request's generation: progress of older ones is stale too. */
    quint64 generation() const { return m_generation; }

    /** Blocks until every worker has returned (tests and shutdown only). */
    void waitForWorkers() { m_pool.waitForDone(); }

private:
    QObject* m_context;
    QThreadPool m_pool;
    std::stop_source m_stop;
    quint64 m_generation = 0;
    bool m_running = false;
    bool m_starting = false; ///< inside start(), attaching the continuation
};

} // namespace shardscape::ui
