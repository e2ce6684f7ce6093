/* tests/sim/test_reactor.c: the simulated reactor, on its own.
 *
 * The reactor only needs three things from the simulator: the virtual
 * clock, the decision stream and the trace (and a finding when it runs
 * out of memory). This file provides a fake
 * pl__sim with those (scripted or seeded decisions, counted events), so
 * the network's files (sim/src/net/) are linked alone, without sim.c,
 * which defines the same symbols. The system entries take the fake
 * pl__sim as self, as sim.c's vtable passes it. pl_io_source_ready comes
 * from libpollen.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>

#include <criterion/criterion.h>

#include "leakcheck.h"
#include "pollen/error.h"
#include "net/net.h"

/* ---- The fake simulator ------------------------------------------------- */

enum { SCRIPT_MAX = 64, READY_LOG_MAX = 256 };

/* sim_internal.h defines struct pl__sim; the fake uses only its clock and
 * keeps everything else here. */
static struct fake {
    uint32_t script[PL_DECIDE__COUNT][SCRIPT_MAX]; /* answers per kind, in order */
    size_t script_len[PL_DECIDE__COUNT];
    size_t script_pos[PL_DECIDE__COUNT];
    uint32_t random_kinds; /* bit per kind answered by the generator */
    uint64_t rng;
    uint64_t asked[PL_DECIDE__COUNT]; /* decisions with n >= 2 */
    uint64_t events[PL__EV__COUNT];
    uint64_t ready_a[READY_LOG_MAX]; /* IO_READY events: source id, bits */
    uint64_t ready_b[READY_LOG_MAX];
    size_t ready_len;
} fk;

static pl__sim sim;
static pl__reactor *R;
static bool sim_always_fault; /* IO_FAULT answers its last choice */

pl_time pl__sim_now(const pl__sim *s)
{
    return s->now;
}

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

uint32_t pl__sim_choose(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    (void)s;
    (void)key;
    cr_assert(n >= 1, "a decision needs at least one choice");
    if (n == 1) {
        return 0;
    }
    fk.asked[kind]++;
    if (sim_always_fault && kind == PL_DECIDE_IO_FAULT) {
        return n - 1;
    }
    if (fk.random_kinds & (1u << kind)) {
        return (uint32_t)(xorshift(&fk.rng) % n);
    }
    if (fk.script_pos[kind] < fk.script_len[kind]) {
        uint32_t v = fk.script[kind][fk.script_pos[kind]++];
        cr_assert_lt(v, n, "scripted %u for kind %d with n = %u", v, (int)kind, n);
        return v;
    }
    return 0;
}

void pl__sim_event(pl__sim *s, uint32_t kind, uint32_t task, uint64_t a, uint64_t b)
{
    (void)s;
    cr_assert_lt(kind, (uint32_t)PL__EV__COUNT);
    cr_assert_eq(task, 0u);
    fk.events[kind]++;
    if (kind == PL__EV_IO_READY && fk.ready_len < READY_LOG_MAX) {
        fk.ready_a[fk.ready_len] = a;
        fk.ready_b[fk.ready_len] = b;
        fk.ready_len++;
    }
}

/* The reactor reports only out-of-memory findings, which these tests
 * never provoke. */
void pl__sim_finding(pl__sim *s, pl_finding_kind kind, const pl_task *t, const char *fmt, ...)
{
    (void)s;
    (void)t;
    cr_assert_fail("unexpected finding of kind %d (%s)", (int)kind, fmt);
}

static void script(pl_decision_kind kind, size_t n, const uint32_t *values)
{
    cr_assert_leq(n, (size_t)SCRIPT_MAX);
    memcpy(fk.script[kind], values, n * sizeof *values);
    fk.script_len[kind] = n;
    fk.script_pos[kind] = 0;
}

