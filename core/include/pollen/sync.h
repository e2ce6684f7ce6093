/* pollen/sync.h: notify, oneshot, bounded mpsc channel, mutex, semaphore.
 *
 * Common rules for everything in this header:
 *  - Single-threaded: every function is for the executor's thread, and
 *    may be called from inside a poll or from plain code on that thread
 *    (for example between pl_run calls). Nothing here blocks or allocates
 *    (except pl_mpsc_init), and only pl_notify calls the observer (its
 *    waiters' parks and drops, its broadcasts: pl_observer.signal, with
 *    which a simulator tells a task that missed a broadcast).
 *  - Primitives (pl_notify, pl_mutex, ...) are caller-allocated and
 *    initialised in place with pl_<type>_init. Those holding a waiter list
 *    must not move after init.
 *  - Futures (pl_notified, pl_mutex_lock, ...) are values built by
 *    pl_<future>_make: lazy, registering nothing until their first poll.
 *    They may be moved (copied) freely before their first poll and must
 *    not move after it, until READY or pl_drop. The primitive must
 *    outlive every future built on it.
 *  - A waiting future stores a clone of the latest poll's waker and
 *    replaces it when the waker's identity changes (pl_waker_will_wake),
 *    so only the most recent waker is ever woken. Spurious polls are
 *    harmless: they refresh the waker and return PL_PENDING.
 *  - Waiter queues are FIFO and intrusive: the node lives in the future.
 *  - A future that returned PL_READY holds nothing: pl_drop on it is
 *    allowed and does nothing. Dropping a future that has not completed
 *    is always allowed and never loses a wakeup: what it was handed
 *    (a notification, a lock, permits, a channel slot) is passed on.
 *  - Leaf futures here keep their state in base.resume (they are not
 *    coroutines); callers never touch it.
 *  - Contract violations (unlocking an unlocked mutex, sending twice on a
 *    oneshot...) are assertions, not error codes.
 *  - Every waiting future declares its wait condition on each PENDING
 *    (pl_wait_declare, future.h; nothing is built in production). The
 *    subject is the waiting future itself, and the condition is exactly
 *    "this future would complete on its next poll": it reads false once
 *    the future completed or was dropped, and for a waiter that the
 *    primitive's FIFO rules serve after others. Under the simulator a
 *    parked task whose condition holds is a lost_wakeup finding. Each
 *    primitive below says what it declares; the file:line is the
 *    primitive's own for now. Because the declaration points at the
 *    future, under the simulator a future that returned PENDING must stay
 *    allocated until its task's next poll, even once dropped: keep
 *    waiting futures in the task's own memory, as the combinators and
 *    the coroutine macros do.
 */
#ifndef POLLEN_SYNC_H
#define POLLEN_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/error.h"
#include "pollen/future.h"
#include "pollen/waker.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Internal: an intrusive list link, embedded in the structs below.
 * Do not touch. {NULL, NULL} means unlinked. */
typedef struct pl_list_node {
    struct pl_list_node *next;
    struct pl_list_node *prev;
} pl_list_node;

/* ---- Notify -----------------------------------------------------------
 * A wake-up signal with at most one stored permit (tokio's Notify).
 *
 * Wake semantics:
 *  - pl_notify_one: if futures are waiting, the one that waited longest
 *    (FIFO by first poll) is chosen: unlinked, marked notified and its
 *    waker woken. Otherwise one permit is stored; a second call while a
 *    permit is stored stores nothing more (permits never exceed one).
 *  - pl_notify_waiters: every future waiting at the time of the call
 *    (polled at least once, not yet notified) is notified and woken, in
 *    FIFO order. No permit is stored and a stored permit is left as is.
 *    Futures that start waiting during the call are not notified.
 *  - pl_notified, first poll: consumes the stored permit and is READY,
 *    or joins the back of the queue and returns PL_PENDING. Later polls:
 *    READY once notified, otherwise refresh the waker and PL_PENDING.
 *  - Dropping a waiting pl_notified unlinks it. Dropping one chosen by
 *    pl_notify_one before it returned READY passes the notification on,
 *    exactly as if pl_notify_one were called again: the next waiter is
 *    notified, or the permit is stored. A notification from
 *    pl_notify_waiters is not passed on.
 *  - A stored permit implies no waiter: a waiter never sees a permit
 *    it did not take at its first poll.
 *  - Declares: object "notify", condition "a notification or a stored
 *    permit". Holds once pl_notify_one chose the waiter or
 *    pl_notify_waiters released it (not yet polled). A waiter that
 *    registered after a pl_notify_waiters does not hold: the broadcast
 *    stored nothing for it.
 */
