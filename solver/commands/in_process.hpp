// A command run inside another program (the Python extension,
// python/ext/core.cpp): the command line's own code path, but MPI started
// once for the process (a singleton without a launcher), errors thrown
// back as one line with the command line's exit code instead of printed, a
// one-rank run never ended with MPI_Abort (solver/driver.hpp:
// fails_locally), and Ctrl-C a clean stop for the call's duration
// (solver/signals.hpp: StopOnInterrupt).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace tdsolve {

// What the command line would print after "tdsolve: error: " and exit with.
struct RunError : std::runtime_error {
  RunError(const std::string& what, int code) : std::runtime_error(what), exit_code(code) {}
  int exit_code;
};

// An in-memory input: --input memory:NAME (io/input.hpp), n × d float64
// values, row-major, alive for the call.
struct MemoryInput {
  std::string name;
  const double* values = nullptr;
  unsigned long long n = 0, d = 0;
  std::string source;  // the file's record of the input
};

// An in-memory result: --output memory:NAME (edm and cross) writes the
// packed values, in the file's order, into `data` (`bytes` long, values of
// `item` bytes: 4 float32, 8 float64), alive for the call. No file, no
// lock, no resume: a stopped run keeps nothing.
struct MemoryOutput {
  std::string name;
  void* data = nullptr;
  unsigned long long bytes = 0;
  int item = 0;
};

// The output registered under --output memory:NAME's NAME for the running
// call; null when `spec` is no memory: spec (io::is_memory_spec), or none
// is registered (a command line outside a call).
const MemoryOutput* memory_output(const std::string& spec);

// Runs `tdsolve args[0] args[1:]...` (args[0] the command's name): its exit
// code, 0 or kStoppedExitCode (stopped by Ctrl-C; resumable when it writes a
// file). Throws RunError. Not reentrant: one call at a time in a process.
int run_in_process(const std::vector<std::string>& args, const std::vector<MemoryInput>& inputs,
                   const std::vector<MemoryOutput>& outputs = {});

}  // namespace tdsolve
