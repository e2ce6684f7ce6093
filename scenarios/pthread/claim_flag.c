/* claim_flag: check-then-act on an atomic flag.
 *
 * Two workers race to claim a one-shot job: each reads the flag, and if
 * nobody claimed it yet, sets it and does the job. Each access is atomic
 * but the pair is not: both can read 0 before either stores 1, and the
 * job runs twice (the assert in main). The fixed twin (claim_flag_fixed.c)
 * claims with one compare-and-exchange. */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>

static atomic_int claimed;
static atomic_int runs;

static void *worker(void *arg)
{
    (void)arg;
    if (atomic_load(&claimed) == 0) {
        atomic_store(&claimed, 1);
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