#define SCRIPT(kind, ...)                                                                 \
    script((kind), sizeof((const uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t),         \
           (const uint32_t[]){__VA_ARGS__})

static void setup(void)
{
    memset(&sim, 0, sizeof sim);
    memset(&fk, 0, sizeof fk);
    sim_always_fault = false;
    cr_assert_eq(pl__reactor_create(&R, &sim), 0);
    sim.reactor = R; /* the system entries find it through their self */
}

static void teardown(void)
{
    pl__reactor_destroy(R);
    R = NULL;
    pl_test_leak_check();
}

TestSuite(reactor, .init = setup, .fini = teardown);

/* ---- Helpers ------------------------------------------------------------ */

/* One latency step of the reactor's fault options. */
#define QUANTUM_NS (pl__reactor_faults(R)->latency_quantum_ns)

/* The default fault options, for a test to change. */
static pl_sim_fault_options faults_default(void)
{
    pl_sim_fault_options o;
    pl_sim_fault_options_default(&o);
    return o;
}

/* Only the fault classes named: short reads and writes, EAGAIN, loss, reset. */
static void set_faults(bool short_rw, bool eagain, bool loss, bool reset)
{
    pl_sim_fault_options o = faults_default();
    o.short_read = o.short_write = short_rw;
    o.eagain = eagain;
    o.dgram_loss = loss;
    o.conn_reset = reset;
    pl__reactor_set_faults(R, &o);
}

/* Delivers everything due now. */
static size_t deliver_now(void)
{
    return pl__reactor_deliver(R, sim.now);
}

/* Runs the clock forward until nothing is in flight. */
static size_t run_all(void)
{
    size_t fired = 0;
    for (pl_time t = pl__reactor_next_event(R); t != PL_TIME_NEVER;
         t = pl__reactor_next_event(R)) {
        cr_assert_geq(t, sim.now, "an event in the past");
        sim.now = t;
        fired += pl__reactor_deliver(R, sim.now);
    }
    return fired;
}

static uint32_t next_source_id = 1;

static void reg(pl_io_source *src, int handle)
{
    *src = (pl_io_source){.handle = handle,
                          .id = next_source_id++,
                          .read_waker = PL_WAKER_EMPTY,
                          .write_waker = PL_WAKER_EMPTY};
    cr_assert_eq(pl__net_io_register(&sim, src), 0);
    src->registered = 1;
}

static void unreg(pl_io_source *src)
{
    pl__net_io_deregister(&sim, src);
    src->registered = 0;
}

/* A waker that counts its wakes: the readiness path really wakes. */
static int wakes;

static void counting_clone(const pl_waker *w, pl_waker *out)
{
    *out = *w;
}

static void counting_wake(pl_waker w)
{
    (void)w;
    wakes++;
}

static void counting_wake_by_ref(const pl_waker *w)
{
    (void)w;
    wakes++;
}

static void counting_drop(pl_waker w)
{
    (void)w;
}

static const pl_waker_vtable counting_vtable = {counting_clone, counting_wake,
                                                counting_wake_by_ref, counting_drop};

static pl_waker counting_waker(void)
{
    return (pl_waker){&counting_vtable, NULL, 0, 0};
}

static struct sockaddr_in v4(const char *ip, uint16_t port)
{
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    cr_assert_eq(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
    return sin;
}

#define SA(x) ((const struct sockaddr *)&(x))
#define SALEN(x) ((socklen_t)sizeof(x))

static int port_of(int handle)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    cr_assert_eq(pl__net_local_addr(&sim, handle, (struct sockaddr *)&ss, &len), 0);
    if (ss.ss_family == AF_INET) {
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
    return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

static int listener_on(const char *ip, uint16_t port)
{
    int l = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    cr_assert_geq(l, PL__NET_HANDLE_FIRST);
    struct sockaddr_in a = v4(ip, port);
    cr_assert_eq(pl__net_bind(&sim, l, SA(a), SALEN(a)), 0);
    cr_assert_eq(pl__net_listen(&sim, l, 16), 0);
    return l;
}

/* Connects to the listener's port and accepts: *client, *server. */
static void connected_pair(int l, int *client, int *server)
{
    *client = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    struct sockaddr_in a = v4("127.0.0.1", (uint16_t)port_of(l));
    cr_assert_eq(pl__net_connect(&sim, *client, SA(a), SALEN(a)), PL_EINPROGRESS);
    run_all();
    cr_assert_eq(pl__net_connect_result(&sim, *client), 0);
    /* A spurious EAGAIN (random faults) is re-notified: just run on. */
    while ((*server = pl__net_accept(&sim, l, NULL, NULL)) == PL_EAGAIN) {
        cr_assert_neq(pl__reactor_next_event(R), PL_TIME_NEVER, "accept lost its wakeup");
        run_all();
    }
    cr_assert_geq(*server, PL__NET_HANDLE_FIRST);
}

/* Reads everything readable now into buf (at most cap bytes). */
static size_t drain(int handle, uint8_t *buf, size_t cap)
{
    size_t got = 0;
    for (;;) {
        ssize_t n = pl__net_read(&sim, handle, buf + got, cap - got);
        if (n <= 0) {
            cr_assert(n == 0 || n == PL_EAGAIN, "read: %s", pl_err_name((int)n));
            return got;
        }
        got += (size_t)n;
    }
}

/* ---- Pipes -------------------------------------------------------------- */

Test(reactor, pipe_write_read_eof)
{
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    cr_assert_eq(h[0], PL__NET_HANDLE_FIRST);
    cr_assert_eq(h[1], PL__NET_HANDLE_FIRST + 1);
    pl_io_source rs, ws;
    reg(&rs, h[0]);
    reg(&ws, h[1]);
    cr_assert_eq(rs.ready, 0u, "an empty pipe is not readable");
    cr_assert_eq(ws.ready, (uint32_t)PL_IO_WRITABLE);
    rs.read_waker = counting_waker();
    wakes = 0;

    uint8_t buf[16];
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), PL_EAGAIN);
    cr_assert_eq(pl__net_write(&sim, h[1], "hello", 5), 5);
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), PL_EAGAIN,
                 "nothing is readable before delivery");
    cr_assert_eq(pl__reactor_next_event(R), 0, "choice 0 of the latency is no delay");
    cr_assert_eq(deliver_now(), 1u);
    cr_assert_eq(wakes, 1, "the reader's waker was woken");
    cr_assert(rs.ready & PL_IO_READABLE);
    cr_assert_eq(fk.events[PL__EV_IO_READY], 1u);
    cr_assert_eq(fk.ready_a[0], rs.id, "the trace names the source by id");
    cr_assert_eq(fk.ready_b[0], (uint64_t)PL_IO_READABLE);
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), 5);
    cr_assert_eq(memcmp(buf, "hello", 5), 0);

    unreg(&ws);
    cr_assert_eq(pl__net_close(&sim, h[1]), 0);
    rs.ready = 0;
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), PL_EAGAIN, "EOF is in flight");
    cr_assert_eq(run_all(), 1u);
    cr_assert(rs.ready & PL_IO_READABLE, "end of stream is readiness");
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), 0);
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), 0, "EOF stays");
    unreg(&rs);
    cr_assert_eq(pl__net_close(&sim, h[0]), 0);
    cr_assert_eq(pl__reactor_open_handles(R), 0u);
}

Test(reactor, pipe_eof_comes_after_data_in_flight)
{
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    SCRIPT(PL_DECIDE_IO_LATENCY, 7, 0);
    cr_assert_eq(pl__net_write(&sim, h[1], "late", 4), 4);
    cr_assert_eq(pl__net_close(&sim, h[1]), 0);
    deliver_now();
    uint8_t buf[8];
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), PL_EAGAIN,
                 "the FIN drew no delay but must wait for the data");
    run_all();
    cr_assert_eq(sim.now, 7 * QUANTUM_NS);
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), 4);
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), 0);
}

Test(reactor, pipe_write_after_reader_closed_is_epipe)
{
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    pl_io_source ws;
    reg(&ws, h[1]);
    ws.ready = 0;
    cr_assert_eq(pl__net_write(&sim, h[1], "x", 1), 1);
    cr_assert_eq(pl__net_close(&sim, h[0]), 0);
    cr_assert_eq(pl__net_write(&sim, h[1], "y", 1), PL_EPIPE);
    run_all();
    cr_assert_eq(ws.ready, (uint32_t)(PL_IO_WRITABLE | PL_IO_ERROR),
                 "a writer learns its reader is gone");
    cr_assert_eq(pl__net_read(&sim, h[1], NULL, 0), PL_EBADF, "the write end cannot read");
    cr_assert_eq(pl__net_write(&sim, h[0], "z", 1), PL_EBADF, "closed");
    unreg(&ws);
}

Test(reactor, registration_reports_current_state)
{
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    cr_assert_eq(pl__net_write(&sim, h[1], "abc", 3), 3);
    cr_assert_eq(run_all(), 0u, "nothing registered, nothing fired");
    pl_io_source rs;
    reg(&rs, h[0]);
    cr_assert_eq(rs.ready, (uint32_t)PL_IO_READABLE, "data arrived before registration");
    pl_io_source again = {.handle = h[0]};
    cr_assert_eq(pl__net_io_register(&sim, &again), PL_EINVAL, "one registration per handle");
    pl_io_source bad = {.handle = 99};
    cr_assert_eq(pl__net_io_register(&sim, &bad), PL_EBADF);
    unreg(&rs);
}

/* ---- Streams ------------------------------------------------------------ */