typedef struct pl_notify {
    pl_list_node waiters; /* private: pl_notified nodes, FIFO */
    uint32_t permit;      /* private: 0 or 1 */
    uint32_t reserved;    /* private: zero, so no byte is padding */
} pl_notify;

/* Static initialiser: `pl_notify n = PL_NOTIFY_INIT(n);`. */
#define PL_NOTIFY_INIT(name) {{&(name).waiters, &(name).waiters}, 0, 0}

/* Initialises `n` in place: no waiter, no permit. `n` must not move
 * afterwards. Nothing to finish: a notify with no waiter holds nothing. */
void pl_notify_init(pl_notify *n);

/* Wakes the longest-waiting future or stores the permit (see above). */
void pl_notify_one(pl_notify *n);

/* Wakes every current waiter; stores no permit (see above). An observed
 * executor running on this thread (pl_run, pl_block_on) hears of it. */
void pl_notify_waiters(pl_notify *n);

/* True while a permit is stored. */
bool pl_notify_has_permit(const pl_notify *n);

/* The future that waits for a notification. No output. 56 bytes: while
 * it is not linked (before its first poll, once chosen) the link's prev
 * points at the notify's own list, which is how it finds the notify. */
typedef struct pl_notified {
    pl_future base;
    pl_list_node node; /* private: linked while waiting, else {NULL, &notify->waiters} */
    pl_waker waker;    /* private: latest poll's waker while waiting */
} pl_notified;

/* A future waiting on `n` (borrowed; must outlive the future). */
extern const pl_future_vtable pl__notified_vtable;
static inline pl_notified pl_notified_make(pl_notify *n)
{
    return (pl_notified){
        .base = PL_FUTURE_INIT(&pl__notified_vtable),
        .node = {NULL, &n->waiters},
        .waker = PL_WAKER_EMPTY,
    };
}

/* ---- Oneshot ----------------------------------------------------------
 * One value from one sender to one receiver. The value is copied into
 * caller-provided storage of item_size bytes at send time; the receiver
 * reads it there once its pl_oneshot_recv is READY with result 0.
 *
 * Wake semantics:
 *  - pl_oneshot_send stores the value and wakes the pending receive.
 *  - pl_oneshot_sender_drop without a send wakes the pending receive,
 *    which completes with PL_ECLOSED.
 *  - pl_oneshot_recv: READY with 0 once a value was sent (and takes it),
 *    READY with PL_ECLOSED when the sender was dropped unsent or the
 *    value was already taken; otherwise stores the waker and PENDING.
 *    Dropping it forgets its waker and leaves the channel as it was: a
 *    later receive gets the value.
 *  - Nothing ever waits on the sender side: pl_oneshot_send reports a
 *    dropped receiver with PL_ECLOSED.
 *  - Declares (the receive): object "oneshot", condition "a value sent
 *    or the sender gone". Holds when pl_oneshot_try_recv would not
 *    return PL_EAGAIN: a value is there, the sender was dropped unsent,
 *    or the value was taken by someone else.
 */
typedef struct pl_oneshot {
    void *storage;      /* where the value lands; caller-owned */
    size_t item_size;   /* bytes */
    uint32_t state;     /* private: PL__ONESHOT_* bits */
    uint32_t reserved;  /* private: zero, so no byte is padding */
    pl_waker rx_waker;  /* private: the pending receive's waker */
} pl_oneshot;

