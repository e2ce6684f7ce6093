/* sim/src/lin_search.c: the linearizability search (check_history.h).
 *
 * The list of events is an array of entries linked by index, so lifting
 * an operation out of it and putting it back are O(1) and undoing a
 * linearization is exact. The memo of (linearized set, state) pairs is
 * an open-addressing table of indices into one arena of fixed-size
 * records: a bitset of the key's operations, then the model's state.
 */
#include <stdlib.h>
#include <string.h>

#include "check_history.h"
#include "sim_assert.h"

#define NIL UINT32_MAX

typedef struct entry {
    uint32_t op;     /* index into the kept operations */
    uint32_t match;  /* a call's return entry */
    uint32_t prev, next;
    bool is_call;
} entry;

typedef struct event {
    uint64_t at;
    uint32_t op;
    bool is_call;
} event;

typedef struct frame {
    uint32_t call;   /* the entry lifted */
} frame;

typedef struct search {
    const pl_model *m;
    const pl__lin_op *ops; /* the kept ones, by op[] */
    uint32_t *op;          /* kept index -> ops index */
    uint32_t n;
    entry *e;              /* 2n entries, then the head at 2n */
    uint32_t head;
    size_t words;          /* of the bitset */
    uint64_t *bits;
    size_t rec_size;       /* bytes of a memo record */
    unsigned char *arena;  /* memo records */
    size_t arena_len, arena_cap; /* in records */
    uint32_t *table;       /* record index + 1; 0: empty */
    uint64_t *hashes;      /* the hash of each table slot's record */
    size_t table_cap;
    unsigned char *states; /* the stack's states: (n + 1) * state_size */
    frame *stack;
    uint32_t depth;
} search;

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdu;
}

static uint64_t bytes_hash(const unsigned char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ p[i]) * 0x100000001b3u;
    }
    return h;
}

static uint64_t memo_hash(const search *s, const void *state)
{
    uint64_t h = s->m->hash != NULL ? s->m->hash(state)
                                    : bytes_hash(state, s->m->state_size);
    for (size_t w = 0; w < s->words; w++) {
        h = mix(h, s->bits[w]);
    }
    /* The table takes the low bits: fold the high ones in. */
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 29;
    return h | 1;
}

static bool memo_equal(const search *s, const unsigned char *rec, const void *state)
{
    if (memcmp(rec, s->bits, s->words * sizeof(uint64_t)) != 0) {
        return false;
    }
    const unsigned char *st = rec + s->words * sizeof(uint64_t);
    return s->m->equal != NULL ? s->m->equal(st, state)
                               : memcmp(st, state, s->m->state_size) == 0;
}

static bool memo_grow(search *s)
{
    size_t ncap = s->table_cap == 0 ? 1024 : s->table_cap * 2;
    uint32_t *nt = calloc(ncap, sizeof *nt);
    uint64_t *nh = calloc(ncap, sizeof *nh);
    if (nt == NULL || nh == NULL) {
        free(nt);
        free(nh);
        return false;
    }
    for (size_t i = 0; i < s->table_cap; i++) {
        if (s->table[i] != 0) {
            size_t j = (size_t)s->hashes[i] & (ncap - 1);
            while (nt[j] != 0) {
                j = (j + 1) & (ncap - 1);
            }
            nt[j] = s->table[i];
            nh[j] = s->hashes[i];
        }
    }
    free(s->table);
    free(s->hashes);
    s->table = nt;
    s->hashes = nh;
    s->table_cap = ncap;
    return true;
}

/* The bytes the memo allocates with these capacities: its records, and
 * its table's indexes and hashes. */
static size_t memo_bytes(const search *s, size_t arena_cap, size_t table_cap)
{
    return arena_cap * s->rec_size + table_cap * (sizeof *s->table + sizeof *s->hashes);
}

/* Whether one more record fits PL__LIN_MEMO_BYTES, counting what the
 * growths it needs would allocate (capacities double), so that the bound
 * is on the memory taken, not on the records kept. */
static bool memo_fits_one_more(const search *s)
{
    size_t arena_cap = s->arena_cap, table_cap = s->table_cap;
    if (s->arena_len == arena_cap) {
        arena_cap = arena_cap == 0 ? 1024 : arena_cap * 2;
    }
    if ((s->arena_len + 1) * 2 > table_cap) {
        table_cap = table_cap == 0 ? 1024 : table_cap * 2;
    }
    PL__SIM_ASSERT(arena_cap > s->arena_len && table_cap >= (s->arena_len + 1) * 2);
    return memo_bytes(s, arena_cap, table_cap) <= PL__LIN_MEMO_BYTES;
}

/* Adds (s->bits, state) to the memo: 1 when new, 0 when seen, -1 when
 * out of memory, -2 when the memo is full (PL__LIN_MEMO_BYTES). */
