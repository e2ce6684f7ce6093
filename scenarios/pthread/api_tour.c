/* api_tour: the pthread API a program uses, used correctly; must stay
 * clean. Each part asserts what POSIX promises: rwlocks admit readers
 * together and a writer alone, a barrier releases a round at once and
 * names one serial thread, once runs its routine once, keys hold one
 * value per thread and run their destructors at thread exit, timed waits
 * time out on the clock that clock_gettime reads, semaphores count, mutex
 * types behave as their type says, spinlocks exclude, and every C11
 * atomic operation (each a schedule point here) still computes what
 * C11 says. */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { WORKERS = 3 };

static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static int table[WORKERS];
static atomic_int readers_in;
static pthread_barrier_t round_start;
static atomic_int serial_threads;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int inits;
static pthread_key_t slot;
static atomic_int destructed;
static sem_t tokens;
static pthread_spinlock_t spin;
static long spin_counter;
static int exited_early_value = 7;

static void init_table(void)
{
    inits++;
}

static void slot_destructor(void *v)
{
    assert(v != NULL);
    atomic_fetch_add(&destructed, 1);
    free(v);
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    pthread_once(&init_once, init_table);
    int *mine = malloc(sizeof *mine);
    assert(mine != NULL);
    *mine = id;
    assert(pthread_setspecific(slot, mine) == 0);

    int rc = pthread_barrier_wait(&round_start);
    assert(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
    if (rc == PTHREAD_BARRIER_SERIAL_THREAD) {
        atomic_fetch_add(&serial_threads, 1);
    }

    pthread_rwlock_wrlock(&table_lock);
    assert(atomic_load(&readers_in) == 0);
    table[id] = id + 1;
    pthread_rwlock_unlock(&table_lock);

    pthread_rwlock_rdlock(&table_lock);
    atomic_fetch_add(&readers_in, 1);
    assert(table[id] == id + 1);
    atomic_fetch_sub(&readers_in, 1);
    pthread_rwlock_unlock(&table_lock);

    sem_wait(&tokens);
    for (int i = 0; i < 3; i++) {
        pthread_spin_lock(&spin);
        long v = spin_counter;
        sched_yield();
        spin_counter = v + 1;
        pthread_spin_unlock(&spin);
    }
    sem_post(&tokens);

    assert(*(int *)pthread_getspecific(slot) == id);
    if (id == 0) {
        pthread_exit(&exited_early_value);
    }
    return arg;
}

static void check_mutex_types(void)
{
    pthread_mutexattr_t a;
    pthread_mutex_t rec, chk;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    assert(pthread_mutex_init(&rec, &a) == 0);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    assert(pthread_mutex_init(&chk, &a) == 0);
    pthread_mutexattr_destroy(&a);

    assert(pthread_mutex_lock(&rec) == 0);
    assert(pthread_mutex_lock(&rec) == 0);
    assert(pthread_mutex_trylock(&rec) == 0);
    assert(pthread_mutex_unlock(&rec) == 0);
    assert(pthread_mutex_unlock(&rec) == 0);
    assert(pthread_mutex_unlock(&rec) == 0);
    assert(pthread_mutex_unlock(&rec) == EPERM);

    assert(pthread_mutex_lock(&chk) == 0);
    assert(pthread_mutex_lock(&chk) == EDEADLK);
    assert(pthread_mutex_trylock(&chk) == EBUSY);
    assert(pthread_mutex_destroy(&chk) == EBUSY);
    assert(pthread_mutex_unlock(&chk) == 0);
    assert(pthread_mutex_unlock(&chk) == EPERM);
    assert(pthread_mutex_destroy(&chk) == 0);
    assert(pthread_mutex_destroy(&rec) == 0);
}

/* A timed wait nobody signals times out at its deadline, on the clock. */
static void check_timed_waits(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    struct timespec start, deadline, end;
    clock_gettime(CLOCK_REALTIME, &start);
    deadline = start;
    deadline.tv_sec += 2;
    pthread_mutex_lock(&m);
    int rc = 0;
    while (rc == 0) {
        rc = pthread_cond_timedwait(&c, &m, &deadline);
    }
    assert(rc == ETIMEDOUT);
    pthread_mutex_unlock(&m);
    clock_gettime(CLOCK_REALTIME, &end);
    assert(end.tv_sec > deadline.tv_sec ||
           (end.tv_sec == deadline.tv_sec && end.tv_nsec >= deadline.tv_nsec));

    sem_t none;
    sem_init(&none, 0, 0);
    assert(sem_trywait(&none) == -1 && errno == EAGAIN);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 5000000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    assert(sem_timedwait(&none, &deadline) == -1 && errno == ETIMEDOUT);
    sem_destroy(&none);

    pthread_rwlock_t rw;
    pthread_rwlock_init(&rw, NULL);
    pthread_rwlock_wrlock(&rw);
    assert(pthread_rwlock_trywrlock(&rw) != 0);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    assert(pthread_rwlock_timedwrlock(&rw, &deadline) != 0);
    pthread_rwlock_unlock(&rw);
    assert(pthread_rwlock_tryrdlock(&rw) == 0);
    assert(pthread_rwlock_tryrdlock(&rw) == 0);
    assert(pthread_rwlock_trywrlock(&rw) == EBUSY);
    pthread_rwlock_unlock(&rw);
    pthread_rwlock_unlock(&rw);
    assert(pthread_rwlock_destroy(&rw) == 0);

    time_t before = time(NULL);
    sleep(3);
    assert(time(NULL) >= before + 3);
}

/* Every generic function of <stdatomic.h> the header redefines. */
static void check_atomics(void)
{
    atomic_int a = ATOMIC_VAR_INIT(1);
    atomic_long l;
    atomic_init(&l, 5L);
    assert(atomic_exchange(&a, 2) == 1);
    assert(atomic_exchange_explicit(&a, 3, memory_order_acq_rel) == 2);
    int expected = 0;
    assert(!atomic_compare_exchange_strong(&a, &expected, 9) && expected == 3);
    assert(atomic_compare_exchange_strong_explicit(&a, &expected, 4, memory_order_seq_cst,
                                                   memory_order_relaxed));
    while (!atomic_compare_exchange_weak(&a, &expected, 6)) {
    }
    assert(atomic_load_explicit(&a, memory_order_acquire) == 6);
    expected = 6;
    while (!atomic_compare_exchange_weak_explicit(&a, &expected, 7, memory_order_release,
                                                  memory_order_relaxed)) {
    }
    assert(atomic_fetch_or(&a, 8) == 7 && atomic_fetch_and(&a, 12) == 15);
    assert(atomic_fetch_xor(&a, 1) == 12 && atomic_fetch_sub(&a, 3) == 13);
    assert(atomic_fetch_or_explicit(&a, 0, memory_order_relaxed) == 10);
    assert(atomic_fetch_and_explicit(&a, 15, memory_order_relaxed) == 10);
    assert(atomic_fetch_xor_explicit(&a, 0, memory_order_relaxed) == 10);
    assert(atomic_fetch_add_explicit(&l, 2L, memory_order_relaxed) == 5L);
    assert(atomic_fetch_sub_explicit(&l, 7L, memory_order_relaxed) == 7L);
    atomic_store_explicit(&l, 11L, memory_order_release);
    assert(atomic_load(&l) == 11L);
    atomic_flag f = ATOMIC_FLAG_INIT;
    assert(!atomic_flag_test_and_set(&f));
    assert(atomic_flag_test_and_set_explicit(&f, memory_order_acquire));
    atomic_flag_clear_explicit(&f, memory_order_release);
    assert(!atomic_flag_test_and_set(&f));
    atomic_flag_clear(&f);
}

int main(void)
{
    check_atomics();
    check_mutex_types();
    check_timed_waits();
    assert(pthread_key_create(&slot, slot_destructor) == 0);
    assert(pthread_barrier_init(&round_start, NULL, WORKERS) == 0);
    assert(sem_init(&tokens, 0, 2) == 0);
    assert(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE) == 0);

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        assert(pthread_create(&t[i], &attr, worker, (void *)(long)i) == 0);
    }
    pthread_attr_destroy(&attr);
    assert(pthread_equal(pthread_self(), pthread_self()));
    assert(!pthread_equal(t[0], t[1]));
    for (int i = 0; i < WORKERS; i++) {
        void *ret;
        assert(pthread_join(t[i], &ret) == 0);
        assert(i == 0 ? ret == &exited_early_value : ret == (void *)(long)i);
    }
    assert(pthread_join(t[1], NULL) == EINVAL);
    assert(inits == 1);
    assert(atomic_load(&serial_threads) == 1);
    assert(atomic_load(&destructed) == WORKERS);
    assert(spin_counter == 3 * WORKERS);
    int v;
    sem_getvalue(&tokens, &v);
    assert(v == 2);
    for (int i = 0; i < WORKERS; i++) {
        assert(table[i] == i + 1);
    }
    pthread_barrier_destroy(&round_start);
    pthread_key_delete(slot);
    sem_destroy(&tokens);
    pthread_spin_destroy(&spin);
    return 0;
}
