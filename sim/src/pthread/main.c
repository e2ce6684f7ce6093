/* sim/src/pthread/main.c: the process's main of a pthread program.
 *
 * Its own file, so that a harness with a main of its own (the leak test)
 * links the rest of the library without it. */
#include "spt.h"

int main(int argc, char **argv)
{
    pl__spt_program_start(argc > 0 ? argv[0] : NULL);
    return pl_main(argc, argv, NULL);
}
