/* core/backend/file.h: the real system's file entries (file.c), for the
 * vtable in epoll.c. Same signatures and meaning as the file entries of
 * pollen/system.h; `self` is unused. */
#ifndef POLLEN_BACKEND_FILE_H
#define POLLEN_BACKEND_FILE_H

#include <stdint.h>
#include <sys/types.h>

int pl__posix_dir_open(void *self, const char *path, int create);
int pl__posix_file_open(void *self, int dir, const char *name, uint32_t flags, uint32_t mode);
ssize_t pl__posix_file_read(void *self, int handle, void *buf, size_t len, uint64_t offset);
ssize_t pl__posix_file_write(void *self, int handle, const void *buf, size_t len, uint64_t offset);
int pl__posix_file_sync(void *self, int handle, int data_only);
int64_t pl__posix_file_size(void *self, int handle);
int pl__posix_dir_rename(void *self, int dir, const char *from, const char *to);
int pl__posix_dir_unlink(void *self, int dir, const char *name);
ssize_t pl__posix_dir_list(void *self, int dir, char *buf, size_t len);

#endif
