/* The same harness linking the scenario library without link_whole: the
 * PL_SCENARIO_USE line refers to scenarios.c's PL_SCENARIO_FILE symbol,
 * so the linker keeps that object and its scenarios. */
#include <pollen/sim.h>

PL_SCENARIO_USE(user_relay);

int main(int argc, char **argv) { return pl_main(argc, argv, NULL); }
