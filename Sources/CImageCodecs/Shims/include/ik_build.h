// The build's identity, given by the build command: `-Xcc -DIK_BUILD_COMMIT=\"$(git describe
// --always --dirty)\"` (`make dist` and `make deb` pass it). A build without it reports "".
#pragma once

/// The source revision this binary was built from (`git describe`), or "" when not given.
const char *ik_build_commit(void);
