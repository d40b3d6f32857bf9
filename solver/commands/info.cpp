// tdsolve info: what a result file holds and whether it is complete. No MPI.
#include <cstdio>
#include <iostream>
#include <new>
#include <string>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/info.hpp"
#include "io/walk.hpp"
#include "solver/commands/command.hpp"

namespace tdsolve {

namespace {

class InfoCommand final : public Command {
 public:
  const char* name() const override { return "info"; }
  const char* summary() const override {
    return "what a result file holds and whether it is complete";
  }
  bool config_section() const override { return false; }  // it takes no options
  bool uses_mpi() const override { return false; }

  std::optional<int> parse(int argc, char** argv) override {
    if (argc < 3 || std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h") {
      std::cout
          << "Usage: tdsolve info FILE.h5\n\n"
             "Prints what a result file holds (parameters, datasets) and whether every chunk\n"
             "of it was written, by the checks the schema gives its kind (its `kind`\n"
             "attribute; files of older versions are known by their datasets). Exit status:\n"
             "0 complete, 3 incomplete, inconsistent or not a tdsolve result, 1 unreadable\n"
             "(or written by a newer tdsolve). The file is read in a child process first: one\n"
             "that HDF5 crashes or loops on there, or cannot read whole within 1 GiB of memory,\n"
             "is damaged (exit 1); one that is no regular file (a FIFO, a device) is never\n"
             "opened (exit 1).\n";
      return argc < 3 ? 2 : 0;
    }
    // The child that reads the file for a reader in another process
    // (io/walk.hpp); not for people.
    if (argc == 4 && std::string(argv[2]) == "--isolated-walk") {
      walk_ = true;
      file_ = argv[3];
      return std::nullopt;
    }
    if (argc > 3) throw UsageError("tdsolve info takes one file");
    file_ = argv[2];
    return std::nullopt;
  }

  int run(MPI_Comm) override {
    io::quiet_hdf5_errors();
    if (!walk_) return io::describe_isolated(file_, std::cout, std::cerr);
    io::bound_walk_memory();
    try {
      bool agree = true;
      const int code = io::describe_result(file_, std::cout, &agree);
      return agree ? code : io::kWalkInconsistent;
    } catch (const io::DamagedFile& e) {
      std::cout.flush();
      std::fprintf(stderr, "tdsolve: error: %s\n", one_line(e.what()).c_str());
      return io::kWalkDamaged;
    } catch (const std::bad_alloc&) {  // past io::kWalkMemoryBytes
      std::cout.flush();
      std::fprintf(stderr,
                   "tdsolve: error: damaged: '%s': reading it took more than %.0f MiB of memory: "
                   "its metadata are damaged\n",
                   io::file_to_read(file_).c_str(), io::kWalkMemoryBytes / (1024 * 1024));
      return io::kWalkDamaged;
    }
  }

 private:
  std::string file_;
  bool walk_ = false;
};

}  // namespace

std::unique_ptr<Command> make_info_command() {
  return std::make_unique<InfoCommand>();
}

}  // namespace tdsolve
