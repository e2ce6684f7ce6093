/* main_exit: main ends with pthread_exit, so the process lives on until
 * its last thread ends, and then exits with status 0, running its atexit
 * handlers (POSIX); must stay clean. The handler checks that every
 * worker, all started by main and detached, did its part after main was
 * gone. */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

enum { WORKERS = 3 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int done;

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    done++;
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void all_done(void)
{
    assert(done == WORKERS);
}

int main(void)
{
    atexit(all_done);
    for (int i = 0; i < WORKERS; i++) {
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL);
        pthread_detach(t);
    }
    pthread_exit(NULL);
}
