// SPDX-License-Identifier: MIT
#include "widgets/idle_steps.h"

#include <algorithm>
#include <utility>

namespace shardscape::ui {

IdleSteps::IdleSteps(QObject* parent)
    : QObject(parent)
{
    m_timer.setInterval(0);
    connect(&m_timer, &QTimer::timeout, this, &IdleSteps::tick);
    m_clock.start();
}

void IdleSteps::post(int key, std::function<void()> step)
{
    const auto queued = std::find_if(m_steps.begin(), m_steps.end(), [key](const Step& s) { return s.key == key; });
    if (queued != m_steps.end()) {
        queued->run = std::move(step);
        return;
    }
    m_steps.push_back({key, std::move(step)});
    if (!m_timer.isActive()) {
        // The rest of the caller's own event counts as busy: the first step waits for a quiet pass too.
        m_lastTick = m_clock.nsecsElapsed();
        m_waited = 0;
        m_timer.start();
    }
}

void IdleSteps::postLast(int key, std::function<void()> step)
{
    const auto queued = std::find_if(m_steps.begin(), m_steps.end(), [key](const Step& s) { return s.key == key; });
    if (queued != m_steps.end())
        m_steps.erase(queued);
    post(key, std::move(step));
}

void IdleSteps::runNow(int key)
{
    const auto queued = std::find_if(m_steps.begin(), m_steps.end(), [key](const Step& s) { return s.key == key; });
    if (queued == m_steps.end())
        return;
    std::function<void()> run = std::move(queued->run);
    m_steps.erase(queued);
    if (m_steps.empty())
        m_timer.stop();
    run();
}

void IdleSteps::clear()
{
    m_steps.clear();
    m_timer.stop();
}

void IdleSteps::tick()
{
    const qint64 now = m_clock.nsecsElapsed();
    const double passMs = static_cast<double>(now - m_lastTick) / 1e6;
    m_lastTick = now;
    if (m_steps.empty()) {
        m_timer.stop();
        return;
    }
    if (passMs > kQuietMs && m_waited < kMaxWaits) {
        ++m_waited;
        return;
    }
    m_waited = 0;
    std::function<void()> run = std::move(m_steps.front().run);
    m_steps.pop_front();
    if (m_steps.empty())
        m_timer.stop();
    run();
    // The step's own time is not the loop's: the next pass is judged on what ran besides it.
    m_lastTick = m_clock.nsecsElapsed();
}

} // namespace shardscape::ui
