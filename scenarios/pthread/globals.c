/* globals: every run starts with the program's globals as the process
 * had them at main, in every file of the program (globals_other.c holds
 * the rest): a campaign runs thousands of seeds in one process, and each
 * must see what one production run sees. main checks each initial value,
 * then changes them all (and leaves a static mutex locked and a once
 * done), so the next seed in the same process fails unless they were put
 * back. Must stay clean. */
#include <assert.h>
#include <pthread.h>
#include <string.h>

int other_value(void);
void other_change(void);

int counter = 5;
int zeroed;
static const char *names[] = {"alpha", "beta"};
static int *pointer = &counter;
static char text[16] = "initial";
static struct {
    int a;
    double b;
} pair = {1, 2.5};
static pthread_mutex_t static_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_runs;

static void count_once(void)
{
    once_runs++;
}

static int bump(void)
{
    static int calls;
    return ++calls;
}

static void *thread_main(void *arg)
{
    (void)arg;
    pthread_once(&once, count_once);
    return NULL;
}

int main(void)
{
    assert(counter == 5 && zeroed == 0 && pointer == &counter);
    assert(strcmp(names[1], "beta") == 0 && strcmp(text, "initial") == 0);
    assert(pair.a == 1 && pair.b == 2.5);
    assert(bump() == 1);
    assert(other_value() == 42);
    assert(pthread_mutex_trylock(&static_lock) == 0);
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    pthread_once(&once, count_once);
    assert(once_runs == 1);

    counter = 6;
    zeroed = 1;
    names[1] = "gamma";
    pointer = &zeroed;
    strcpy(text, "changed");
    pair.a = 9;
    other_change();
    return 0;
}