/* Initialises `os` for a value of item_size bytes (> 0) delivered into
 * `storage` (borrowed, must outlive the channel). */
void pl_oneshot_init(pl_oneshot *os, void *storage, size_t item_size);

/* Copies item_size bytes from `value` into the storage and wakes the
 * receiver. Returns 0, or PL_ECLOSED when the receiver was dropped (the
 * value is not stored). Sending twice, or after pl_oneshot_sender_drop,
 * is a contract violation. */
int pl_oneshot_send(pl_oneshot *os, const void *value);

/* Drops the sender. Without a prior send the receiver sees PL_ECLOSED
 * (and is woken); after a send it changes nothing. Call at most once. */
void pl_oneshot_sender_drop(pl_oneshot *os);

/* Drops the receiver: later sends return PL_ECLOSED. No receive may be
 * pending (drop it first). Call at most once. */
void pl_oneshot_receiver_drop(pl_oneshot *os);

/* True once the receiver was dropped: the sender may stop working. */
bool pl_oneshot_is_closed(const pl_oneshot *os);

/* Takes the value without waiting: 0 (the value is in the storage),
 * PL_EAGAIN (not sent yet) or PL_ECLOSED (sender dropped unsent, or the
 * value was already taken). */
int pl_oneshot_try_recv(pl_oneshot *os);

/* The future that receives. After READY, `result` is 0 or PL_ECLOSED.
 * One receive may be pending at a time. */
typedef struct pl_oneshot_recv {
    pl_future base;
    pl_oneshot *os;
    int result;
    uint32_t reserved; /* private: zero, so no byte is padding */
} pl_oneshot_recv;

/* A future receiving from `os` (borrowed; must outlive the future). */
pl_oneshot_recv pl_oneshot_recv_make(pl_oneshot *os);

/* ---- Bounded mpsc channel ---------------------------------------------
 * A FIFO of fixed-size items with room for `capacity` items, many
 * senders (counted) and one receiver. Items are copied in and out.
 *
 * Wake semantics:
 *  - Senders are served FIFO and never barge: when a slot frees up
 *    (an item is received) and sends are waiting, the slot is reserved
 *    for the send that waited longest and that send is woken; try_send
 *    and new sends cannot take a reserved slot. A woken send completes
 *    on its next poll by copying its item in. Dropping a woken send
 *    before that poll passes the slot to the next waiting send (or frees
 *    it); its item is not sent. Dropping a waiting send just unlinks it.
 *  - Each item entering the buffer wakes the pending receive, and so
 *    does the close of the last sender.
 *  - pl_mpsc_close (the receiver closes) wakes every waiting send, which
 *    completes with PL_ECLOSED, as do woken sends polled after the close
 *    and every later send. Items already buffered can still be received.
 *  - The receive completes with PL_ECLOSED once the buffer is empty and
 *    either every sender was dropped or the receiver closed.
 *  - Dropping a pending receive forgets its waker; nothing is lost.
 *  - Declares, object "channel": the receive "an item queued or every
 *    sender gone" (holds with an item buffered, no sender left, or the
 *    channel closed); a send "room for its item or the receiver gone"
 *    (holds once a slot was reserved for it or the channel was closed,
 *    or, were a free slot left unreserved, when its place in the FIFO
 *    reaches it).
 */
typedef struct pl_mpsc {
    unsigned char *buf;        /* private: ring of capacity items */
    pl_executor *owner;        /* private: allocator of buf, or NULL */
    size_t item_size;          /* bytes per item */
    uint32_t capacity;         /* items */
    uint32_t head;             /* private: index of the oldest item */
    uint32_t len;              /* private: items buffered */
    uint32_t reserved;         /* private: slots held for woken sends */
    uint32_t senders;          /* private: live senders */
    uint32_t closed;           /* private: nonzero after pl_mpsc_close */
    pl_list_node send_waiters; /* private: pl_mpsc_send nodes, FIFO */
    pl_waker rx_waker;         /* private: the pending receive's waker */
} pl_mpsc;

