/* lock_order_fixed: lock_order.c's twin. Both threads take `accounts`
 * before `audit` (one global lock order), so neither can hold the lock
 * the other holds while waiting for its own second one. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t accounts = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t audit = PTHREAD_MUTEX_INITIALIZER;
static long balance = 100;
static long audited;

static void *transfer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&accounts);
    pthread_mutex_lock(&audit);
    balance -= 10;
    audited++;
    pthread_mutex_unlock(&audit);
    pthread_mutex_unlock(&accounts);
    return NULL;
}

static void *report(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&accounts);
    pthread_mutex_lock(&audit);
    printf("balance %ld after %ld audited transfers\n", balance, audited);
    pthread_mutex_unlock(&audit);
    pthread_mutex_unlock(&accounts);
    return NULL;
}

int main(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, transfer, NULL);
    pthread_create(&b, NULL, report, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
