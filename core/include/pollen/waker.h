/* pollen/waker.h: wakers, the handles that reschedule a parked future.
 *
 * A waker is a small value: a vtable, a data word and an identity
 * generation. It is passed and stored by value. Whoever holds a waker
 * owns one reference and must either wake it (pl_waker_wake consumes
 * it) or drop it (pl_waker_drop). pl_waker_clone makes another owned
 * reference.
 *
 * Task wakers (those the executor hands out in pl_context) are
 * refcounted, single-threaded, and deduplicate: waking a task that is
 * already scheduled does nothing, waking it during its own poll re-polls
 * it once that poll returns, and waking a finished task does nothing.
 * They must only be used on the executor's thread; to wake from another
 * thread use pl_remote_waker (executor.h).
 *
 * Identity: `gen` distinguishes the waker of one poll from the waker of
 * another poll of the same task when the executor rotates wakers (the
 * simulator does). The Future contract only promises that the waker of
 * the most recent poll is woken; pl_waker_will_wake tells a future
 * whether the waker it stored is still that one.
 */
#ifndef POLLEN_WAKER_H
#define POLLEN_WAKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_waker pl_waker;

typedef struct pl_waker_vtable {
    void (*clone)(const pl_waker *w, pl_waker *out); /* a new owned reference into *out */
    void (*wake)(pl_waker w);              /* wake and release */
    void (*wake_by_ref)(const pl_waker *w); /* wake, keep the reference */
    void (*drop)(pl_waker w);              /* release without waking */
} pl_waker_vtable;

struct pl_waker {
    const pl_waker_vtable *vtable; /* NULL only in an empty slot */
    void *data;                    /* owned by the vtable's implementation */
    uint32_t gen;                  /* identity within one data (see above) */
    uint32_t reserved;             /* zero */
};

/* The empty slot value: holds nothing, must not be woken. Use it to
 * initialise storage; pl_waker_is_set tells a slot that holds a waker. */
#define PL_WAKER_EMPTY ((pl_waker){NULL, NULL, 0, 0})

/* A waker that does nothing, for tests and for polling outside an
 * executor. Cloning, waking and dropping it are free. */
pl_waker pl_waker_noop(void);

static inline bool pl_waker_is_set(const pl_waker *w) { return w->vtable != NULL; }

static inline pl_waker pl_waker_clone(const pl_waker *w)
{
    pl_waker r;
    w->vtable->clone(w, &r);
    return r;
}

/* Clones straight into storage: no temporary copied afterwards. */
static inline void pl_waker_clone_into(pl_waker *dst, const pl_waker *w)
{
    w->vtable->clone(w, dst);
}

static inline void pl_waker_wake(pl_waker w) { w.vtable->wake(w); }

static inline void pl_waker_wake_by_ref(const pl_waker *w) { w->vtable->wake_by_ref(w); }

static inline void pl_waker_drop(pl_waker w) { w.vtable->drop(w); }

/* True when waking `a` would wake exactly what waking `b` wakes: same
 * vtable, same data, same generation. A future that stored a waker on an
 * earlier poll compares it with the current one and replaces it when this
 * returns false. */
static inline bool pl_waker_will_wake(const pl_waker *a, const pl_waker *b)
{
    return a->vtable == b->vtable && a->data == b->data && a->gen == b->gen;
}

/* Slot helpers for the common "store the latest waker" pattern.
 *
 * pl_waker_slot_set: makes *slot hold a clone of `w`, dropping whatever it
 * held unless that already will_wake `w` (then nothing is cloned).
 * pl_waker_slot_take: moves the waker out, leaving the slot empty.
 * pl_waker_slot_wake: wakes and empties the slot if it holds a waker.
 * pl_waker_slot_clear: drops and empties the slot if it holds a waker. */
static inline void pl_waker_slot_set(pl_waker *slot, const pl_waker *w)
{
    if (slot->vtable != NULL) {
        if (pl_waker_will_wake(slot, w)) {
            return;
        }
        pl_waker_drop(*slot);
    }
    pl_waker_clone_into(slot, w);
}

static inline pl_waker pl_waker_slot_take(pl_waker *slot)
{
    pl_waker w = *slot;
    *slot = PL_WAKER_EMPTY;
    return w;
}

static inline void pl_waker_slot_wake(pl_waker *slot)
{
    if (slot->vtable != NULL) {
        pl_waker_wake(pl_waker_slot_take(slot));
    }
}

static inline void pl_waker_slot_clear(pl_waker *slot)
{
    if (slot->vtable != NULL) {
        pl_waker_drop(pl_waker_slot_take(slot));
    }
}

#ifdef __cplusplus
}
#endif
#endif
