// SPDX-License-Identifier: MIT
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <deque>
#include <functional>

namespace shardscape::ui {

/**
 * GUI updates run one at a time, each in a quiet pass of the event loop. Updating a chart is only half its cost:
 * QtCharts lays the chart out and the window repaints in the passes that follow, so updates posted back to back
 * stack their own time on the previous one's layout and repaint (30-45 ms passes on a 2-core laptop). A zero
 * timer ticks once per pass; a step runs only when the pass before it was quiet (no other work over
 * kQuietMs), or after kMaxWaits busy passes, so a busy loop still makes progress.
 */
class IdleSteps : public QObject
{
    Q_OBJECT
public:
    static constexpr double kQuietMs = 4;
    static constexpr int kMaxWaits = 8;

    explicit IdleSteps(QObject* parent = nullptr);

    /** Queues `step` under `key`. A step still queued under the same key is replaced in place: a newer update of
        the same view supersedes the older one and keeps its turn. */
    void post(int key, std::function<void()> step);
    /** Queues `step` under `key` behind every other queued step, dropping one still queued under that key (a step
        that must follow the others, such as announcing that they are done). */
    void postLast(int key, std::function<void()> step);
    /** Runs the step queued under `key` now, out of turn (a cheap one the user must see at once). */
    void runNow(int key);
    /** Drops every queued step. */
    void clear();
    bool isEmpty() const { return m_steps.empty(); }

private:
    void tick();

    struct Step
    {
        int key;
        std::function<void()> run;
    };
    std::deque<Step> m_steps;
    QTimer m_timer;
    QElapsedTimer m_clock;
    qint64 m_lastTick = 0;
    int m_waited = 0;
};

} // namespace shardscape::ui