Test(reactor, stream_connect_accept_echo)
{
    int l = listener_on("127.0.0.1", 0);
    cr_assert_eq(port_of(l), PL__NET_EPHEMERAL_FIRST);
    pl_io_source ls;
    reg(&ls, l);
    cr_assert_eq(ls.ready, 0u);
    cr_assert_eq(pl__net_accept(&sim, l, NULL, NULL), PL_EAGAIN);

    int c = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    struct sockaddr_in to = v4("127.0.0.1", PL__NET_EPHEMERAL_FIRST);
    cr_assert_eq(pl__net_connect(&sim, c, SA(to), SALEN(to)), PL_EINPROGRESS);
    pl_io_source cs;
    reg(&cs, c);
    cr_assert_eq(cs.ready, 0u, "a connecting socket is not writable yet");
    cr_assert_eq(pl__net_connect_result(&sim, c), PL_EINPROGRESS);
    cr_assert_eq(pl__net_write(&sim, c, "x", 1), PL_EAGAIN);
    cr_assert_eq(run_all(), 2u);
    cr_assert(cs.ready & PL_IO_WRITABLE);
    cr_assert(ls.ready & PL_IO_READABLE);
    cr_assert_eq(pl__net_connect_result(&sim, c), 0);
    cr_assert_eq(port_of(c), PL__NET_EPHEMERAL_FIRST + 1, "the client got the next port");

    struct sockaddr_in peer;
    socklen_t peer_len = sizeof peer;
    int s = pl__net_accept(&sim, l, (struct sockaddr *)&peer, &peer_len);
    cr_assert_geq(s, PL__NET_HANDLE_FIRST);
    cr_assert_eq(peer_len, (socklen_t)sizeof peer);
    cr_assert_eq(ntohs(peer.sin_port), PL__NET_EPHEMERAL_FIRST + 1);
    cr_assert_eq(ntohl(peer.sin_addr.s_addr), 0x7f000001u);
    cr_assert_eq(port_of(s), PL__NET_EPHEMERAL_FIRST, "accepted: the listener's address");
    pl_io_source ss;
    reg(&ss, s);
    cr_assert_eq(ss.ready, (uint32_t)PL_IO_WRITABLE);

    cr_assert_eq(pl__net_write(&sim, c, "ping", 4), 4);
    run_all();
    cr_assert(ss.ready & PL_IO_READABLE);
    uint8_t buf[8];
    cr_assert_eq(pl__net_read(&sim, s, buf, sizeof buf), 4);
    cr_assert_eq(pl__net_write(&sim, s, buf, 4), 4);
    cs.ready = 0;
    run_all();
    cr_assert(cs.ready & PL_IO_READABLE);
    memset(buf, 0, sizeof buf);
    cr_assert_eq(pl__net_read(&sim, c, buf, sizeof buf), 4);
    cr_assert_eq(memcmp(buf, "ping", 4), 0);

    /* Client closes: the server reads end of stream, its writes fail. */
    unreg(&cs);
    cr_assert_eq(pl__net_close(&sim, c), 0);
    ss.ready = 0;
    run_all();
    cr_assert(ss.ready & PL_IO_READABLE);
    cr_assert(ss.ready & PL_IO_ERROR, "the writer side learns the peer is gone");
    cr_assert_eq(pl__net_read(&sim, s, buf, sizeof buf), 0);
    cr_assert_eq(pl__net_write(&sim, s, "x", 1), PL_EPIPE);
    unreg(&ss);
    unreg(&ls);
}

Test(reactor, stream_ipv6_loopback)
{
    int l = pl__net_socket(&sim, AF_INET6, SOCK_STREAM);
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof a);
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    a.sin6_port = htons(9000);
    cr_assert_eq(pl__net_bind(&sim, l, SA(a), SALEN(a)), 0);
    cr_assert_eq(pl__net_listen(&sim, l, 0), 0);
    int c = pl__net_socket(&sim, AF_INET6, SOCK_STREAM);
    cr_assert_eq(pl__net_connect(&sim, c, SA(a), SALEN(a)), PL_EINPROGRESS);
    run_all();
    cr_assert_eq(pl__net_connect_result(&sim, c), 0);
    struct sockaddr_in6 peer;
    socklen_t len = sizeof peer;
    int s = pl__net_accept(&sim, l, (struct sockaddr *)&peer, &len);
    cr_assert_geq(s, PL__NET_HANDLE_FIRST);
    cr_assert_eq(peer.sin6_family, AF_INET6);
    cr_assert(IN6_IS_ADDR_LOOPBACK(&peer.sin6_addr));
    cr_assert_eq(port_of(c), PL__NET_EPHEMERAL_FIRST);
}

Test(reactor, connect_refused)
{
    int c = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    struct sockaddr_in to = v4("127.0.0.1", 5555);
    cr_assert_eq(pl__net_connect(&sim, c, SA(to), SALEN(to)), PL_EINPROGRESS);
    pl_io_source cs;
    reg(&cs, c);
    cs.write_waker = counting_waker();
    wakes = 0;
    cr_assert_eq(run_all(), 1u);
    cr_assert_eq(wakes, 1);
    cr_assert(cs.ready & PL_IO_WRITABLE);
    cr_assert(cs.ready & PL_IO_ERROR);
    cr_assert_eq(pl__net_connect_result(&sim, c), PL_ECONNREFUSED);
    cr_assert_eq(pl__net_write(&sim, c, "x", 1), PL_ECONNREFUSED);
    unreg(&cs);

    /* A listener that closed before the attempt arrived refuses too. */
    int l = listener_on("127.0.0.1", 7000);
    int c2 = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    struct sockaddr_in to2 = v4("127.0.0.1", 7000);
    SCRIPT(PL_DECIDE_IO_LATENCY, 3);
    cr_assert_eq(pl__net_connect(&sim, c2, SA(to2), SALEN(to2)), PL_EINPROGRESS);
    cr_assert_eq(pl__net_close(&sim, l), 0);
    run_all();
    cr_assert_eq(pl__net_connect_result(&sim, c2), PL_ECONNREFUSED);
}

Test(reactor, full_backlog_refuses)
{
    int l = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    struct sockaddr_in a = v4("127.0.0.1", 7001);
    cr_assert_eq(pl__net_bind(&sim, l, SA(a), SALEN(a)), 0);
    cr_assert_eq(pl__net_listen(&sim, l, 1), 0);
    int c1 = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    int c2 = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    cr_assert_eq(pl__net_connect(&sim, c1, SA(a), SALEN(a)), PL_EINPROGRESS);
    cr_assert_eq(pl__net_connect(&sim, c2, SA(a), SALEN(a)), PL_EINPROGRESS);
    run_all();
    cr_assert_eq(pl__net_connect_result(&sim, c1), 0);
    cr_assert_eq(pl__net_connect_result(&sim, c2), PL_ECONNREFUSED);
}

