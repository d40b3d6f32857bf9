// The registry: every command, one line each (LAMMPS's PairStyle(sw,PairSW)
// lines, collected here by hand). The order is that of `tdsolve --help`, of
// the unknown-command message and of the --config sections. A command's
// file defines make_NAME_command(); a new command is that file and its line.
#include <memory>

#include "solver/commands/command.hpp"

#define TDSOLVE_COMMANDS(X) \
  X(edm)                    \
  X(hist)                   \
  X(cross)                  \
  X(knn)                    \
  X(collide)                \
  X(triplet)                \
  X(adf)                    \
  X(fractal)                \
  X(info)                   \
  X(bench)

namespace tdsolve {

#define TDSOLVE_DECLARE(name) std::unique_ptr<Command> make_##name##_command();
TDSOLVE_COMMANDS(TDSOLVE_DECLARE)
#undef TDSOLVE_DECLARE

const std::vector<CommandMaker>& command_registry() {
#define TDSOLVE_ENTRY(name) &make_##name##_command,
  static const std::vector<CommandMaker> table = {TDSOLVE_COMMANDS(TDSOLVE_ENTRY)};
#undef TDSOLVE_ENTRY
  return table;
}

std::unique_ptr<Command> make_command(const std::string& name) {
  for (CommandMaker make : command_registry()) {
    std::unique_ptr<Command> c = make();
    if (name == c->name()) return c;
  }
  return nullptr;
}

std::vector<std::string> command_names(bool config_only) {
  std::vector<std::string> names;
  for (CommandMaker make : command_registry()) {
    const std::unique_ptr<Command> c = make();
    if (!config_only || c->config_section()) names.push_back(c->name());
  }
  return names;
}

}  // namespace tdsolve
