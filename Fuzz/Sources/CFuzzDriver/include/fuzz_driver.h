#ifndef IMAGEKIT_FUZZ_DRIVER_H
#define IMAGEKIT_FUZZ_DRIVER_H
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's entry for programs with their own main (LLVM 11+): runs the fuzzing loop with
/// `callback` as the target, parsing libFuzzer's flags from argv.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