Test(reactor, unsupported_and_bad_arguments)
{
    cr_assert_eq(pl__net_socket(&sim, AF_UNIX, SOCK_STREAM), PL_ENOSYS);
    cr_assert_eq(pl__net_socket(&sim, AF_INET, SOCK_RAW), PL_ENOSYS);
    cr_assert_eq(pl__net_socket(&sim, -1, SOCK_STREAM), PL_EINVAL);
    int s = pl__net_socket(&sim, AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC);
    cr_assert_geq(s, PL__NET_HANDLE_FIRST, "flags are accepted and ignored");

    struct sockaddr_in far = v4("192.168.0.1", 80);
    cr_assert_eq(pl__net_bind(&sim, s, SA(far), SALEN(far)), PL_EADDRNOTAVAIL);
    cr_assert_eq(pl__net_connect(&sim, s, SA(far), SALEN(far)), PL_EADDRNOTAVAIL);
    struct sockaddr_in any = v4("0.0.0.0", 80);
    cr_assert_eq(pl__net_bind(&sim, s, SA(any), SALEN(any)), PL_EADDRNOTAVAIL);
    struct sockaddr_in lo = v4("127.0.0.1", 80);
    cr_assert_eq(pl__net_bind(&sim, s, SA(lo), 4), PL_EINVAL, "short address");
    cr_assert_eq(pl__net_bind(&sim, s, NULL, 0), PL_EINVAL);
    cr_assert_eq(pl__net_read(&sim, s, NULL, 0), PL_ENOTCONN);
    cr_assert_eq(pl__net_accept(&sim, s, NULL, NULL), PL_EINVAL, "not listening");
    cr_assert_eq(pl__net_connect_result(&sim, s), PL_ENOTCONN);

    int u = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    cr_assert_eq(pl__net_connect(&sim, u, SA(lo), SALEN(lo)), PL_ENOSYS);
    cr_assert_eq(pl__net_listen(&sim, u, 1), PL_EINVAL);
    cr_assert_eq(pl__net_write(&sim, u, "x", 1), PL_ENOTCONN);

    cr_assert_eq(pl__net_bind(&sim, s, SA(lo), SALEN(lo)), 0);
    int s2 = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    cr_assert_eq(pl__net_bind(&sim, s2, SA(lo), SALEN(lo)), PL_EADDRINUSE);
    cr_assert_eq(pl__net_bind(&sim, u, SA(lo), SALEN(lo)), 0, "UDP has its own ports");
    cr_assert_eq(pl__net_close(&sim, 2), PL_EBADF);
    cr_assert_eq(pl__net_close(&sim, 1000), PL_EBADF);
    cr_assert_eq(pl__net_shutdown(&sim, s, SHUT_WR), PL_ENOTCONN);

    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    socklen_t len = 0;
    cr_assert_eq(pl__net_local_addr(&sim, h[0], NULL, &len), PL_EINVAL);
}

Test(reactor, unbound_socket_reports_wildcard)
{
    int s = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0xff, sizeof a);
    cr_assert_eq(pl__net_local_addr(&sim, s, (struct sockaddr *)&a, &len), 0);
    cr_assert_eq(a.sin_family, AF_INET);
    cr_assert_eq(a.sin_port, 0);
    cr_assert_eq(a.sin_addr.s_addr, 0u);
}

/* ---- Ordering and latency ----------------------------------------------- */

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 7 + i / 251);
}

Test(reactor, stream_order_survives_random_latencies)
{
    fk.random_kinds = 1u << PL_DECIDE_IO_LATENCY;
    fk.rng = 0x9e3779b97f4a7c15u;
    int l = listener_on("127.0.0.1", 0);
    int c, s;
    connected_pair(l, &c, &s);

    static uint8_t out[40000];
    static uint8_t in[40000];
    for (size_t i = 0; i < sizeof out; i++) {
        out[i] = pattern(i);
    }
    size_t sent = 0, got = 0, chunk = 1;
    int arrivals_in_pieces = 0;
    while (got < sizeof in) {
        if (sent < sizeof out) {
            size_t n = chunk < sizeof out - sent ? chunk : sizeof out - sent;
            ssize_t w = pl__net_write(&sim, c, out + sent, n);
            cr_assert_gt(w, 0);
            sent += (size_t)w;
            chunk = chunk % 97 + 1;
        }
        sim.now += QUANTUM_NS / 2;
        pl__reactor_deliver(R, sim.now);
        size_t n = drain(s, in + got, sizeof in - got);
        arrivals_in_pieces += n > 0 && n < sent - got;
        got += n;
        cr_assert_eq(memcmp(in, out, got), 0, "bytes out of order at %zu", got);
    }
    cr_assert_gt(fk.asked[PL_DECIDE_IO_LATENCY], 100u);
    cr_assert_gt(arrivals_in_pieces, 0, "latencies really varied");
}

Test(reactor, a_later_chunk_waits_for_an_earlier_one)
{
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    SCRIPT(PL_DECIDE_IO_LATENCY, 6, 0);
    cr_assert_eq(pl__net_write(&sim, h[1], "A", 1), 1);
    cr_assert_eq(pl__net_write(&sim, h[1], "B", 1), 1);
    deliver_now();
    uint8_t b[2];
    cr_assert_eq(pl__net_read(&sim, h[0], b, 2), PL_EAGAIN,
                 "B drew no delay but may not overtake A, nor pull it forward");
    sim.now = 6 * QUANTUM_NS - 1;
    deliver_now();
    cr_assert_eq(pl__net_read(&sim, h[0], b, 2), PL_EAGAIN);
    sim.now++;
    deliver_now();
    cr_assert_eq(pl__net_read(&sim, h[0], b, 2), 2);
    cr_assert_eq(memcmp(b, "AB", 2), 0);
}

Test(reactor, dgrams_may_reorder_under_random_latencies)
{
    fk.random_kinds = 1u << PL_DECIDE_IO_LATENCY;
    fk.rng = 12345;
    int a = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    int b = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    struct sockaddr_in any = v4("127.0.0.1", 0);
    cr_assert_eq(pl__net_bind(&sim, a, SA(any), SALEN(any)), 0);
    cr_assert_eq(pl__net_bind(&sim, b, SA(any), SALEN(any)), 0);
    struct sockaddr_in to = v4("127.0.0.1", (uint16_t)port_of(b));
    for (uint8_t i = 0; i < 50; i++) {
        cr_assert_eq(pl__net_sendto(&sim, a, &i, 1, SA(to), SALEN(to)), 1);
    }
    run_all();
    int seen[50] = {0};
    int inversions = 0;
    int last = -1;
    for (int i = 0; i < 50; i++) {
        uint8_t v;
        cr_assert_eq(pl__net_recvfrom(&sim, b, &v, 1, NULL, NULL), 1);
        cr_assert_lt(v, 50);
        seen[v]++;
        inversions += v < last;
        last = v;
    }
    cr_assert_eq(pl__net_recvfrom(&sim, b, NULL, 0, NULL, NULL), PL_EAGAIN);
    for (int i = 0; i < 50; i++) {
        cr_assert_eq(seen[i], 1, "datagram %d lost or duplicated", i);
    }
    cr_assert_gt(inversions, 0, "independent latencies reorder datagrams");
}

