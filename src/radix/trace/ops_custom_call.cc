#include "radix/trace/ops_custom_call.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "radix/core/half.h"
#include "radix/api/ffi_binding.h"
#include "radix/runtime/ffi_registry.h"
#include "radix/trace/mlir_bridge.h"

namespace radix {

namespace {

mlir::Attribute to_mlir(mlir::Builder& b, const CustomCallAttr& a, const std::string& where);

mlir::DictionaryAttr to_mlir_dict(mlir::Builder& b, const CustomCallAttrs& attrs, const std::string& where) {
  std::set<std::string> seen;
  llvm::SmallVector<mlir::NamedAttribute> named;
  for (const auto& [name, value] : attrs) {
    if (name.empty()) detail::fail(where + ": an attribute needs a name");
    if (!seen.insert(name).second) detail::fail(where + ": attribute '" + name + "' given twice");
    named.push_back(b.getNamedAttr(name, to_mlir(b, value, where + " attribute '" + name + "'")));
  }
  return b.getDictionaryAttr(named);  // sorted by name
}

mlir::Attribute to_mlir(mlir::Builder& b, const CustomCallAttr& a, const std::string& where) {
  return std::visit(
      [&](const auto& v) -> mlir::Attribute {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) return b.getBoolAttr(v);
        else if constexpr (std::is_same_v<T, int32_t>) return b.getI32IntegerAttr(v);
        else if constexpr (std::is_same_v<T, int64_t>) return b.getI64IntegerAttr(v);
        else if constexpr (std::is_same_v<T, float>) return b.getF32FloatAttr(v);
        else if constexpr (std::is_same_v<T, double>) return b.getF64FloatAttr(v);
        else if constexpr (std::is_same_v<T, std::string>) return b.getStringAttr(v);
        else if constexpr (std::is_same_v<T, std::vector<int32_t>>) return b.getDenseI32ArrayAttr(v);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return b.getDenseI64ArrayAttr(v);
        else if constexpr (std::is_same_v<T, std::vector<float>>) return b.getDenseF32ArrayAttr(v);
        else if constexpr (std::is_same_v<T, std::vector<double>>) return b.getDenseF64ArrayAttr(v);
        else return to_mlir_dict(b, v, where);
      },
      a.value());
}

// ---- Built-in handlers --------------------------------------------------------

template <class T>
void print_values(std::ostringstream& os, const void* data, int64_t n, int64_t shown) {
  const T* p = static_cast<const T*>(data);
  for (int64_t i = 0; i < shown; ++i) {
    if (i) os << ", ";
    if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) os << static_cast<int>(p[i]);
    else os << p[i];
  }
  if (shown < n) os << ", ... (" << n - shown << " more)";
}

RadixFfi_Error* print_handler(RadixFfi_CallFrame* f) {
  if (f->extension_start) return radix_ffi_report_metadata(f, 0);
  const RadixFfi_Buffer* x = f->args.args[0];
  const void* name_p = nullptr;
  std::string name;
  if (!radix_ffi_attr_get(f->api, &f->attrs, "name", RADIX_FFI_ATTR_STRING, &name_p)) {
    const auto* s = static_cast<const RadixFfi_ByteSpan*>(name_p);
    name.assign(s->ptr, s->len);
  }
  int64_t max_values = 16;
  if (RadixFfi_Error* e = radix_ffi_attr_i64(f->api, &f->attrs, "max_values", &max_values)) return e;
  const int64_t n = radix_ffi_buffer_count(x), shown = std::min(n, std::max<int64_t>(max_values, 0));
  std::ostringstream os;
  os << (name.empty() ? "tensor" : name) << ": [";
  for (int64_t i = 0; i < x->rank; ++i) os << (i ? "," : "") << x->dims[i];
  os << "] {";
  switch (x->dtype) {
    case RADIX_FFI_DATA_TYPE_PRED: case RADIX_FFI_DATA_TYPE_U8: print_values<uint8_t>(os, x->data, n, shown); break;
    case RADIX_FFI_DATA_TYPE_S8: print_values<int8_t>(os, x->data, n, shown); break;
    case RADIX_FFI_DATA_TYPE_S16: print_values<int16_t>(os, x->data, n, shown); break;
    case RADIX_FFI_DATA_TYPE_U16: print_values<uint16_t>(os, x->data, n, shown); break;
    case RADIX_FFI_DATA_TYPE_S32: print_values<int32_t>(os, x->data, n, shown); break;
    case RADIX_FFI_DATA_TYPE_U32: print_values<uint32_t>(os, x->data, n, shown); break;
    case RADIX_FFI_DATA_TYPE_S64: print_values<int64_t>(os, x->data, n, shown); break;
    case RADIX_FFI_DATA_TYPE_U64: print_values<uint64_t>(os, x->data, n, shown); break;
    case RADIX_FFI_DATA_TYPE_F32: print_values<float>(os, x->data, n, shown); break;
    case RADIX_FFI_DATA_TYPE_F64: print_values<double>(os, x->data, n, shown); break;
    case RADIX_FFI_DATA_TYPE_F16: case RADIX_FFI_DATA_TYPE_BF16: {
      const auto* p = static_cast<const uint16_t*>(x->data);
      for (int64_t i = 0; i < shown; ++i)
        os << (i ? ", " : "")
           << (x->dtype == RADIX_FFI_DATA_TYPE_F16 ? f16_to_float(p[i]) : bf16_to_float(p[i]));
      if (shown < n) os << ", ... (" << n - shown << " more)";
      break;
    }
    default: os << "?"; break;
  }
  os << "}\n";
  const std::string s = os.str();
  std::fwrite(s.data(), 1, s.size(), stderr);
  return nullptr;
}

