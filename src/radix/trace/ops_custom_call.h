// Custom calls: user C / C++ kernels (radix/ffi.h handlers, registered with
// runtime/ffi_registry.h) called from a traced graph, and the host
// callbacks built on them.
//
//   Tensor y = custom_call("scale", {x}, {x.shape()}, {.attrs = {{"alpha", 2.0f}}})[0];
//   Tensor z = print(y, "after scale");     // prints from inside the compiled graph, returns y
//
// In the IR a custom call is a func.call to a private declaration carrying
// `radix.custom_call.target` and the attributes (`radix.custom_call.attrs`),
// so dumps show it; calls are never removed by CSE / DCE. The CPU backend
// lowers each to a call into the runtime, which builds the call frame and
// runs the handler's stages. A target with no handler for the compiling
// platform fails the compile, naming it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "radix/core/shape.h"
#include "radix/trace/tensor.h"

namespace radix {

class CustomCallAttr;
// Named attributes (sorted by name when the call is emitted; names unique).
using CustomCallAttrs = std::vector<std::pair<std::string, CustomCallAttr>>;

// One attribute value: a scalar (bool, i32, i64, f32, f64), a string, an
// array (i32, i64, f32, f64) or a nested dictionary.
class CustomCallAttr {
 public:
  using Value = std::variant<bool, int32_t, int64_t, float, double, std::string, std::vector<int32_t>,
                             std::vector<int64_t>, std::vector<float>, std::vector<double>, CustomCallAttrs>;
  CustomCallAttr(bool v) : v_(v) {}                   // NOLINT: attributes read like literals
  CustomCallAttr(int32_t v) : v_(v) {}                // NOLINT
  CustomCallAttr(int64_t v) : v_(v) {}                // NOLINT
  CustomCallAttr(float v) : v_(v) {}                  // NOLINT
  CustomCallAttr(double v) : v_(v) {}                 // NOLINT
  CustomCallAttr(const char* v) : v_(std::string(v)) {}  // NOLINT
  CustomCallAttr(std::string v) : v_(std::move(v)) {}    // NOLINT
  CustomCallAttr(std::vector<int32_t> v) : v_(std::move(v)) {}  // NOLINT
  CustomCallAttr(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT
  CustomCallAttr(std::vector<float> v) : v_(std::move(v)) {}    // NOLINT
  CustomCallAttr(std::vector<double> v) : v_(std::move(v)) {}   // NOLINT
  CustomCallAttr(CustomCallAttrs v) : v_(std::move(v)) {}       // NOLINT: a nested dictionary
  const Value& value() const { return v_; }

 private:
  Value v_;
};

struct CustomCallOptions {
  CustomCallAttrs attrs;
  // Kept even when its results are unused (printing, I/O). Every custom
  // call is kept today; the flag is recorded in the IR for passes that may
  // learn to drop pure ones.
  bool has_side_effect = false;
  // (output, operand) pairs: the handler's output `output` is the buffer it
  // receives as operand `operand` (same shape and dtype), to update in
  // place; the traced operand itself is never changed.
  std::vector<std::pair<int, int>> output_operand_aliases;
};

// Calls custom-call target `target` on `inputs`, returning one tensor per
// `outputs` shape. TraceError (naming the target) for an empty target, an
// alias out of range or between different shapes, or a repeated attribute.
std::vector<Tensor> custom_call(const std::string& target, const std::vector<Tensor>& inputs,
                                const std::vector<Shape>& outputs, const CustomCallOptions& options = {});

// Prints `x` when the graph runs (to standard error: the name, the shape and
// up to `max_values` values, the rest elided) and returns x. Through the
// custom call "radix.print" (registered by Radix).
Tensor print(const Tensor& x, const std::string& name = "", int64_t max_values = 16);

// A host buffer as a host callback sees it: a view of the run's memory.
struct HostCallbackBuffer {
  Shape shape;
  void* data;
  template <class T> T* as() const { return static_cast<T*>(data); }
};
using HostCallback = std::function<void(std::span<const HostCallbackBuffer> inputs,
                                        std::span<const HostCallbackBuffer> outputs)>;

// Calls `fn` on the host when the graph runs, with `inputs` and buffers of
// the `outputs` shapes to fill. The callable is kept by the process
// (registered under a fresh id) for as long as the program may run. A throw
// from `fn` fails the run with its what().
std::vector<Tensor> host_callback(HostCallback fn, const std::vector<Tensor>& inputs,
                                  const std::vector<Shape>& outputs);

}  // namespace radix
