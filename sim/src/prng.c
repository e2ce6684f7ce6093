/* sim/src/prng.c: external definitions of the frozen PRNG (see prng.h). */
#include "prng.h"

/* C99 inline: the header holds inline definitions; these declarations
 * make this translation unit emit the one external definition of each,
 * used wherever the compiler chose not to inline (e.g. at -O0). */
extern inline uint64_t pl__splitmix64(uint64_t *state);
extern inline uint64_t pl__prng_next(pl__prng *p);
extern inline uint32_t pl__prng_below(pl__prng *p, uint32_t n);
extern inline bool pl__prng_chance(pl__prng *p, uint32_t prob);

void pl__prng_seed(pl__prng *p, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) {
        p->s[i] = pl__splitmix64(&x);
    }
}

uint64_t pl__prng_subseed(uint64_t root, uint64_t purpose)
{
    /* Mixing the purpose first keeps nearby purposes (1, 2, 3) from
     * producing nearby splitmix counters for the same root. */
    uint64_t z = purpose + UINT64_C(0x5eed);
    uint64_t x = root ^ pl__splitmix64(&z);
    return pl__splitmix64(&x);
}
