/* scenarios/pollen_main.c: the `pollen` binary, pl_main over every
 * scenario linked into it (each registers itself with PL_SCENARIO). */
#include <pollen/sim.h>

int main(int argc, char **argv)
{
    return pl_main(argc, argv, NULL);
}