std::mutex g_callbacks_mu;
std::map<int64_t, std::shared_ptr<HostCallback>>& callbacks() {
  static auto* m = new std::map<int64_t, std::shared_ptr<HostCallback>>();
  return *m;
}
std::atomic<int64_t> g_next_callback{1};

DType dtype_of_ffi(RadixFfi_DataType d) { return ffi::from_ffi_dtype(d).value_or(DType::kU8); }

RadixFfi_Error* host_callback_handler(RadixFfi_CallFrame* f) {
  if (f->extension_start) return radix_ffi_report_metadata(f, 0);
  int64_t id = 0;
  if (RadixFfi_Error* e = radix_ffi_attr_i64(f->api, &f->attrs, "callback", &id)) return e;
  std::shared_ptr<HostCallback> fn;
  {
    std::lock_guard<std::mutex> lock(g_callbacks_mu);
    if (auto it = callbacks().find(id); it != callbacks().end()) fn = it->second;
  }
  if (!fn)
    return f->api->error_create(RADIX_FFI_ERROR_NOT_FOUND,
                                ("host callback #" + std::to_string(id) +
                                 " is not registered in this process (a cached executable from another run?)")
                                    .c_str());
  auto views = [](int64_t n, auto buffers) {
    std::vector<HostCallbackBuffer> v;
    for (int64_t i = 0; i < n; ++i) {
      const RadixFfi_Buffer* b = buffers[i];
      v.push_back({Shape(dtype_of_ffi(b->dtype), std::span<const int64_t>(b->dims, static_cast<size_t>(b->rank))),
                   b->data});
    }
    return v;
  };
  std::vector<HostCallbackBuffer> in = views(f->args.size, f->args.args), out = views(f->rets.size, f->rets.rets);
  try {
    (*fn)(in, out);
  } catch (const std::exception& e) {
    return f->api->error_create(RADIX_FFI_ERROR_INTERNAL, (std::string("host callback threw: ") + e.what()).c_str());
  } catch (...) {
    return f->api->error_create(RADIX_FFI_ERROR_INTERNAL, "host callback threw a non-std exception");
  }
  return nullptr;
}

[[maybe_unused]] const bool g_builtins = [] {
  (void)ffi::register_handler("radix.print", "host", RadixFfi_HandlerBundle{nullptr, nullptr, nullptr, &print_handler});
  (void)ffi::register_handler("radix.host_callback", "host",
                              RadixFfi_HandlerBundle{nullptr, nullptr, nullptr, &host_callback_handler});
  return true;
}();

}  // namespace

