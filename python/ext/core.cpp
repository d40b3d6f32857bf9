// tdsolve._core: the commands run inside the Python process
// (solver/commands/in_process.hpp). python/tdsolve/_api.py builds the
// command line and reads the file back (or gives pdist/cdist the array to
// fill); this module only runs it.
//
//   run(args: list[str], inputs: dict[str, numpy.ndarray],
//       outputs: dict[str, numpy.ndarray]) -> int
//
// args: the command and its options, as on the command line; inputs: named
// 2-D float64 C-contiguous arrays (read through the buffer protocol), given to the run as --input
// memory:NAME (or any option that reads points, e.g. --with); outputs: named writable
// C-contiguous float32 or float64 arrays that --output memory:NAME (edm, cross) fills with the
// result's values. The GIL is released while the command runs; Ctrl-C stops it cleanly (exit code
// 75). Errors: tdsolve._core.Error(message, exit_code), the command line's one line.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "solver/commands/in_process.hpp"

namespace py = pybind11;

namespace {

// A C-contiguous float64 view of an input through the buffer protocol
// (PEP 3118), not NumPy's C API: the module has no NumPy ABI to match
// (Debian's pybind11 2.10 reads NumPy 1's structures; a venv may hold
// NumPy 2). Released with the GIL held, when run() returns.
struct View {
  Py_buffer b{};
  bool held = false;
  View() = default;
  View(const View&) = delete;
  View& operator=(const View&) = delete;
  ~View() {
    if (held) PyBuffer_Release(&b);
  }
};

// The buffer's format without a native / little-endian prefix (what NumPy
// exports): "d" float64, "f" float32.
std::string plain_format(const char* format) {
  if (!format) return "";
  std::string f(format);
  if (f.size() == 2 && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f = f.substr(1);
  return f;
}

bool is_float64(const char* format) {
  return plain_format(format) == "d";
}

// obj's buffer with `flags`, held in `keep` (released at the end of the
// call, with the GIL); a TypeError saying `refused` when it has none.
const Py_buffer* hold(std::vector<std::unique_ptr<View>>* keep, const py::object& obj, int flags,
                      const std::string& refused) {
  auto v = std::make_unique<View>();
  if (PyObject_GetBuffer(obj.ptr(), &v->b, flags) != 0) {
    PyErr_Clear();
    throw py::type_error(refused);
  }
  v->held = true;
  keep->push_back(std::move(v));
  return &keep->back()->b;
}

int run(const std::vector<std::string>& args, const std::map<std::string, py::object>& given,
        const std::map<std::string, py::object>& results) {
  std::vector<std::unique_ptr<View>> keep;  // held (the GIL-free run reads them) until the end
  std::vector<tdsolve::MemoryInput> inputs;
  for (const auto& [name, obj] : given) {
    const Py_buffer* v = hold(&keep, obj, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT,
                              "input '" + name + "' is not a C-contiguous float64 array");
    if (!is_float64(v->format) || v->itemsize != 8)
      throw py::type_error("input '" + name + "' is not a float64 array");
    if (v->ndim != 2)
      throw py::value_error("input '" + name + "' has " + std::to_string(v->ndim) +
                            " dimensions; it needs 2 (n points × d features)");
    tdsolve::MemoryInput m;
    m.name = name;
    m.values = static_cast<const double*>(v->buf);
    m.n = static_cast<unsigned long long>(v->shape[0]);
    m.d = static_cast<unsigned long long>(v->shape[1]);
    m.source = "python:" + name + " (" + std::to_string(m.n) + " × " + std::to_string(m.d) + ")";
    inputs.push_back(m);
  }
  std::vector<tdsolve::MemoryOutput> outputs;
  for (const auto& [name, obj] : results) {
    const Py_buffer* v = hold(&keep, obj, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE,
                              "output '" + name + "' is not a writable C-contiguous array");
    const std::string f = plain_format(v->format);
    if (!((f == "d" && v->itemsize == 8) || (f == "f" && v->itemsize == 4)))
      throw py::type_error("output '" + name + "' is not a float32 or float64 array");
    tdsolve::MemoryOutput m;
    m.name = name;
    m.data = v->buf;
    m.bytes = static_cast<unsigned long long>(v->len);
    m.item = static_cast<int>(v->itemsize);
    outputs.push_back(m);
  }
  int code = 0;
  {
    py::gil_scoped_release free;
    // One run at a time in a process (MPI's state, the signal handler, the
    // memory inputs): a second Python thread's call waits here.
    static std::mutex one_at_a_time;
    const std::lock_guard<std::mutex> lock(one_at_a_time);
    code = tdsolve::run_in_process(args, inputs, outputs);
  }
  return code;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "tdsolve's commands in process (use the functions of the tdsolve package)";
  static py::exception<tdsolve::RunError> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tdsolve::RunError& e) {
      // A tuple value: the exception's args, (message, exit code).
      PyErr_SetObject(error.ptr(), py::make_tuple(e.what(), e.exit_code).ptr());
    }
  });
  m.def("run", &run, py::arg("args"), py::arg("inputs") = std::map<std::string, py::object>{},
        py::arg("outputs") = std::map<std::string, py::object>{},
        "Runs `tdsolve ARGS...` in this process; returns its exit code (0, or 75: stopped by "
        "Ctrl-C). Raises tdsolve._core.Error(message, exit_code).");
}
