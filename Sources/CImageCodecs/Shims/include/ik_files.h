// Files (the disk cache): extended attributes and access times.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// `fsetxattr`; returns 0 or an errno value.
int ik_fsetxattr(int fd, const char *_Nonnull name, const void *_Nonnull value, size_t size);
/// `getxattr`; returns the length read, or -errno.
long ik_getxattr(const char *_Nonnull path, const char *_Nonnull name, void *_Nonnull value, size_t size);
/// Sets only the access time of `path` (the modification time is left alone); 0 or errno.
int ik_set_access_time(const char *_Nonnull path, int64_t seconds, long nanoseconds);

#ifdef __cplusplus
}
#endif
