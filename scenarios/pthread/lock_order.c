/* lock_order: two threads take the same two locks in opposite orders.
 *
 * The transfer thread locks `accounts` then `audit`; the report thread
 * locks `audit` then `accounts`. When each takes its first lock before
 * the other takes its second, both wait forever: a deadlock. The fixed
 * twin (lock_order_fixed.c) takes them in one global order. */
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
    pthread_mutex_lock(&audit);
    pthread_mutex_lock(&accounts);
    printf("balance %ld after %ld audited transfers\n", balance, audited);
    pthread_mutex_unlock(&accounts);
    pthread_mutex_unlock(&audit);
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
