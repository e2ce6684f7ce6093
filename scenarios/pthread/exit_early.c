/* exit_early: main returns while other threads still run, as servers do
 * at shutdown; must stay clean. In production the process ends with
 * main's return whatever the other threads are doing: a detached thread
 * blocked on a lock main holds and a joinable one sleeping in a loop are
 * neither a deadlock nor a leak. An atexit handler runs once. */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static int handler_runs;

static void *blocked(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held);
    abort(); /* never: main holds the lock until the process ends */
}

static void *ticker(void *arg)
{
    (void)arg;
    while (usleep(1000) == 0) {
    }
    return NULL;
}

static void at_end(void)
{
    handler_runs++;
    assert(handler_runs == 1);
}

int main(void)
{
    atexit(at_end);
    pthread_mutex_lock(&held);
    pthread_t a, b;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_create(&a, &attr, blocked, NULL);
    pthread_attr_destroy(&attr);
    pthread_create(&b, NULL, ticker, NULL);
    usleep(5000);
    exit(0);
}
