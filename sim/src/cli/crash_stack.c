/* sim/src/cli/crash_stack.c: a crash finding's native stack as text and
 * JSON (isolate/crash_stack.h captures and names it). The C library's
 * start, below main, is left out: it is the same in every finding. */
#include "cli_internal.h"

/* The frames worth showing: those above the C library's start. */
static size_t shown(const pl__crash_frame *fr, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strncmp(fr[i].function, "__libc_start", 12) == 0 ||
            strcmp(fr[i].function, "_start") == 0) {
            return i;
        }
    }
    return n;
}

/* Empties buf, then names st's frames into fr: how many to show. */
static size_t frames_of(const pl__crash_stack *st, pl__crash_frame *fr, char *buf, size_t len)
{
    PL__CLI_ASSERT(buf != NULL && len > 0);
    buf[0] = '\0';
    size_t n = st != NULL ? pl__crash_stack_name(st, fr, PL__CRASH_STACK_FRAMES) : 0;
    return shown(fr, n);
}

static void frame_text(FILE *f, const pl__crash_frame *fr, size_t i, const char *indent)
{
    fprintf(f, "%s#%zu %s", indent, i, fr->function[0] != '\0' ? fr->function : "??");
    if (fr->line > 0) {
        fprintf(f, " (%s:%" PRIu32 ")\n", fr->file, fr->line);
    } else if (fr->object[0] != '\0') {
        fprintf(f, " (%s+0x%" PRIxPTR ")\n", fr->object, fr->offset);
    } else {
        fprintf(f, " (0x%" PRIxPTR ")\n", fr->pc);
    }
}

void pl__cli_crash_stack_text(const pl__crash_stack *st, const char *head, char *buf, size_t len)
{
    pl__crash_frame fr[PL__CRASH_STACK_FRAMES];
    size_t n = frames_of(st, fr, buf, len);
    if (n == 0) {
        return;
    }
    /* One byte short, and that byte a NUL of our own: fmemopen terminates
     * a cut text only when it has room, which its size leaves to glibc. */
    buf[len - 1] = '\0';
    FILE *f = fmemopen(buf, len - 1, "w");
    if (f == NULL) {
        return;
    }
    fprintf(f, "%s (%s):\n", head, strsignal(st->signo));
    for (size_t i = 0; i < n; i++) {
        frame_text(f, &fr[i], i, "    ");
    }
    fclose(f);
}

static void json_or_null(FILE *f, const char *s)
{
    if (s[0] != '\0') {
        pl__cli_json_string(f, s);
    } else {
        fputs("null", f);
    }
}

static void frame_json(FILE *f, const pl__crash_frame *fr)
{
    fprintf(f, "{\"pc\":\"0x%" PRIxPTR "\",\"function\":", fr->pc);
    json_or_null(f, fr->function);
    fputs(",\"file\":", f);
    json_or_null(f, fr->line > 0 ? fr->file : "");
    if (fr->line > 0) {
        fprintf(f, ",\"line\":%" PRIu32, fr->line);
    } else {
        fputs(",\"line\":null", f);
    }
    fputs(",\"object\":", f);
    json_or_null(f, fr->object);
    fprintf(f, ",\"offset\":\"0x%" PRIxPTR "\"}", fr->offset);
}

void pl__cli_crash_stack_json(const pl__crash_stack *st, char *buf, size_t len)
{
    pl__crash_frame fr[PL__CRASH_STACK_FRAMES];
    size_t n = frames_of(st, fr, buf, len);
    if (n == 0) {
        return;
    }
    char *out = NULL;
    size_t out_len = 0;
    FILE *f = open_memstream(&out, &out_len);
    if (f == NULL) {
        return;
    }
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            fputc(',', f);
        }
        frame_json(f, &fr[i]);
    }
    fputc(']', f);
    if (fclose(f) == 0 && out_len < len) {
        memcpy(buf, out, out_len + 1);
    }
    free(out);
}
