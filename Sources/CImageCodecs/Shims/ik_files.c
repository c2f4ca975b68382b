#define _GNU_SOURCE
#include "ik_files.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

int ik_fsetxattr(int fd, const char *name, const void *value, size_t size) {
    return fsetxattr(fd, name, value, size, 0) == 0 ? 0 : errno;
}

long ik_getxattr(const char *path, const char *name, void *value, size_t size) {
    ssize_t length = getxattr(path, name, value, size);
    return length >= 0 ? (long)length : -(long)errno;
}

int ik_set_access_time(const char *path, int64_t seconds, long nanoseconds) {
    struct timespec times[2] = {{(time_t)seconds, nanoseconds}, {0, UTIME_OMIT}};
    return utimensat(AT_FDCWD, path, times, 0) == 0 ? 0 : errno;
}
