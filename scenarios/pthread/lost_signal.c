/* lost_signal: a signal sent before anyone waits, with no predicate.
 *
 * main starts a loader thread and waits on `loaded` for it to finish. The
 * loader signals when done, but a condition variable has no memory: when
 * the loader signals before main reaches its wait, nobody is woken, and
 * main then waits for a signal that already happened. The fixed twin
 * (lost_signal_fixed.c) records the event in a flag under the mutex and
 * waits while the flag is unset. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t loaded = PTHREAD_COND_INITIALIZER;
static int table[4];

static void *loader(void *arg)
{
    (void)arg;
    for (int i = 0; i < 4; i++) {
        table[i] = i * i;
    }
    pthread_mutex_lock(&lock);
    pthread_cond_signal(&loaded);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, loader, NULL);
    pthread_mutex_lock(&lock);
    pthread_cond_wait(&loaded, &lock);
    pthread_mutex_unlock(&lock);
    printf("table[3] = %d\n", table[3]);
    pthread_join(t, NULL);
    return 0;
}
