/* tests/sim/test_real.c: a cluster scenario on the real backend
 * (sim/src/real.h), through the one setup that declares its nodes.
 *
 * "srv" (10.0.0.1) answers one datagram on port 9000; "cli" (10.0.0.2)
 * sends it from a socket bound to 0.0.0.0 to 10.0.0.1:9000 and reads the
 * answer (fix_repl_ack's TCP nodes connect unbound: test_bugs.c).
 * Each node opens directory "db" at its boot. On real loopback sockets
 * the server must see the client's 10.x address and the client the
 * server's, each node's "db" must be a directory of its own, removed at
 * the end, and the node's tasks must know their node. The fault calls
 * return PL_ENOSYS there. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pollen/file.h>
#include <pollen/io.h>
#include <pollen/sim.h>
#include <pollen/sim_node.h>

#include "leakcheck.h"
#include "real.h"

TestSuite(real, .fini = pl_test_leak_check);

/* What the run saw; reset by each test. */
static struct {
    char srv_saw[PL_ADDR_STRLEN];   /* the client's address, at the server */
    char cli_saw[PL_ADDR_STRLEN];   /* the server's address, at the client */
    char srv_local[PL_ADDR_STRLEN]; /* the server's socket, as handed back */
    char self[2][16];               /* pl_sim_node_self()->name in each task */
    char task[32];                  /* the client's task name */
    char dir[2][PATH_MAX];          /* where each node's "db" is */
    int crash, restart, pause, isolate, heal, power;
    bool up;
} seen;

typedef struct node_mem {
    pl_udp_socket sock;
    pl_dir db;
    char buf[8];
} node_mem;

/* One node's task: the server answers a datagram, the client sends one
 * and reads the answer. */
typedef struct peer {
    pl_future base;
    node_mem *m;
    bool server;
    pl_udp_recv recv;
    pl_udp_send send;
} peer;

static void fault_calls(void)
{
    seen.crash = pl_sim_node_crash("srv");
    seen.restart = pl_sim_node_restart("srv");
    seen.pause = pl_sim_node_pause("srv", PL_MS);
    seen.isolate = pl_sim_node_isolate("srv", PL_MS);
    seen.heal = pl_sim_nodes_heal();
    seen.power = pl_sim_power_cut();
    seen.up = pl_sim_node_is_up("srv");
}

static pl_poll_result peer_poll(pl_future *f, pl_context *cx)
{
    peer *p = (peer *)f;
    PL_ASYNC_BEGIN(p);
    snprintf(seen.self[p->server], sizeof seen.self[0], "%s", pl_sim_node_self()->name);
    if (!p->server) {
        snprintf(seen.task, sizeof seen.task, "%s", pl_task_name(cx->task));
        fault_calls();
        struct sockaddr_storage to;
        socklen_t len;
        cr_assert_eq(pl_addr_parse("10.0.0.1:9000", &to, &len), 0);
        p->send = pl_udp_send_to(&p->m->sock, "ping", 4, (const struct sockaddr *)&to, len);
        PL_AWAIT(cx, &p->send);
        cr_assert_eq(p->send.result, 4);
    }
    p->recv = pl_udp_recv_from(&p->m->sock, p->m->buf, sizeof p->m->buf);
    PL_AWAIT(cx, &p->recv);
    cr_assert_eq(p->recv.result, 4);
    pl_addr_format((const struct sockaddr *)&p->recv.from,
                   p->server ? seen.srv_saw : seen.cli_saw, PL_ADDR_STRLEN);
    if (p->server) {
        p->send = pl_udp_send_to(&p->m->sock, "pong", 4, (const struct sockaddr *)&p->recv.from,
                                 p->recv.from_len);
        PL_AWAIT(cx, &p->send);
    }
    pl_udp_close(&p->m->sock);
    pl_dir_close(&p->m->db);
    pl_node_free(p->m);
    PL_ASYNC_END;
}

static void peer_drop(pl_future *f)
{
    peer *p = (peer *)f;
    pl_drop_child(&p->recv.base);
    pl_drop_child(&p->send.base);
}

static const pl_future_vtable peer_vt = {"peer", peer_poll, peer_drop};

/* Where the node's "db" is, by its descriptor. */
static void note_dir(const pl_dir *d, char *out)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", d->src->handle);
    ssize_t n = readlink(link, out, PATH_MAX - 1);
    cr_assert_gt(n, 0);
    out[n] = '\0';
}

