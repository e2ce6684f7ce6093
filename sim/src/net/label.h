/* sim/src/net/label.h: what names a message in the explanation of a link
 * decision (pl_sim_send_label, pollen/sim_net.h): the label its sending
 * task gave, or else that task's latest trace note, and the nodes it
 * travels between. The world keeps it as pl__sim.labels (sim_internal.h).
 *
 * Kept only while the run explains its decisions (a run with a capture:
 * the shrinker's final run, `pollen why`'s); every other run pays a
 * branch per label or note and keeps nothing. Words only: nothing here
 * is decided, hashed or traced, so a label changes no run.
 */
#ifndef POLLEN_SIM_NET_LABEL_H
#define POLLEN_SIM_NET_LABEL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes kept of a label or of a note, the NUL included: a longer one is
 * cut (its last three bytes kept become "..."). */
#define PL__LABEL_MAX 48

/* What one task said last. */
typedef struct pl__label_task {
    char label[PL__LABEL_MAX]; /* pl_sim_send_label's; "" none */
    char note[PL__LABEL_MAX];  /* its latest trace note; "" none */
} pl__label_task;

typedef struct pl__labels {
    bool on;                 /* the run explains its decisions: labels and notes are kept */
    pl__label_task *by_task; /* by task id, grown on use (2 * PL__LABEL_MAX bytes a task) */
    size_t len;              /* entries of by_task */
    size_t cap;
} pl__labels;

typedef struct pl__sim pl__sim;

/* What a message crossing a link is, for its words. */
typedef enum pl__label_msg {
    PL__LABEL_DGRAM,   /* a datagram */
    PL__LABEL_WRITE,   /* a stream write (a segment of a connection) */
    PL__LABEL_FIN,     /* the end of a stream */
    PL__LABEL_CONNECT, /* a connection attempt */
} pl__label_msg;

/* The task being polled labels its messages from now on with the text of
 * fmt (NULL or "": no label, back to its notes). Nothing when the run
 * does not explain or no task is polled. */
void pl__label_set(pl__sim *s, const char *fmt, va_list ap);
/* Task `task` traced `text` (len bytes, no NUL needed): its latest note.
 * Nothing when the run does not explain or task is 0. */
void pl__label_note(pl__sim *s, uint32_t task, const char *text, size_t len);
/* Writes into buf (len bytes, cut to fit) the words for the message of
 * kind m the task being polled sends from host `from` to host `to` (IPv4,
 * host order): "the 'put 3' from node 'client' to node 'primary'
 * (10.0.0.3 -> 10.0.0.1)", "a datagram of 'client' (after its note 'sent
 * put 3') from ...", "a stream write from ..." outside a task. hosts:
 * the addresses in parentheses too. */
void pl__label_subject(const pl__sim *s, char *buf, size_t len, pl__label_msg m, uint32_t from,
                       uint32_t to, bool hosts);
/* Frees what the run kept (pl__sim_finish). */
void pl__label_free(pl__labels *l);

#endif
