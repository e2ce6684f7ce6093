/* sim/src/disk/disk.c: the disk's lifecycle. Created by the first
 * pl_dir_open of a run (entries.c), destroyed with the run (sim.c): what
 * the run left open, unsynced or pending goes with it. */
#include <stdlib.h>

#include "disk_impl.h"

int pl__disk_create(pl__disk **out, pl__sim *sim, uint32_t node)
{
    pl__disk *d = calloc(1, sizeof *d);
    if (d == NULL) {
        return PL_ENOMEM;
    }
    d->sim = sim;
    d->node = node;
    *out = d;
    return 0;
}

void pl__disk_destroy(pl__disk *d)
{
    if (d == NULL) {
        return;
    }
    for (size_t i = 0; i < d->inodes_len; i++) {
        if (d->inodes[i] != NULL) {
            pl__disk_data_free(d->inodes[i]);
            free(d->inodes[i]);
        }
    }
    for (size_t i = 0; i < d->dirs_len; i++) {
        pl__disk_names_free(&d->dirs[i]->vis);
        pl__disk_names_free(&d->dirs[i]->dur);
        free(d->dirs[i]->path);
        free(d->dirs[i]);
    }
    for (size_t i = 0; i < d->file_names_len; i++) {
        free(d->file_names[i]);
    }
    free(d->file_names);
    free(d->inodes);
    free(d->dirs);
    free(d->handles);
    free(d->due);
    free(d);
}
