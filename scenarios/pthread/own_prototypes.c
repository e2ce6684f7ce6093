/* own_prototypes: a program whose source holds glibc's declarations
 * itself. The build preprocesses it first (as a generated or
 * preprocessed source is), so every pthread prototype, typedef and
 * inline function is written out in the file the compiler sees, before
 * the shim's header renames them; it must compile, link and run clean. */
#include <assert.h>
#include <pthread.h>
#include <semaphore.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t ready;
static int total;

static void *add(void *arg)
{
    pthread_mutex_lock(&lock);
    total += (int)(long)arg;
    pthread_mutex_unlock(&lock);
    sem_post(&ready);
    return NULL;
}

int main(void)
{
    sem_init(&ready, 0, 0);
    pthread_t t[3];
    for (long i = 0; i < 3; i++) {
        pthread_create(&t[i], NULL, add, (void *)(i + 1));
    }
    for (int i = 0; i < 3; i++) {
        sem_wait(&ready);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
    }
    assert(total == 6);
    return 0;
}
