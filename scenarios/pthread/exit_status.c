/* exit_status: a worker thread finds an error and calls exit(3) while
 * main waits for it: in production the process ends with status 3, and
 * under the simulator that status is a finding (the program failed). */
#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

static void *checker(void *arg)
{
    (void)arg;
    exit(3);
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, checker, NULL);
    pthread_mutex_lock(&lock);
    for (;;) {
        pthread_cond_wait(&never, &lock);
    }
}