/* Initialises `ch` in place with a ring of `capacity` (> 0) items of
 * item_size (> 0) bytes allocated with pl_alloc(ex, ...), and one
 * sender. `ch` must not move afterwards. Returns 0, PL_ENOMEM, or
 * PL_EINVAL when the ring's size overflows. Release with pl_mpsc_finish. */
int pl_mpsc_init(pl_mpsc *ch, pl_executor *ex, size_t item_size, uint32_t capacity);

/* As pl_mpsc_init, with caller-provided storage of capacity * item_size
 * bytes (borrowed, must outlive the channel). Cannot fail. */
void pl_mpsc_init_buffer(pl_mpsc *ch, void *buf, size_t item_size, uint32_t capacity);

/* Releases the ring when pl_mpsc_init allocated it. Buffered items are
 * discarded. No send or receive may still be pending. */
void pl_mpsc_finish(pl_mpsc *ch);

/* Counts one more sender (the channel starts with one). Each sender is
 * dropped once with pl_mpsc_sender_drop. */
void pl_mpsc_sender_clone(pl_mpsc *ch);

/* Drops one sender; none of its sends may be pending. Dropping the last
 * one wakes the receiver (see above). */
void pl_mpsc_sender_drop(pl_mpsc *ch);

/* Closes the receiving side (see above). Idempotent. */
void pl_mpsc_close(pl_mpsc *ch);

/* Sends without waiting: 0 (copied in), PL_EAGAIN (no free unreserved
 * slot) or PL_ECLOSED (the receiver closed). */
int pl_mpsc_try_send(pl_mpsc *ch, const void *item);

/* Receives without waiting into `out` (item_size bytes): 0, PL_EAGAIN
 * (empty, senders alive) or PL_ECLOSED (empty and closed or senderless). */
int pl_mpsc_try_recv(pl_mpsc *ch, void *out);

/* Items buffered now (reserved slots not counted). */
size_t pl_mpsc_len(const pl_mpsc *ch);

/* The future that sends `item` (borrowed until READY or drop; copied in
 * at completion). After READY, `result` is 0 or PL_ECLOSED. */
typedef struct pl_mpsc_send {
    pl_future base;
    pl_mpsc *ch;
    const void *item;
    pl_list_node node;  /* private: linked while waiting for a slot */
    pl_waker waker;     /* private */
    int result;
    uint32_t reserved; /* private: zero, so no byte is padding */
} pl_mpsc_send;

/* A future sending `item` on `ch` (both borrowed). Polling the first
 * time after every sender was dropped is a contract violation. */
pl_mpsc_send pl_mpsc_send_make(pl_mpsc *ch, const void *item);

/* The future that receives into `out` (item_size bytes, borrowed). After
 * READY, `result` is 0 or PL_ECLOSED. One receive may be pending at a
 * time. */
typedef struct pl_mpsc_recv {
    pl_future base;
    pl_mpsc *ch;
    void *out;
    int result;
    uint32_t reserved; /* private: zero, so no byte is padding */
} pl_mpsc_recv;

/* A future receiving from `ch` into `out` (both borrowed). */
pl_mpsc_recv pl_mpsc_recv_make(pl_mpsc *ch, void *out);

/* ---- Mutex ------------------------------------------------------------
 * An async lock with FIFO fairness and direct handoff. Nothing guards
 * data by itself: the caller pairs it with what it protects.
 *
 * Wake semantics:
 *  - pl_mutex_lock, first poll: takes the free lock (READY) or joins the
 *    back of the queue (PENDING). A lock is never free while futures
 *    wait, so a newcomer never barges ahead of the queue.
 *  - pl_mutex_unlock with waiters hands the lock to the one that waited
 *    longest and wakes it; the lock stays held throughout. Without
 *    waiters it frees the lock and wakes nobody.
 *  - Dropping a waiting lock future unlinks it. Dropping one that was
 *    handed the lock but not yet polled unlocks (handing it on).
 *  - A lock future that returned READY owns the lock: dropping it does
 *    not unlock; call pl_mutex_unlock.
 *  - Declares: object "mutex", condition "the lock, first come first
 *    served". Holds once the lock was handed to it, or (never in a
 *    correct run, since waiters imply locked) when the mutex is free and
 *    it is first in line; a waiter behind the head never holds.
 */