static int memo_add(search *s, const void *state)
{
    if (!memo_fits_one_more(s)) {
        return -2;
    }
    if ((s->arena_len + 1) * 2 > s->table_cap && !memo_grow(s)) {
        return -1;
    }
    uint64_t h = memo_hash(s, state);
    size_t i = (size_t)h & (s->table_cap - 1);
    for (; s->table[i] != 0; i = (i + 1) & (s->table_cap - 1)) {
        if (s->hashes[i] == h &&
            memo_equal(s, s->arena + (size_t)(s->table[i] - 1) * s->rec_size, state)) {
            return 0;
        }
    }
    if (s->arena_len == s->arena_cap) {
        size_t ncap = s->arena_cap == 0 ? 1024 : s->arena_cap * 2;
        unsigned char *na = realloc(s->arena, ncap * s->rec_size);
        if (na == NULL) {
            return -1;
        }
        s->arena = na;
        s->arena_cap = ncap;
    }
    unsigned char *rec = s->arena + s->arena_len * s->rec_size;
    memcpy(rec, s->bits, s->words * sizeof(uint64_t));
    memcpy(rec + s->words * sizeof(uint64_t), state, s->m->state_size);
    s->table[i] = (uint32_t)++s->arena_len;
    s->hashes[i] = h;
    return 1;
}

static int event_cmp(const void *a, const void *b)
{
    const event *x = a, *y = b;
    if (x->at != y->at) {
        return x->at < y->at ? -1 : 1;
    }
    /* Only unknown returns share a place (the end): in operation order. */
    return x->op < y->op ? -1 : x->op > y->op;
}

/* The list of the kept operations' events, in order. */
static bool build_list(search *s)
{
    event *ev = malloc((size_t)s->n * 2 * sizeof *ev);
    if (ev == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < s->n; i++) {
        const pl__lin_op *o = &s->ops[s->op[i]];
        PL__SIM_ASSERT(o->call < o->ret);
        ev[2 * i] = (event){.at = o->call, .op = i, .is_call = true};
        ev[2 * i + 1] = (event){.at = o->ret, .op = i, .is_call = false};
    }
    qsort(ev, (size_t)s->n * 2, sizeof *ev, event_cmp);
    uint32_t *ret_of = malloc((size_t)s->n * sizeof *ret_of);
    if (ret_of == NULL) {
        free(ev);
        return false;
    }
    uint32_t len = s->n * 2;
    for (uint32_t k = 0; k < len; k++) {
        s->e[k] = (entry){.op = ev[k].op, .match = NIL, .prev = k == 0 ? s->head : k - 1,
                          .next = k + 1 == len ? NIL : k + 1, .is_call = ev[k].is_call};
        if (!ev[k].is_call) {
            ret_of[ev[k].op] = k;
        }
    }
    for (uint32_t k = 0; k < len; k++) {
        if (s->e[k].is_call) {
            s->e[k].match = ret_of[s->e[k].op];
        }
    }
    s->e[s->head] = (entry){.op = NIL, .match = NIL, .prev = NIL, .next = 0};
    free(ret_of);
    free(ev);
    return true;
}

static void unlink_entry(search *s, uint32_t k)
{
    entry *x = &s->e[k];
    s->e[x->prev].next = x->next;
    if (x->next != NIL) {
        s->e[x->next].prev = x->prev;
    }
}

static void relink_entry(search *s, uint32_t k)
{
    entry *x = &s->e[k];
    s->e[x->prev].next = k;
    if (x->next != NIL) {
        s->e[x->next].prev = k;
    }
}

static void lift(search *s, uint32_t call)
{
    unlink_entry(s, call);
    unlink_entry(s, s->e[call].match);
}

static void unlift(search *s, uint32_t call)
{
    relink_entry(s, s->e[call].match);
    relink_entry(s, call);
}

static unsigned char *state_at(search *s, uint32_t depth)
{
    return s->states + (size_t)depth * s->m->state_size;
}

static bool states_equal(const search *s, const void *a, const void *b)
{
    return s->m->equal != NULL ? s->m->equal(a, b) : memcmp(a, b, s->m->state_size) == 0;
}

static void bit_flip(search *s, uint32_t op) { s->bits[op / 64] ^= (uint64_t)1 << (op % 64); }