Test(reactor, simultaneous_readiness_follows_io_order)
{
    int p[2], q[2];
    cr_assert_eq(pl__net_pipe(&sim, p), 0);
    cr_assert_eq(pl__net_pipe(&sim, q), 0);
    pl_io_source ps, qs;
    reg(&ps, p[0]);
    reg(&qs, q[0]);
    cr_assert_eq(pl__net_write(&sim, p[1], "p", 1), 1);
    cr_assert_eq(pl__net_write(&sim, q[1], "q", 1), 1);
    deliver_now();
    cr_assert_eq(fk.ready_len, 2u);
    cr_assert_eq(fk.ready_a[0], ps.id, "choice 0: first marked first");
    cr_assert_eq(fk.ready_a[1], qs.id);
    cr_assert_eq(fk.asked[PL_DECIDE_IO_ORDER], 1u, "one choice among two, none for the last");

    SCRIPT(PL_DECIDE_IO_ORDER, 1);
    cr_assert_eq(pl__net_write(&sim, p[1], "p", 1), 1);
    cr_assert_eq(pl__net_write(&sim, q[1], "q", 1), 1);
    deliver_now();
    cr_assert_eq(fk.ready_len, 4u);
    cr_assert_eq(fk.ready_a[2], qs.id, "choice 1 picks the second");
    cr_assert_eq(fk.ready_a[3], ps.id);
    unreg(&ps);
    unreg(&qs);
}

Test(reactor, latency_is_choice_times_quantum)
{
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    SCRIPT(PL_DECIDE_IO_LATENCY, 5);
    sim.now = 1000;
    cr_assert_eq(pl__net_write(&sim, h[1], "x", 1), 1);
    cr_assert_eq(pl__reactor_next_event(R), 1000 + 5 * QUANTUM_NS);
    cr_assert_eq(pl__reactor_deliver(R, sim.now), 0u);
    uint8_t b;
    cr_assert_eq(pl__net_read(&sim, h[0], &b, 1), PL_EAGAIN);
    run_all();
    cr_assert_eq(pl__net_read(&sim, h[0], &b, 1), 1);
}

/* ---- Faults ------------------------------------------------------------- */

Test(reactor, short_reads_and_writes)
{
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    /* write: [none, short, eagain]; then the amount: 1 + 9 of 100. */
    SCRIPT(PL_DECIDE_IO_FAULT, 1, 9);
    uint8_t out[100], in[100];
    for (int i = 0; i < 100; i++) {
        out[i] = (uint8_t)i;
    }
    cr_assert_eq(pl__net_write(&sim, h[1], out, 100), 10);
    cr_assert_eq(pl__net_write(&sim, h[1], out + 10, 90), 90);
    run_all();
    /* read: short by the minimum, 1 byte. */
    SCRIPT(PL_DECIDE_IO_FAULT, 1, 0);
    cr_assert_eq(pl__net_read(&sim, h[0], in, 100), 1);
    cr_assert_eq(pl__net_read(&sim, h[0], in + 1, 99), 99, "the rest is still readable");
    cr_assert_eq(memcmp(in, out, 100), 0);

    /* One byte cannot be short: only [none, eagain] is offered. */
    cr_assert_eq(pl__net_write(&sim, h[1], out, 1), 1);
    run_all();
    SCRIPT(PL_DECIDE_IO_FAULT, 1);
    cr_assert_eq(pl__net_read(&sim, h[0], in, 1), PL_EAGAIN, "choice 1 is EAGAIN here");
}

Test(reactor, spurious_eagain_on_read_is_renotified)
{
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    pl_io_source rs;
    reg(&rs, h[0]);
    cr_assert_eq(pl__net_write(&sim, h[1], "data", 4), 4);
    run_all();
    cr_assert(rs.ready & PL_IO_READABLE);

    SCRIPT(PL_DECIDE_IO_FAULT, 2);
    SCRIPT(PL_DECIDE_IO_LATENCY, 3);
    uint8_t buf[8];
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), PL_EAGAIN);
    /* What an edge-triggered future does on EAGAIN. */
    rs.ready &= ~(uint32_t)PL_IO_READABLE;
    rs.read_waker = counting_waker();
    wakes = 0;
    cr_assert_eq(pl__reactor_next_event(R), 3 * QUANTUM_NS,
                 "readiness comes back after a latency");
    cr_assert_eq(run_all(), 1u);
    cr_assert_eq(wakes, 1, "no wakeup is lost");
    cr_assert(rs.ready & PL_IO_READABLE);
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), 4);
    unreg(&rs);
}

Test(reactor, spurious_eagain_on_write_and_accept_is_renotified)
{
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    pl_io_source ws;
    reg(&ws, h[1]);
    SCRIPT(PL_DECIDE_IO_FAULT, 2);
    cr_assert_eq(pl__net_write(&sim, h[1], "abc", 3), PL_EAGAIN);
    ws.ready = 0;
    run_all();
    cr_assert_eq(ws.ready, (uint32_t)PL_IO_WRITABLE);
    cr_assert_eq(pl__net_write(&sim, h[1], "abc", 3), 3);
    unreg(&ws);

    int l = listener_on("127.0.0.1", 0);
    pl_io_source ls;
    reg(&ls, l);
    int c = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    struct sockaddr_in to = v4("127.0.0.1", (uint16_t)port_of(l));
    cr_assert_eq(pl__net_connect(&sim, c, SA(to), SALEN(to)), PL_EINPROGRESS);
    run_all();
    SCRIPT(PL_DECIDE_IO_FAULT, 1); /* accept: [none, eagain] */
    cr_assert_eq(pl__net_accept(&sim, l, NULL, NULL), PL_EAGAIN);
    ls.ready = 0;
    cr_assert_eq(run_all(), 1u);
    cr_assert(ls.ready & PL_IO_READABLE);
    cr_assert_geq(pl__net_accept(&sim, l, NULL, NULL), PL__NET_HANDLE_FIRST);
    unreg(&ls);
}

