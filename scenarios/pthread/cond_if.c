/* cond_if: a condition variable waited on with `if` instead of `while`.
 *
 * Two consumers take items from a shared count that one producer fills.
 * A consumer that finds the count empty waits once and then takes an
 * item without looking again. But a wakeup does not mean an item is
 * there: the other consumer may have taken it between the signal and
 * this consumer's return from the wait, and POSIX lets a wait return
 * spuriously. The consumer then takes from an empty count (the assert).
 * The fixed twin (cond_if_fixed.c) waits in a loop. */
#include <assert.h>
#include <pthread.h>

enum { ITEMS = 2 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nonempty = PTHREAD_COND_INITIALIZER;
static int count;

static void *consumer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    if (count == 0) {
        pthread_cond_wait(&nonempty, &lock);
    }
    assert(count > 0);
    count--;
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void *producer(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITEMS; i++) {
        pthread_mutex_lock(&lock);
        count++;
        pthread_cond_signal(&nonempty);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t c[2], p;
    pthread_create(&c[0], NULL, consumer, NULL);
    pthread_create(&c[1], NULL, consumer, NULL);
    pthread_create(&p, NULL, producer, NULL);
    pthread_join(p, NULL);
    pthread_join(c[0], NULL);
    pthread_join(c[1], NULL);
    assert(count == 0);
    return 0;
}