static int boot(pl_executor *ex, void *ud)
{
    bool server = ud != NULL;
    node_mem *m = pl_node_alloc(sizeof *m);
    cr_assert_not_null(m);
    memset(m, 0, sizeof *m);
    cr_assert_eq(pl_dir_open(ex, &m->db, "db", true), 0);
    note_dir(&m->db, seen.dir[server]);
    if (server) {
        cr_assert_eq(pl_udp_bind_str(ex, &m->sock, "10.0.0.1:9000"), 0);
        struct sockaddr_storage a;
        socklen_t len = sizeof a;
        cr_assert_eq(pl_udp_local_addr(&m->sock, &a, &len), 0);
        pl_addr_format((const struct sockaddr *)&a, seen.srv_local, sizeof seen.srv_local);
    } else {
        struct sockaddr_storage any;
        socklen_t len;
        cr_assert_eq(pl_addr_parse("0.0.0.0:0", &any, &len), 0);
        /* A node's 0.0.0.0 is its own host: peers see 10.0.0.2. */
        cr_assert_eq(pl_udp_bind(ex, &m->sock, (const struct sockaddr *)&any, len), 0);
    }
    peer p = {.base = PL_FUTURE_INIT(&peer_vt), .m = m, .server = server};
    return PL_SPAWN(ex, p, server ? "server" : "client", NULL);
}

static int setup(pl_executor *ex, void *state)
{
    (void)state;
    static int yes;
    const pl_node_def srv = {.name = "srv", .host = "10.0.0.1", .boot = boot, .ud = &yes,
                             .crashable = true, .pausable = true};
    const pl_node_def cli = {.name = "cli", .host = "10.0.0.2", .boot = boot};
    int rc = pl_sim_node_add(ex, &srv);
    return rc != 0 ? rc : pl_sim_node_add(ex, &cli);
}

static const pl_scenario pair = {.name = "real_pair", .setup = setup};

LEAK_TEST(real, nodes_reach_each_other_by_their_hosts)
{
    memset(&seen, 0, sizeof seen);
    char msg[256] = "";
    cr_assert_eq(pl__real_run(&pair, msg, sizeof msg), PL_FINDING_NONE, "%s", msg);
    cr_expect_str_eq(seen.srv_local, "10.0.0.1:9000");
    /* The client's socket was bound to its host (port 0) before it sent. */
    cr_expect_eq(strncmp(seen.srv_saw, "10.0.0.2:", 9), 0, "the server saw %s", seen.srv_saw);
    cr_expect_str_eq(seen.cli_saw, "10.0.0.1:9000");
    cr_expect_str_eq(seen.self[1], "srv");
    cr_expect_str_eq(seen.self[0], "cli");
    cr_expect_str_eq(seen.task, "cli/client");
}

LEAK_TEST(real, each_node_has_its_own_directory_removed_at_the_end)
{
    memset(&seen, 0, sizeof seen);
    char msg[256] = "";
    cr_assert_eq(pl__real_run(&pair, msg, sizeof msg), PL_FINDING_NONE, "%s", msg);
    cr_expect_neq(strstr(seen.dir[1], "/pollen-real-"), NULL, "%s", seen.dir[1]);
    size_t n = strlen(seen.dir[1]);
    cr_expect(n > 7 && strcmp(seen.dir[1] + n - 7, "/srv/db") == 0, "%s", seen.dir[1]);
    n = strlen(seen.dir[0]);
    cr_expect(n > 7 && strcmp(seen.dir[0] + n - 7, "/cli/db") == 0, "%s", seen.dir[0]);
    struct stat st;
    cr_expect_neq(stat(seen.dir[1], &st), 0, "%s outlived the run", seen.dir[1]);
    cr_expect_neq(stat(seen.dir[0], &st), 0, "%s outlived the run", seen.dir[0]);
}

LEAK_TEST(real, fault_calls_are_the_simulators)
{
    memset(&seen, 0, sizeof seen);
    char msg[256] = "";
    cr_assert_eq(pl__real_run(&pair, msg, sizeof msg), PL_FINDING_NONE, "%s", msg);
    cr_expect_eq(seen.crash, PL_ENOSYS);
    cr_expect_eq(seen.restart, PL_ENOSYS);
    cr_expect_eq(seen.pause, PL_ENOSYS);
    cr_expect_eq(seen.isolate, PL_ENOSYS);
    cr_expect_eq(seen.heal, PL_ENOSYS);
    cr_expect_eq(seen.power, PL_ENOSYS);
    cr_expect(seen.up, "a node of a real run is up");
}

/* Outside a real run nothing changed: a production executor has no
 * nodes. */
LEAK_TEST(real, production_executors_have_no_nodes)
{
    pl_executor *ex = NULL;
    cr_assert_eq(pl_executor_create(&ex, NULL), 0);
    const pl_node_def srv = {.name = "srv", .host = "10.0.0.1", .boot = boot};
    cr_expect_eq(pl_sim_node_add(ex, &srv), PL_EINVAL);
    cr_expect_null(pl_node_alloc(8));
    cr_expect_null(pl_sim_node_self());
    pl_executor_destroy(ex);
}
