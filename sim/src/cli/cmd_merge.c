#include "cli_internal.h"
int pl__cli_cmd_merge(cli *c, int argc, char **argv) { (void)c; (void)argc; (void)argv; return 0; }
