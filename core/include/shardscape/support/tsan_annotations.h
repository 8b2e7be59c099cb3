// SPDX-License-Identifier: MIT
#pragma once

// ThreadSanitizer happens-before annotations for hand-offs that go through libraries not built with TSan (the
// system oneTBB and Qt): TSan cannot see their internal synchronisation (atomics and futexes compiled without
// instrumentation), so without these it reports every read of data handed to a worker as a race. Each annotation
// states an ordering the library guarantees; none hides an access of ours that the library does not order.
// No-ops outside TSan builds.

#include <utility>

#if defined(__SANITIZE_THREAD__)
#define SHARDSCAPE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHARDSCAPE_TSAN 1
#endif
#endif

#ifdef SHARDSCAPE_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace shardscape {

/** True in a ThreadSanitizer build, where every memory access is instrumented (5-15x slower). */
#ifdef SHARDSCAPE_TSAN
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

/** Everything this thread did so far happens before a later tsanAcquire(sync) on any thread. */
inline void tsanRelease([[maybe_unused]] const void* sync)
{
#ifdef SHARDSCAPE_TSAN
    __tsan_release(const_cast<void*>(sync));
#endif
}

/** Orders what follows after every earlier tsanRelease(sync). */
inline void tsanAcquire([[maybe_unused]] const void* sync)
{
#ifdef SHARDSCAPE_TSAN
    __tsan_acquire(const_cast<void*>(sync));
#endif
}

/**
 * A tbb::parallel_for body that tells TSan what oneTBB guarantees: the caller's work before parallel_for happens
 * before every body run, a body copy made by the thread that split a range happens before the thread that steals
 * it runs it (TBB's task-pool push/steal), task memory TBB recycles is handed over, and every body run happens
 * before parallel_for returns (the caller then calls joined()). Two body runs are never ordered by this, so
 * races between them are still reported.
 */
template<typename Body> class TsanForkJoinBody
{
public:
    TsanForkJoinBody(Body body, const void* join)
        : m_body((tsanAcquire(this), std::move(body)))
        , m_join(join)
    {
        tsanRelease(this);
    }
    TsanForkJoinBody(const TsanForkJoinBody& other)
        : m_body((tsanAcquire(this), tsanAcquire(&other), other.m_body))
        , m_join(other.m_join)
    {
        tsanRelease(this);
    }
    TsanForkJoinBody& operator=(const TsanForkJoinBody&) = delete;
    ~TsanForkJoinBody() { tsanRelease(this); }

    template<typename... Args> void operator()(Args&&... args) const
    {
        tsanAcquire(this);
        m_body(std::forward<Args>(args)...);
        tsanRelease(m_join);
    }

    /** Call after parallel_for returned: every body run happens before what follows. */
    void joined() const { tsanAcquire(m_join); }

private:
    Body m_body;
    const void* m_join;
};

} // namespace shardscape