typedef struct pl_mutex {
    pl_list_node waiters; /* private: pl_mutex_lock nodes, FIFO */
    uint32_t locked;      /* private */
    uint32_t reserved;    /* private: zero, so no byte is padding */
} pl_mutex;

/* Initialises `m` unlocked, in place; it must not move afterwards. */
void pl_mutex_init(pl_mutex *m);

/* Takes the lock if it is free: true on success. */
bool pl_mutex_try_lock(pl_mutex *m);

/* Releases a held lock (see above). Unlocking a free mutex is a
 * contract violation. */
void pl_mutex_unlock(pl_mutex *m);

/* True while someone holds the lock (including a woken waiter it was
 * handed to). */
bool pl_mutex_is_locked(const pl_mutex *m);

/* The future that acquires the lock. No output: READY means held. */
typedef struct pl_mutex_lock {
    pl_future base;
    pl_mutex *mutex;
    pl_list_node node;  /* private */
    pl_waker waker;     /* private */
} pl_mutex_lock;

/* A future acquiring `m` (borrowed; must outlive the future). */
pl_mutex_lock pl_mutex_lock_make(pl_mutex *m);

/* ---- Semaphore --------------------------------------------------------
 * A counter of permits; acquiring n waits until n are available.
 *
 * Wake semantics:
 *  - Strict FIFO, no barging: an acquire (or try_acquire) succeeds at
 *    once only when no acquire is waiting and enough permits are free.
 *    A waiting head that needs more permits than are free blocks the
 *    acquires behind it, even small ones.
 *  - pl_semaphore_release adds permits, then grants whole requests from
 *    the head of the queue while they fit, waking each granted future
 *    in FIFO order; the permits are taken out at grant time.
 *  - Dropping a waiting acquire unlinks it, which may let the requests
 *    behind it be granted (they are woken then). Dropping an acquire
 *    that was granted but not yet polled releases its permits.
 *  - An acquire that returned READY owns its permits: dropping it does
 *    not release them; call pl_semaphore_release.
 *  - Declares: object "semaphore", condition "its permits, first come
 *    first served". Holds once its permits were granted, or when the
 *    free permits cover every request from the head up to and including
 *    its own (what a release would grant): one behind a head whose need
 *    is unmet never holds, however few permits it needs.
 */
typedef struct pl_semaphore {
    pl_list_node waiters; /* private: pl_semaphore_acquire nodes, FIFO */
    size_t permits;       /* private: free permits */
} pl_semaphore;

/* Initialises `s` with `permits` free permits, in place; it must not
 * move afterwards. */
void pl_semaphore_init(pl_semaphore *s, size_t permits);

/* Takes n (> 0) permits without waiting: true on success, false when
 * fewer are free or acquires are waiting. */
bool pl_semaphore_try_acquire(pl_semaphore *s, size_t n);

/* Returns n permits and grants waiting acquires (see above). */
void pl_semaphore_release(pl_semaphore *s, size_t n);

/* Free permits now (permits granted to woken acquires are not free). */
size_t pl_semaphore_available(const pl_semaphore *s);

/* The future that acquires `n` permits. No output: READY means held. */
typedef struct pl_semaphore_acquire {
    pl_future base;
    pl_semaphore *sem;
    size_t n;
    pl_list_node node;  /* private */
    pl_waker waker;     /* private */
} pl_semaphore_acquire;

/* A future acquiring n (> 0) permits of `s`. */
pl_semaphore_acquire pl_semaphore_acquire_make(pl_semaphore *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif
