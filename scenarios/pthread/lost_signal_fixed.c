/* lost_signal_fixed: lost_signal.c's twin. The loader sets `done` under
 * the mutex before signalling, and main waits while `done` is unset, so
 * a signal sent before the wait is not lost: main sees the flag and never
 * waits. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t loaded = PTHREAD_COND_INITIALIZER;
static int table[4];
static int done;

static void *loader(void *arg)
{
    (void)arg;
    for (int i = 0; i < 4; i++) {
        table[i] = i * i;
    }
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_signal(&loaded);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, loader, NULL);
    pthread_mutex_lock(&lock);
    while (!done) {
        pthread_cond_wait(&loaded, &lock);
    }
    pthread_mutex_unlock(&lock);
    printf("table[3] = %d\n", table[3]);
    pthread_join(t, NULL);
    return 0;
}