Test(reactor, spurious_eagain_never_twice_in_a_row)
{
    set_faults(false, true, false, false);
    int l = listener_on("127.0.0.1", 0);
    int c = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    struct sockaddr_in to = v4("127.0.0.1", (uint16_t)port_of(l));
    cr_assert_eq(pl__net_connect(&sim, c, SA(to), SALEN(to)), PL_EINPROGRESS);
    int c2 = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    cr_assert_eq(pl__net_connect(&sim, c2, SA(to), SALEN(to)), PL_EINPROGRESS);
    run_all();
    /* Even a stream that always says "fault" lets every other accept through. */
    sim_always_fault = true;
    cr_assert_eq(pl__net_accept(&sim, l, NULL, NULL), PL_EAGAIN);
    uint64_t asked = fk.asked[PL_DECIDE_IO_FAULT];
    int s = pl__net_accept(&sim, l, NULL, NULL);
    cr_assert_geq(s, PL__NET_HANDLE_FIRST, "the attempt after a spurious EAGAIN is exempt");
    cr_assert_eq(fk.asked[PL_DECIDE_IO_FAULT], asked, "no fault was offered");
    cr_assert_eq(pl__net_accept(&sim, l, NULL, NULL), PL_EAGAIN, "and then faults resume");
    cr_assert_geq(pl__net_accept(&sim, l, NULL, NULL), PL__NET_HANDLE_FIRST);
    /* Per direction: a read's EAGAIN does not exempt the next write. */
    cr_assert_eq(pl__net_write(&sim, s, "x", 1), PL_EAGAIN);
    cr_assert_eq(pl__net_write(&sim, s, "x", 1), 1);
    sim_always_fault = false;
}

Test(reactor, faults_off_consult_nothing)
{
    set_faults(false, false, false, false);
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    cr_assert_eq(pl__net_write(&sim, h[1], "abcdef", 6), 6);
    run_all();
    uint8_t buf[8];
    cr_assert_eq(pl__net_read(&sim, h[0], buf, sizeof buf), 6);
    cr_assert_eq(fk.asked[PL_DECIDE_IO_FAULT], 0u);
    pl_sim_fault_options d = faults_default();
    cr_assert(!d.dgram_loss && !d.conn_reset, "loss and reset are off unless asked for");
}

Test(reactor, bounded_buffer_then_writable_after_drain)
{
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    pl_io_source ws;
    reg(&ws, h[1]);
    static uint8_t big[PL__NET_STREAM_BUF_MAX + 100];
    memset(big, 'b', sizeof big);
    cr_assert_eq(pl__net_write(&sim, h[1], big, sizeof big), (ssize_t)PL__NET_STREAM_BUF_MAX,
                 "a write takes what fits");
    cr_assert_eq(pl__net_write(&sim, h[1], big, 1), PL_EAGAIN, "unread plus in flight is full");
    ws.ready = 0;
    ws.write_waker = counting_waker();
    wakes = 0;
    run_all();
    cr_assert_eq(ws.ready, 0u, "delivery alone frees no space");
    cr_assert_eq(pl__net_write(&sim, h[1], big, 1), PL_EAGAIN);

    SCRIPT(PL_DECIDE_IO_LATENCY, 2);
    cr_assert_eq(pl__net_read(&sim, h[0], big, 1000), 1000);
    cr_assert_eq(pl__reactor_next_event(R), 2 * QUANTUM_NS);
    run_all();
    cr_assert_eq(wakes, 1);
    cr_assert(ws.ready & PL_IO_WRITABLE);
    cr_assert_eq(pl__net_write(&sim, h[1], big, 5000), 1000);
    unreg(&ws);
}

Test(reactor, reader_close_wakes_a_blocked_writer)
{
    int h[2];
    cr_assert_eq(pl__net_pipe(&sim, h), 0);
    pl_io_source ws;
    reg(&ws, h[1]);
    static uint8_t big[PL__NET_STREAM_BUF_MAX];
    cr_assert_eq(pl__net_write(&sim, h[1], big, sizeof big), (ssize_t)sizeof big);
    cr_assert_eq(pl__net_write(&sim, h[1], big, 1), PL_EAGAIN);
    ws.ready = 0;
    cr_assert_eq(pl__net_close(&sim, h[0]), 0);
    run_all();
    cr_assert(ws.ready & PL_IO_ERROR);
    cr_assert_eq(pl__net_write(&sim, h[1], big, 1), PL_EPIPE);
    unreg(&ws);
}

Test(reactor, reset_only_with_its_knob)
{
    set_faults(true, true, false, true);
    int l = listener_on("127.0.0.1", 0);
    int c, s;
    connected_pair(l, &c, &s);
    pl_io_source ss;
    reg(&ss, s);
    ss.ready = 0;
    /* write of 2 bytes: [none, short, eagain, reset]. */
    SCRIPT(PL_DECIDE_IO_FAULT, 3);
    cr_assert_eq(pl__net_write(&sim, c, "hi", 2), PL_ECONNRESET);
    cr_assert_eq(pl__net_write(&sim, c, "hi", 2), PL_ECONNRESET, "stays reset");
    cr_assert_eq(pl__net_connect_result(&sim, c), PL_ECONNRESET);
    run_all();
    cr_assert(ss.ready & PL_IO_ERROR, "the peer hears of it");
    uint8_t b[4];
    cr_assert_eq(pl__net_read(&sim, s, b, sizeof b), PL_ECONNRESET);
    unreg(&ss);
}

Test(reactor, shutdown_write_gives_peer_eof)
{
    int l = listener_on("127.0.0.1", 0);
    int c, s;
    connected_pair(l, &c, &s);
    cr_assert_eq(pl__net_write(&sim, c, "bye", 3), 3);
    cr_assert_eq(pl__net_shutdown(&sim, c, SHUT_WR), 0);
    cr_assert_eq(pl__net_write(&sim, c, "x", 1), PL_EPIPE);
    cr_assert_eq(pl__net_shutdown(&sim, c, 42), PL_EINVAL);
    run_all();
    uint8_t b[8];
    cr_assert_eq(pl__net_read(&sim, s, b, sizeof b), 3);
    cr_assert_eq(pl__net_read(&sim, s, b, sizeof b), 0);
    cr_assert_eq(pl__net_write(&sim, s, "ok", 2), 2, "the other direction still works");
    run_all();
    cr_assert_eq(pl__net_read(&sim, c, b, sizeof b), 2);
    cr_assert_eq(pl__net_shutdown(&sim, c, SHUT_RD), 0);
    cr_assert_eq(pl__net_read(&sim, c, b, sizeof b), 0);
    cr_assert_eq(pl__net_write(&sim, s, "x", 1), PL_EPIPE);
}

Test(reactor, closing_a_listener_ends_unaccepted_connections)
{
    int l = listener_on("127.0.0.1", 0);
    int c = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    struct sockaddr_in to = v4("127.0.0.1", (uint16_t)port_of(l));
    cr_assert_eq(pl__net_connect(&sim, c, SA(to), SALEN(to)), PL_EINPROGRESS);
    run_all();
    cr_assert_eq(pl__net_write(&sim, c, "lost", 4), 4);
    run_all();
    cr_assert_eq(pl__net_close(&sim, l), 0);
    run_all();
    uint8_t b[4];
    cr_assert_eq(pl__net_read(&sim, c, b, sizeof b), 0);
    cr_assert_eq(pl__net_write(&sim, c, "x", 1), PL_EPIPE);
    cr_assert_eq(pl__reactor_open_handles(R), 1u);
}

