/* Every byte of a value pollen's constructors return is defined.
 *
 * The simulator's probe compares a parked future's bytes before and after
 * a poll, and a user's poll assigns pollen's futures by value into its own
 * struct: a padding hole would carry stack garbage into those bytes, which
 * differs between compilers and flags. Each case builds the same value
 * twice, with the stack dirtied by a different byte pattern in between,
 * and the two copies must be identical. Objects set up in place (notify,
 * mutex, oneshot...) are checked the same way over dirtied storage. */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include <pollen/pollen.h>

#include "leakcheck.h"

TestSuite(future_bytes, .fini = pl_test_leak_check);

#define NOINLINE __attribute__((noinline))

/* Larger than any constructor's frame, so the wrapper that follows runs
 * on bytes this wrote. volatile: the stores must happen. */
enum { DIRT_BYTES = 16384, VALUE_MAX = 512 };

static NOINLINE void dirty_stack(unsigned char pattern)
{
    volatile unsigned char junk[DIRT_BYTES];
    for (size_t i = 0; i < sizeof junk; i++) {
        junk[i] = pattern;
    }
}

typedef void (*make_fn)(unsigned char *out);

/* Builds the value twice over differently dirtied stacks and names the
 * first byte that differs. The call through a pointer keeps `make` out of
 * line, so its frame lands where dirty_stack's was. */
static void expect_defined(make_fn volatile make, size_t size, const char *what)
{
    cr_assert_leq(size, VALUE_MAX);
    unsigned char first[VALUE_MAX];
    unsigned char second[VALUE_MAX];
    dirty_stack(0x55);
    make(first);
    dirty_stack(0xAA);
    make(second);
    size_t at = 0;
    while (at < size && first[at] == second[at]) {
        at++;
    }
    cr_expect_eq(at, size, "%s (%zu bytes): byte %zu is undefined (0x%02x, then 0x%02x)", what,
                 size, at, at < size ? first[at] : 0, at < size ? second[at] : 0);
}

/* One case per constructor: `expr` builds a value of `type` on the stack,
 * which is copied out whole, padding included. */