/* The search proper, once the list is built. */
static pl__lin_verdict run(search *s, uint64_t steps_max, uint64_t *steps)
{
    uint32_t left = 0; /* operations that returned ok, not linearized */
    for (uint32_t i = 0; i < s->n; i++) {
        left += !s->ops[s->op[i]].op.unknown;
    }
    s->m->init(state_at(s, 0));
    uint32_t at = s->e[s->head].next;
    uint64_t taken = 0;
    pl__lin_verdict v = PL__LIN_OK;
    while (left > 0) {
        if (taken++ == steps_max) {
            v = PL__LIN_BUDGET;
            break;
        }
        PL__SIM_ASSERT(at != NIL); /* an ok return is always ahead */
        entry *x = &s->e[at];
        if (x->is_call) {
            const pl__lin_op *o = &s->ops[s->op[x->op]];
            unsigned char *next = state_at(s, s->depth + 1);
            memcpy(next, state_at(s, s->depth), s->m->state_size);
            /* An unknown operation that changes nothing here is left
             * out at this point: never taking effect leaves the same
             * state and every later choice open, and a read that timed
             * out would otherwise double the memo at each point. */
            if (s->m->step(next, &o->op) &&
                !(o->op.unknown && states_equal(s, next, state_at(s, s->depth)))) {
                bit_flip(s, x->op);
                int added = memo_add(s, next);
                if (added < 0) {
                    v = added == -2 ? PL__LIN_BUDGET : PL__LIN_NOMEM;
                    break;
                }
                if (added > 0) {
                    s->stack[s->depth++] = (frame){.call = at};
                    left -= !o->op.unknown;
                    lift(s, at);
                    at = s->e[s->head].next;
                    continue;
                }
                bit_flip(s, x->op);
            }
            at = x->next;
            continue;
        }
        if (s->depth == 0) {
            v = PL__LIN_BAD;
            break;
        }
        uint32_t call = s->stack[--s->depth].call;
        bit_flip(s, s->e[call].op);
        left += !s->ops[s->op[s->e[call].op]].op.unknown;
        unlift(s, call);
        at = s->e[call].next;
    }
    if (steps != NULL) {
        *steps = taken;
    }
    return v;
}

static void search_free(search *s)
{
    free(s->op);
    free(s->e);
    free(s->bits);
    free(s->arena);
    free(s->table);
    free(s->hashes);
    free(s->states);
    free(s->stack);
}

pl__lin_verdict pl__lin_check(const pl_model *m, const pl__lin_op *ops, size_t n,
                              uint64_t steps_max, uint64_t *steps)
{
    PL__SIM_ASSERT(m != NULL && m->state_size > 0 && m->state_size <= PL_MODEL_STATE_MAX);
    PL__SIM_ASSERT(n < UINT32_MAX / 2);
    if (steps != NULL) {
        *steps = 0;
    }
    search s = {.m = m, .ops = ops};
    if (n == 0) {
        return PL__LIN_OK;
    }
    s.op = malloc((n > 0 ? n : 1) * sizeof *s.op);
    if (s.op == NULL) {
        return PL__LIN_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        s.op[s.n++] = (uint32_t)i;
    }
    s.head = s.n * 2;
    s.words = (s.n + 63) / 64;
    s.rec_size = s.words * sizeof(uint64_t) + m->state_size;
    s.rec_size = (s.rec_size + 7) & ~(size_t)7;
    s.e = malloc(((size_t)s.n * 2 + 1) * sizeof *s.e);
    s.bits = calloc(s.words + 1, sizeof *s.bits);
    s.states = calloc((size_t)s.n + 2, m->state_size);
    s.stack = malloc(((size_t)s.n + 1) * sizeof *s.stack);
    pl__lin_verdict v = PL__LIN_NOMEM;
    if (s.e != NULL && s.bits != NULL && s.states != NULL && s.stack != NULL && build_list(&s)) {
        v = run(&s, steps_max, steps);
    }
    search_free(&s);
    return v;
}

bool pl__lin_minimize(const pl_model *m, const pl__lin_op *ops, size_t n, bool *keep,
                      uint64_t steps_max)
{
    pl__lin_op *work = malloc((n > 0 ? n : 1) * sizeof *work);
    if (work == NULL) {
        for (size_t i = 0; i < n; i++) {
            keep[i] = !ops[i].op.unknown;
        }
        return false;
    }
    memcpy(work, ops, n * sizeof *work);
    uint64_t spent = 0;
    bool done = true;
    for (size_t i = 0; i < n; i++) {
        keep[i] = !ops[i].op.unknown;
    }
    for (size_t i = 0; i < n && done; i++) {
        if (!keep[i]) {
            continue;
        }
        work[i].op.unknown = true;
        work[i].ret = UINT64_MAX;
        uint64_t steps = 0;
        pl__lin_verdict v = pl__lin_check(m, work, n, steps_max - spent, &steps);
        spent += steps;
        if (v == PL__LIN_BAD) {
            keep[i] = false;
        } else {
            work[i] = ops[i];
        }
        done = v == PL__LIN_OK || v == PL__LIN_BAD;
        done = done && spent < steps_max;
    }
    free(work);
    return done;
}
