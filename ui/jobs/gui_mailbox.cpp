// SPDX-License-Identifier: MIT
#include "jobs/gui_mailbox.h"

#include <utility>

namespace shardscape::ui {

GuiMailbox::GuiMailbox(QObject* context)
{
    // 10 ms: progress and results arrive well inside a frame, and a cancel is seen within the 100 ms promised.
    m_timer.setInterval(10);
    QObject::connect(&m_timer, &QTimer::timeout, context, [this] { drain(); });
}

void GuiMailbox::post(std::function<void()> call)
{
    std::lock_guard lock(m_mutex);
    m_calls.push_back(std::move(call));
}

void GuiMailbox::hold()
{
    if (m_holds++ == 0)
        m_timer.start();
}

void GuiMailbox::release()
{
    if (m_holds == 0 || --m_holds > 0)
        return;
    m_timer.stop();
    runPending(); // what the last worker posted before it finished
}

void GuiMailbox::drain()
{
    runPending();
    if (m_onDrained)
        m_onDrained();
}

void GuiMailbox::runPending()
{
    // One call at a time, taken under the lock and run outside it: a call may post, start a job or open a dialog
    // whose event loop drains again, and the calls still keep their order.
    for (;;) {
        std::function<void()> call;
        {
            std::lock_guard lock(m_mutex);
            if (m_calls.empty())
                break;
            call = std::move(m_calls.front());
            m_calls.pop_front();
        }
        call();
    }
}

} // namespace shardscape::ui
