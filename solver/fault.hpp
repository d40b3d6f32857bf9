// Fault injection for tests: TDSOLVE_TEST_FAULT=RANK:CHUNK:STAGE makes rank RANK
// throw when it reaches STAGE for a chunk c >= CHUNK ('*' = 0). Stages:
// read (the rank has its input, no file exists yet), compute, copy (results
// to the host), write (values or partials to the sink), mark (data written
// and flushed, done flag not yet). Three more SIGKILL the rank instead:
// kill (before writing a chunk), create (at step CHUNK, 0 to 4, of making
// the file) and rename (every chunk flagged in FILE.h5.partial, before its
// rename to FILE.h5; CHUNK is not used). Costs one branch per call when
// unset.
#pragma once

#include "core/types.hpp"

namespace tdsolve {

enum class Stage { read, compute, copy, write, mark, kill, create, rename };

// TDSOLVE_TEST_SLOW_MS=N (tests only) makes every rank sleep N ms before
// writing each chunk, so a test can signal or race a run that is surely
// still going.
//
// Reads TDSOLVE_TEST_FAULT (UsageError if malformed) for the process of `rank`.
void arm_faults(int rank);
// Throws std::runtime_error("injected fault: ...") when armed for (stage, chunk).
void fault_point(Stage stage, index_t chunk);

}  // namespace tdsolve