std::vector<Tensor> custom_call(const std::string& target, const std::vector<Tensor>& inputs,
                                const std::vector<Shape>& outputs, const CustomCallOptions& options) {
  const std::string where = "custom_call('" + target + "')";
  CompilationContext& ctx = CompilationContext::require_current("custom_call");
  for (const Tensor& t : inputs) (void)detail::context_for("custom_call", {&t});
  if (target.empty()) detail::fail("custom_call: the target name is empty");
  if (inputs.size() > 32 || outputs.size() > 32) detail::fail(where + ": at most 32 operands and 32 results");
  for (const auto& [o, a] : options.output_operand_aliases) {
    if (o < 0 || o >= static_cast<int>(outputs.size()) || a < 0 || a >= static_cast<int>(inputs.size()))
      detail::fail(where + ": alias (output " + std::to_string(o) + ", operand " + std::to_string(a) +
                   ") is out of range");
    if (outputs[static_cast<size_t>(o)].dtype() != inputs[static_cast<size_t>(a)].dtype() ||
        !outputs[static_cast<size_t>(o)].same_dims(inputs[static_cast<size_t>(a)].shape()))
      detail::fail(where + ": output " + std::to_string(o) + " (" + outputs[static_cast<size_t>(o)].to_string() +
                   ") cannot alias operand " + std::to_string(a) + " (" +
                   inputs[static_cast<size_t>(a)].shape().to_string() + "): shapes differ");
  }
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  llvm::SmallVector<mlir::Type> in_types, out_types;
  llvm::SmallVector<mlir::Value> operands;
  llvm::SmallVector<int32_t> in_dtypes, out_dtypes;
  for (const Tensor& t : inputs) {
    in_types.push_back(detail::tensor_type(mctx, t.shape()));
    operands.push_back(detail::value_of(t));
    in_dtypes.push_back(ffi::to_ffi_dtype(t.dtype()));
  }
  for (const Shape& s : outputs) {
    out_types.push_back(detail::tensor_type(mctx, s));
    out_dtypes.push_back(ffi::to_ffi_dtype(s.dtype()));
  }
  mlir::DictionaryAttr attrs = to_mlir_dict(b, options.attrs, where);
  // A private declaration per call site: its name is unique, its type the call's.
  mlir::ModuleOp module = ctx.module();
  const std::string symbol = "__radix_custom_call_" + std::to_string(ctx.next_id());
  {
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto decl = mlir::func::FuncOp::create(b, ctx.loc(), symbol, b.getFunctionType(in_types, out_types));
    decl.setPrivate();
    decl->setAttr("radix.custom_call.target", b.getStringAttr(target));
  }
  auto call = mlir::func::CallOp::create(b, ctx.loc(), symbol, out_types, operands);
  call->setAttr("radix.custom_call.target", b.getStringAttr(target));
  call->setAttr("radix.custom_call.attrs", attrs);
  call->setAttr("radix.custom_call.operand_dtypes", b.getDenseI32ArrayAttr(in_dtypes));
  call->setAttr("radix.custom_call.result_dtypes", b.getDenseI32ArrayAttr(out_dtypes));
  if (options.has_side_effect) call->setAttr("radix.custom_call.has_side_effect", b.getUnitAttr());
  if (!options.output_operand_aliases.empty()) {
    llvm::SmallVector<int32_t> flat;
    for (const auto& [o, a] : options.output_operand_aliases) {
      flat.push_back(o);
      flat.push_back(a);
    }
    call->setAttr("radix.custom_call.output_operand_aliases", b.getDenseI32ArrayAttr(flat));
  }
  std::vector<Tensor> results;
  for (size_t i = 0; i < outputs.size(); ++i) results.push_back(detail::wrap(ctx, call.getResult(static_cast<unsigned>(i)), outputs[i]));
  return results;
}

Tensor print(const Tensor& x, const std::string& name, int64_t max_values) {
  CustomCallOptions o;
  o.attrs = {{"name", name}, {"max_values", max_values}};
  o.has_side_effect = true;
  (void)custom_call("radix.print", {x}, {}, o);
  return x;
}

std::vector<Tensor> host_callback(HostCallback fn, const std::vector<Tensor>& inputs, const std::vector<Shape>& outputs) {
  if (!fn) detail::fail("host_callback: the callable is empty");
  const int64_t id = g_next_callback.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(g_callbacks_mu);
    callbacks()[id] = std::make_shared<HostCallback>(std::move(fn));
  }
  CustomCallOptions o;
  o.attrs = {{"callback", id}};
  o.has_side_effect = true;
  return custom_call("radix.host_callback", inputs, outputs, o);
}

}  // namespace radix