/* ---- Datagrams ---------------------------------------------------------- */

Test(reactor, dgram_send_recv_with_sender)
{
    int a = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    int b = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    struct sockaddr_in bind_b = v4("127.0.0.2", 6000);
    cr_assert_eq(pl__net_bind(&sim, b, SA(bind_b), SALEN(bind_b)), 0);
    pl_io_source as, bs;
    reg(&as, a);
    reg(&bs, b);
    cr_assert_eq(as.ready, (uint32_t)PL_IO_WRITABLE, "datagram sockets are writable");
    cr_assert_eq(bs.ready, (uint32_t)PL_IO_WRITABLE);
    bs.ready = 0;

    cr_assert_eq(pl__net_sendto(&sim, a, "hello", 5, SA(bind_b), SALEN(bind_b)), 5);
    cr_assert_eq(port_of(a), PL__NET_EPHEMERAL_FIRST, "sending bound it");
    cr_assert_eq(pl__net_recvfrom(&sim, b, NULL, 0, NULL, NULL), PL_EAGAIN);
    cr_assert_eq(run_all(), 1u);
    cr_assert(bs.ready & PL_IO_READABLE);
    char buf[16];
    struct sockaddr_in from;
    socklen_t from_len = sizeof from;
    cr_assert_eq(pl__net_recvfrom(&sim, b, buf, sizeof buf, (struct sockaddr *)&from,
                                      &from_len), 5);
    cr_assert_eq(memcmp(buf, "hello", 5), 0);
    cr_assert_eq(from_len, (socklen_t)sizeof from);
    cr_assert_eq(ntohs(from.sin_port), PL__NET_EPHEMERAL_FIRST);
    cr_assert_eq(ntohl(from.sin_addr.s_addr), 0x7f000001u);

    /* Reply to the sender address; a short buffer truncates. */
    cr_assert_eq(pl__net_sendto(&sim, b, "0123456789", 10, SA(from), from_len), 10);
    run_all();
    cr_assert_eq(pl__net_read(&sim, a, buf, 4), 4);
    cr_assert_eq(memcmp(buf, "0123", 4), 0);
    cr_assert_eq(pl__net_read(&sim, a, buf, 4), PL_EAGAIN, "the rest was discarded");

    /* Nobody at 127.0.0.1:9: dropped silently. */
    struct sockaddr_in nobody = v4("127.0.0.1", 9);
    cr_assert_eq(pl__net_sendto(&sim, a, "x", 1, SA(nobody), SALEN(nobody)), 1);
    cr_assert_eq(run_all(), 0u);
    struct sockaddr_in far = v4("192.168.1.1", 9);
    cr_assert_eq(pl__net_sendto(&sim, a, "x", 1, SA(far), SALEN(far)), PL_EADDRNOTAVAIL);
    static uint8_t huge[PL__NET_DGRAM_MAX + 1];
    cr_assert_eq(pl__net_sendto(&sim, a, huge, sizeof huge, SA(bind_b), SALEN(bind_b)),
                 PL_EMSGSIZE);
    unreg(&as);
    unreg(&bs);
}

Test(reactor, dgram_loss_only_with_its_knob)
{
    int a = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    int b = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    struct sockaddr_in any = v4("127.0.0.1", 0);
    cr_assert_eq(pl__net_bind(&sim, b, SA(any), SALEN(any)), 0);
    struct sockaddr_in to = v4("127.0.0.1", (uint16_t)port_of(b));
    /* Default: sendto offers [none, eagain]; a 2 would fail the script check. */
    SCRIPT(PL_DECIDE_IO_FAULT, 0);
    cr_assert_eq(pl__net_sendto(&sim, a, "1", 1, SA(to), SALEN(to)), 1);
    set_faults(true, true, true, false);
    SCRIPT(PL_DECIDE_IO_FAULT, 2); /* [none, eagain, loss] */
    cr_assert_eq(pl__net_sendto(&sim, a, "2", 1, SA(to), SALEN(to)), 1, "loss is silent");
    cr_assert_eq(pl__net_sendto(&sim, a, "3", 1, SA(to), SALEN(to)), 1);
    run_all();
    char v[2];
    cr_assert_eq(pl__net_recvfrom(&sim, b, v, 1, NULL, NULL), 1);
    cr_assert_eq(v[0], '1');
    cr_assert_eq(pl__net_recvfrom(&sim, b, v, 1, NULL, NULL), 1);
    cr_assert_eq(v[0], '3');
    cr_assert_eq(pl__net_recvfrom(&sim, b, v, 1, NULL, NULL), PL_EAGAIN);
}

/* The run's options (sim->opts.faults) are read when the network is
 * created: the latency range, and loss without EAGAIN. */
Test(reactor, fault_options_of_the_run_apply_from_creation)
{
    pl__reactor_destroy(R);
    pl_sim_fault_options o = faults_default();
    o.latency_steps = 3;
    o.latency_quantum_ns = 7;
    o.eagain = false;
    o.dgram_loss = true;
    sim.opts.faults = &o;
    cr_assert_eq(pl__reactor_create(&R, &sim), 0);
    sim.reactor = R;
    sim.opts.faults = NULL; /* copied at creation */
    cr_assert_eq(pl__reactor_faults(R)->latency_steps, 3u);
    int a = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    int b = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    struct sockaddr_in any = v4("127.0.0.1", 0);
    cr_assert_eq(pl__net_bind(&sim, b, SA(any), SALEN(any)), 0);
    struct sockaddr_in to = v4("127.0.0.1", (uint16_t)port_of(b));
    SCRIPT(PL_DECIDE_IO_FAULT, 1, 0); /* [none, loss]: lost, then sent */
    SCRIPT(PL_DECIDE_IO_LATENCY, 2);  /* of 0..2 steps */
    cr_assert_eq(pl__net_sendto(&sim, a, "1", 1, SA(to), SALEN(to)), 1, "loss is silent");
    cr_assert_eq(pl__reactor_next_event(R), PL_TIME_NEVER, "a lost datagram never travels");
    cr_assert_eq(pl__net_sendto(&sim, a, "2", 1, SA(to), SALEN(to)), 1);
    cr_assert_eq(pl__reactor_next_event(R), 14);
    run_all();
    char v[2];
    cr_assert_eq(pl__net_recvfrom(&sim, b, v, 1, NULL, NULL), 1);
    cr_assert_eq(v[0], '2');
    cr_assert_eq(pl__net_recvfrom(&sim, b, v, 1, NULL, NULL), PL_EAGAIN);
}

/* The network trusts its options to be validated: invalid ones stop the
 * run in every build rather than draw from an empty range. */
