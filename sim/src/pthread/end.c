/* sim/src/pthread/end.c: the end of the program's globals.
 *
 * These two are the only objects of the shim in .data and .bss. The
 * program's files come first on the link line and the shim's library
 * after them, so everything of the program's own in those sections lies
 * below them (run.c copies that span). Nothing else of the library may
 * put an object in .data or .bss (spt.h: PL__SPT_KEEP). */
extern char pl__spt_end_data, pl__spt_end_bss;
char pl__spt_end_data = 1;
char pl__spt_end_bss;
