/* sim/src/cli/messages.c: how the CLI complains and keeps time, at the
 * bottom of the CLI's files (every other one may call these; they call
 * none of them): usage and internal errors with control bytes escaped,
 * stdout's failure, the interrupt flag, the wall clock. */
#include "cli_internal.h"
#include "env/env.h"

/* Set by SIGINT in the parent of `run`: stop cleanly, keep the summary. */
volatile sig_atomic_t pl__cli_interrupted;

/* The errno of a failed write to stdout in `run` (EPIPE: the reader went
 * away, as `| head` does; ENOSPC: a full disk); 0 while it works. Nothing
 * more can be reported then, so the run stops. */
int pl__cli_stdout_errno;

/* Flushes what `run` printed on f, noting a failure of stdout. */
void pl__cli_flush_out(FILE *f)
{
    if ((fflush(f) != 0 || ferror(f)) && f == stdout && pl__cli_stdout_errno == 0) {
        pl__cli_stdout_errno = errno != 0 ? errno : EIO;
    }
}

void pl__cli_on_interrupt(int sig)
{
    (void)sig;
    pl__cli_interrupted = 1;
}

/* The real clock, whatever the calling thread runs (env.h). */
int64_t pl__cli_now_ms(void)
{
    return pl__env_real_now() / PL_MS;
}

/* Prints a message with its control bytes escaped: messages quote file
 * names, file contents and arguments, and none of them may drive the
 * terminal. */
void pl__cli_put_message(FILE *f, const char *fmt, va_list ap)
{
    char text[4096], safe[4096];
    vsnprintf(text, sizeof text, fmt, ap);
    pl__cli_escape(text, false, safe, sizeof safe);
    fputs(safe, f);
}

static void vsay(const cli *c, const char *cmd, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s%s%s: ", c->prog, cmd != NULL ? " " : "", cmd != NULL ? cmd : "");
    pl__cli_put_message(stderr, fmt, ap);
}

int pl__cli_usage_hint(const cli *c, const char *cmd, const char *hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(c, cmd, fmt, ap);
    va_end(ap);
    if (hint != NULL) {
        fprintf(stderr, "; %s\n", hint);
    } else {
        fprintf(stderr, "; see '%s%s%s --help'\n", c->prog, cmd != NULL ? " " : "",
                cmd != NULL ? cmd : "");
    }
    return ST_USAGE;
}

int pl__cli_internal_error(const cli *c, const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s%s%s: error: ", c->prog, cmd != NULL ? " " : "", cmd != NULL ? cmd : "");
    pl__cli_put_message(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return ST_INTERNAL;
}
