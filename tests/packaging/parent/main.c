/* The user's harness: pl_main over the scenarios linked into it. Linked
 * with link_whole it has them all; with link_with alone it has none, and
 * pl_main says how to fix the link. */
#include <pollen/sim.h>

int main(int argc, char **argv) { return pl_main(argc, argv, NULL); }
