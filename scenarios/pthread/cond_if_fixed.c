/* cond_if_fixed: cond_if.c's twin. Each consumer waits in a loop that
 * re-checks the count, so a stolen item or a spurious wakeup only means
 * waiting again. */
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
    while (count == 0) {
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
