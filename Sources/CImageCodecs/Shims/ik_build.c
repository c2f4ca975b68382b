#include "ik_build.h"

#ifndef IK_BUILD_COMMIT
#define IK_BUILD_COMMIT ""
#endif

const char *ik_build_commit(void) { return IK_BUILD_COMMIT; }