#define FUTURE_BYTES(name, type, expr)                                                             \
    static NOINLINE void make_##name(unsigned char *out)                                           \
    {                                                                                              \
        type value = (expr);                                                                       \
        memcpy(out, &value, sizeof value);                                                         \
    }                                                                                              \
    LEAK_TEST(future_bytes, name) { expect_defined(make_##name, sizeof(type), #expr); }

/* Objects the constructors borrow; none is opened, as building a future
 * only records its arguments. */
static char buf[16];
static pl_io_fd fd;
static pl_pipe_reader reader;
static pl_pipe_writer writer;
static pl_tcp_listener listener;
static pl_tcp_stream stream;
static pl_udp_socket udp;
static pl_dir dir;
static pl_file file;
static pl_notify notify;
static pl_oneshot oneshot;
static pl_mpsc mpsc;
static pl_mutex mutex;
static pl_semaphore semaphore;
static pl_interval interval;
static pl_sleep inner;
static pl_sleep other;
static pl_future *children[2] = {&inner.base, &other.base};

static const struct sockaddr *loopback(void)
{
    static struct sockaddr_storage ss;
    socklen_t len = 0;
    cr_assert_eq(pl_addr_parse("127.0.0.1:9", &ss, &len), 0);
    return (const struct sockaddr *)&ss;
}

/* combinators.h, executor.h */
FUTURE_BYTES(join2, pl_join2, pl_join2_make(children[0], children[1]))
FUTURE_BYTES(join_all, pl_join_all, pl_join_all_make(children, 2))
FUTURE_BYTES(select, pl_select, pl_select_make(children, 2))
FUTURE_BYTES(join, pl_join, pl_join_make(NULL))

/* timer.h */
FUTURE_BYTES(sleep_for, pl_sleep, pl_sleep_for(5 * PL_MS))
FUTURE_BYTES(sleep_until, pl_sleep, pl_sleep_until(5 * PL_MS))
FUTURE_BYTES(sleep_poll_interval, pl_sleep, pl_sleep_poll_interval(5 * PL_MS))
FUTURE_BYTES(timeout, pl_timeout, pl_timeout_make(&inner.base, 5 * PL_MS))
FUTURE_BYTES(interval, pl_interval, pl_interval_make(5 * PL_MS))
FUTURE_BYTES(interval_tick, pl_interval_tick, pl_interval_tick_make(&interval))

/* sync.h */
FUTURE_BYTES(notified, pl_notified, pl_notified_make(&notify))
FUTURE_BYTES(oneshot_recv, pl_oneshot_recv, pl_oneshot_recv_make(&oneshot))
FUTURE_BYTES(mpsc_send, pl_mpsc_send, pl_mpsc_send_make(&mpsc, buf))
FUTURE_BYTES(mpsc_recv, pl_mpsc_recv, pl_mpsc_recv_make(&mpsc, buf))
FUTURE_BYTES(mutex_lock, pl_mutex_lock, pl_mutex_lock_make(&mutex))
FUTURE_BYTES(semaphore_acquire, pl_semaphore_acquire, pl_semaphore_acquire_make(&semaphore, 1))

/* io.h */
FUTURE_BYTES(fd_readable, pl_io_ready, pl_io_fd_readable(&fd))
FUTURE_BYTES(fd_writable, pl_io_ready, pl_io_fd_writable(&fd))
FUTURE_BYTES(fd_read, pl_io_read, pl_io_fd_read(&fd, buf, sizeof buf))
FUTURE_BYTES(fd_write, pl_io_write, pl_io_fd_write(&fd, buf, sizeof buf))
FUTURE_BYTES(fd_write_all, pl_io_write_all, pl_io_fd_write_all(&fd, buf, sizeof buf))
FUTURE_BYTES(pipe_read, pl_io_read, pl_pipe_read(&reader, buf, sizeof buf))
FUTURE_BYTES(pipe_write, pl_io_write, pl_pipe_write(&writer, buf, sizeof buf))
FUTURE_BYTES(pipe_write_all, pl_io_write_all, pl_pipe_write_all(&writer, buf, sizeof buf))
FUTURE_BYTES(tcp_accept, pl_tcp_accept, pl_tcp_accept_make(&listener))
FUTURE_BYTES(tcp_connect, pl_tcp_connect,
             pl_tcp_connect_make(loopback(), sizeof(struct sockaddr_in)))
FUTURE_BYTES(tcp_connect_str, pl_tcp_connect, pl_tcp_connect_str("127.0.0.1:9"))
FUTURE_BYTES(tcp_connect_bad, pl_tcp_connect, pl_tcp_connect_str("not an address"))
FUTURE_BYTES(tcp_read, pl_io_read, pl_tcp_read(&stream, buf, sizeof buf))
FUTURE_BYTES(tcp_write, pl_io_write, pl_tcp_write(&stream, buf, sizeof buf))
FUTURE_BYTES(tcp_write_all, pl_io_write_all, pl_tcp_write_all(&stream, buf, sizeof buf))
FUTURE_BYTES(udp_send, pl_udp_send,
             pl_udp_send_to(&udp, buf, sizeof buf, loopback(), sizeof(struct sockaddr_in)))
FUTURE_BYTES(udp_recv, pl_udp_recv, pl_udp_recv_from(&udp, buf, sizeof buf))

/* file.h */
FUTURE_BYTES(file_open, pl_file_open, pl_file_open_make(&dir, "f", PL_FILE_CREATE, 0644))
FUTURE_BYTES(file_read, pl_file_pread, pl_file_read(&file, buf, sizeof buf, 3))
FUTURE_BYTES(file_write, pl_file_pwrite, pl_file_write(&file, buf, sizeof buf, 3))
FUTURE_BYTES(file_write_all, pl_file_pwrite, pl_file_write_all(&file, buf, sizeof buf, 3))
FUTURE_BYTES(file_sync, pl_file_fsync, pl_file_sync(&file))
FUTURE_BYTES(file_datasync, pl_file_fsync, pl_file_datasync(&file))
FUTURE_BYTES(dir_sync, pl_file_fsync, pl_dir_sync(&dir))
FUTURE_BYTES(dir_rename, pl_dir_change, pl_dir_rename(&dir, "a", "b"))
FUTURE_BYTES(dir_unlink, pl_dir_change, pl_dir_unlink(&dir, "a"))
FUTURE_BYTES(dir_list, pl_dir_listing, pl_dir_list(&dir, buf, sizeof buf))

/* ---- Objects set up in place -------------------------------------------
 * A user's future often embeds these and sets them up in its first poll:
 * their init must define the bytes it is handed, whatever they held. */

#define IN_PLACE_BYTES(name, type, call)                                                           \
    static NOINLINE void make_##name(unsigned char pattern, unsigned char *out)                    \
    {                                                                                              \
        type value;                                                                                \
        memset(&value, pattern, sizeof value);                                                     \
        type *obj = &value;                                                                        \
        call;                                                                                      \
        memcpy(out, &value, sizeof value);                                                         \
    }                                                                                              \
    LEAK_TEST(future_bytes, name)                                                                  \
    {                                                                                              \
        unsigned char first[VALUE_MAX];                                                            \
        unsigned char second[VALUE_MAX];                                                           \
        make_##name(0x55, first);                                                                  \
        make_##name(0xAA, second);                                                                 \
        expect_same(first, second, sizeof(type), #call);                                           \
    }

static void expect_same(const unsigned char *a, const unsigned char *b, size_t size,
                        const char *what)
{
    size_t at = 0;
    while (at < size && a[at] == b[at]) {
        at++;
    }
    cr_expect_eq(at, size, "%s (%zu bytes): byte %zu is left as it was", what, size, at);
}

/* Each in-place init records pointers into the object itself (a list
 * head): built at one address, both copies compare alike. */
IN_PLACE_BYTES(notify_init, pl_notify, pl_notify_init(obj))
IN_PLACE_BYTES(oneshot_init, pl_oneshot, pl_oneshot_init(obj, buf, sizeof buf))
IN_PLACE_BYTES(mpsc_init_buffer, pl_mpsc, pl_mpsc_init_buffer(obj, buf, 4, 4))
IN_PLACE_BYTES(mutex_init, pl_mutex, pl_mutex_init(obj))
IN_PLACE_BYTES(semaphore_init, pl_semaphore, pl_semaphore_init(obj, 3))
IN_PLACE_BYTES(timer_init, pl_timer, *obj = PL_TIMER_INIT)
