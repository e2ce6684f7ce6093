/* claim_flag_fixed: claim_flag.c's twin. The check and the claim are one
 * compare-and-exchange, so exactly one worker sees 0 and sets 1. */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>

static atomic_int claimed;
static atomic_int runs;

static void *worker(void *arg)
{
    (void)arg;
    int expected = 0;
    if (atomic_compare_exchange_strong(&claimed, &expected, 1)) {
        atomic_fetch_add(&runs, 1); /* the one-shot job */
    }
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, worker, NULL);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
    }
    assert(atomic_load(&runs) == 1);
    return 0;
}