Test(reactor, invalid_fault_options_are_an_assertion, .signal = SIGABRT)
{
    pl_sim_fault_options o = faults_default();
    o.latency_steps = 0;
    pl__reactor_set_faults(R, &o);
}

Test(reactor, dgram_queue_is_bounded)
{
    int a = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    int b = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    struct sockaddr_in any = v4("127.0.0.1", 0);
    cr_assert_eq(pl__net_bind(&sim, b, SA(any), SALEN(any)), 0);
    struct sockaddr_in to = v4("127.0.0.1", (uint16_t)port_of(b));
    static uint8_t payload[1000];
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(pl__net_sendto(&sim, a, payload, sizeof payload, SA(to), SALEN(to)), 1000);
    }
    run_all();
    int received = 0;
    while (pl__net_recvfrom(&sim, b, payload, sizeof payload, NULL, NULL) == 1000) {
        received++;
    }
    size_t fit = PL__NET_DGRAM_QUEUE_MAX / (1000 + PL__NET_DGRAM_OVERHEAD);
    cr_assert_eq(received, (int)fit, "arrivals past the queue limit are dropped");
}

/* ---- Handles, ports, determinism ---------------------------------------- */

Test(reactor, handles_are_never_reused)
{
    int last = PL__NET_HANDLE_FIRST - 1;
    for (int i = 0; i < 50; i++) {
        int h = pl__net_socket(&sim, AF_INET, i % 2 ? SOCK_STREAM : SOCK_DGRAM);
        cr_assert_eq(h, last + 1, "handles count up");
        cr_assert_eq(pl__net_close(&sim, h), 0);
        cr_assert_eq(pl__net_close(&sim, h), PL_EBADF, "a closed handle stays closed");
        last = h;
    }
    int p[2];
    cr_assert_eq(pl__net_pipe(&sim, p), 0);
    cr_assert_eq(p[0], last + 1);
    cr_assert_eq(p[1], last + 2);
    cr_assert_eq(pl__reactor_open_handles(R), 2u);
}

Test(reactor, ephemeral_ports_skip_ports_in_use)
{
    int s = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    struct sockaddr_in fixed = v4("127.0.0.1", PL__NET_EPHEMERAL_FIRST);
    cr_assert_eq(pl__net_bind(&sim, s, SA(fixed), SALEN(fixed)), 0);
    int t = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    struct sockaddr_in any = v4("127.0.0.1", 0);
    cr_assert_eq(pl__net_bind(&sim, t, SA(any), SALEN(any)), 0);
    cr_assert_eq(port_of(t), PL__NET_EPHEMERAL_FIRST + 1);
    int u = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    cr_assert_eq(pl__net_listen(&sim, u, 4), 0, "listen binds an ephemeral port");
    cr_assert_eq(port_of(u), PL__NET_EPHEMERAL_FIRST + 2);
}

/* A small workload whose observable results are summed into a digest. */
static uint64_t workload_digest(void)
{
    uint64_t d = 0;
    int l = listener_on("127.0.0.1", 0);
    for (int i = 0; i < 5; i++) {
        int c, s;
        connected_pair(l, &c, &s);
        d = d * 31 + (uint64_t)c * 7 + (uint64_t)s + (uint64_t)port_of(c);
        ssize_t w = pl__net_write(&sim, c, "abcdefghij", 10);
        run_all();
        uint8_t b[16];
        ssize_t n = pl__net_read(&sim, s, b, sizeof b);
        d = d * 31 + (uint64_t)w * 3 + (uint64_t)n;
        cr_assert_eq(pl__net_close(&sim, c), 0);
    }
    return d * 31 + (uint64_t)sim.now + fk.ready_len;
}

Test(reactor, same_decisions_same_run)
{
    fk.random_kinds = (1u << PL_DECIDE_IO_LATENCY) | (1u << PL_DECIDE_IO_FAULT);
    fk.rng = 777;
    uint64_t first = workload_digest();
    pl__reactor_destroy(R);
    memset(&sim, 0, sizeof sim);
    memset(&fk, 0, sizeof fk);
    fk.random_kinds = (1u << PL_DECIDE_IO_LATENCY) | (1u << PL_DECIDE_IO_FAULT);
    fk.rng = 777;
    cr_assert_eq(pl__reactor_create(&R, &sim), 0);
    sim.reactor = R; /* the system entries find it through their self */
    cr_assert_eq(workload_digest(), first);
}

/* ---- Teardown ----------------------------------------------------------- */

Test(reactor, destroy_frees_open_handles_and_data_in_flight)
{
    int l = listener_on("127.0.0.1", 0);
    int c, s;
    connected_pair(l, &c, &s);
    static uint8_t big[3 * 1024];
    /* Latencies: the two writes, then the two connection attempts. */
    SCRIPT(PL_DECIDE_IO_LATENCY, 7, 7, 0, 7);
    cr_assert_eq(pl__net_write(&sim, c, big, sizeof big), (ssize_t)sizeof big);
    cr_assert_eq(pl__net_write(&sim, s, big, 100), 100);
    /* A connection left in the backlog, one attempt still in flight. */
    int c2 = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    struct sockaddr_in to = v4("127.0.0.1", (uint16_t)port_of(l));
    cr_assert_eq(pl__net_connect(&sim, c2, SA(to), SALEN(to)), PL_EINPROGRESS);
    deliver_now();
    int c3 = pl__net_socket(&sim, AF_INET, SOCK_STREAM);
    cr_assert_eq(pl__net_connect(&sim, c3, SA(to), SALEN(to)), PL_EINPROGRESS);
    /* Datagrams queued and in flight, and a pipe with data. */
    int u = pl__net_socket(&sim, AF_INET, SOCK_DGRAM);
    struct sockaddr_in any = v4("127.0.0.1", 0);
    cr_assert_eq(pl__net_bind(&sim, u, SA(any), SALEN(any)), 0);
    struct sockaddr_in self = v4("127.0.0.1", (uint16_t)port_of(u));
    cr_assert_eq(pl__net_sendto(&sim, u, "q", 1, SA(self), SALEN(self)), 1);
    deliver_now();
    SCRIPT(PL_DECIDE_IO_LATENCY, 5);
    cr_assert_eq(pl__net_sendto(&sim, u, "f", 1, SA(self), SALEN(self)), 1);
    int p[2];
    cr_assert_eq(pl__net_pipe(&sim, p), 0);
    cr_assert_eq(pl__net_write(&sim, p[1], big, sizeof big), (ssize_t)sizeof big);
    cr_assert_neq(pl__reactor_next_event(R), PL_TIME_NEVER);
    cr_assert_geq(pl__reactor_open_handles(R), 8u);
    /* teardown destroys it all; LeakSanitizer checks. */
}

Test(reactor, destroy_accepts_null)
{
    pl__reactor_destroy(NULL);
}
