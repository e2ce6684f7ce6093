/* sim/src/history_models.c: the models pollen ships for histories
 * (pollen/sim_history.h): a register, a key-value map of registers, an
 * append-only log. Their states are a few integers compared by their
 * bytes, so memoization costs a hash of 8 or 16 bytes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pollen/sim_history.h"
#include "sim_assert.h"

typedef struct reg_state {
    int64_t value;
} reg_state;

static void reg_init(void *state) { ((reg_state *)state)->value = 0; }

static bool reg_step(void *state, const pl_history_op *op)
{
    reg_state *r = state;
    switch (op->kind) {
    case PL_REG_READ:
        return op->unknown || op->out == r->value;
    case PL_REG_WRITE:
        r->value = op->in;
        return true;
    case PL_REG_CAS:
        if (r->value == op->in) {
            if (!op->unknown && op->out == 0) {
                return false;
            }
            r->value = op->in2;
            return true;
        }
        return op->unknown || op->out == 0;
    default:
        return false;
    }
}

/* "(3, " for a per-key model's key 3, "(" otherwise. */
static int key_text(char *buf, size_t len, const pl_history_op *op, bool per_key)
{
    return per_key ? snprintf(buf, len, "(%" PRIu64 "%s", op->key, op->kind == PL_REG_READ ? "" : ", ")
                   : snprintf(buf, len, "(");
}

static void reg_describe_as(const pl_history_op *op, char *buf, size_t len, bool per_key)
{
    static const char *const names[] = {"read", "write", "cas"};
    const char *name = op->kind < 3 ? names[op->kind] : "?";
    int n = snprintf(buf, len, "%s", name);
    n += key_text(buf + n, len - (size_t)n, op, per_key);
    if ((size_t)n >= len) {
        return;
    }
    switch (op->kind) {
    case PL_REG_WRITE:
        snprintf(buf + n, len - (size_t)n, "%" PRId64 ")", op->in);
        break;
    case PL_REG_CAS:
        snprintf(buf + n, len - (size_t)n, "%" PRId64 ", %" PRId64 ")%s", op->in, op->in2,
                 op->unknown ? "" : op->out != 0 ? " -> swapped" : " -> failed");
        break;
    default:
        if (op->unknown) {
            snprintf(buf + n, len - (size_t)n, ")");
        } else {
            snprintf(buf + n, len - (size_t)n, ") -> %" PRId64, op->out);
        }
        break;
    }
}

static void reg_describe(const pl_history_op *op, char *buf, size_t len)
{
    reg_describe_as(op, buf, len, false);
}

static void kv_describe(const pl_history_op *op, char *buf, size_t len)
{
    reg_describe_as(op, buf, len, true);
}

const pl_model pl_model_register = {
    .name = "register",
    .state_size = sizeof(reg_state),
    .init = reg_init,
    .step = reg_step,
    .describe = reg_describe,
};

const pl_model pl_model_kv = {
    .name = "kv",
    .state_size = sizeof(reg_state),
    .per_key = true,
    .init = reg_init,
    .step = reg_step,
    .describe = kv_describe,
};

typedef struct log_state {
    int64_t len;
    int64_t digest;
} log_state;

int64_t pl_history_log_digest(int64_t d, int64_t entry)
{
    /* splitmix64's finalizer over the pair: order matters, equal logs agree. */
    uint64_t x = (uint64_t)d * 0x9e3779b97f4a7c15u + (uint64_t)entry + 0x632be59bd9b4e019u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return (int64_t)(x ^ (x >> 31));
}

static void log_init(void *state) { memset(state, 0, sizeof(log_state)); }

static bool log_step(void *state, const pl_history_op *op)
{
    log_state *l = state;
    switch (op->kind) {
    case PL_LOG_APPEND:
        l->len++;
        l->digest = pl_history_log_digest(l->digest, op->in);
        return true;
    case PL_LOG_READ:
        return op->unknown || (op->out == l->len && op->out2 == l->digest);
    case PL_LOG_LEN:
        return op->unknown || op->out == l->len;
    default:
        return false;
    }
}

static void log_describe(const pl_history_op *op, char *buf, size_t len)
{
    switch (op->kind) {
    case PL_LOG_APPEND:
        snprintf(buf, len, "append(%" PRId64 ")", op->in);
        break;
    case PL_LOG_READ:
    case PL_LOG_LEN:
        if (op->unknown) {
            snprintf(buf, len, "%s()", op->kind == PL_LOG_READ ? "read" : "len");
        } else {
            snprintf(buf, len, "%s() -> %" PRId64 " entries", op->kind == PL_LOG_READ ? "read" : "len",
                     op->out);
        }
        break;
    default:
        snprintf(buf, len, "?(%" PRIu32 ")", op->kind);
        break;
    }
}

const pl_model pl_model_log = {
    .name = "log",
    .state_size = sizeof(log_state),
    .init = log_init,
    .step = log_step,
    .describe = log_describe,
};
