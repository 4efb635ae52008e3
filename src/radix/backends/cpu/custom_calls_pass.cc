// "radix-custom-calls": each custom call (trace/ops_custom_call.h: a
// func.call carrying radix.custom_call.target) becomes a call to the
// runtime's radix_ffi_call(descriptor, operand addresses, result addresses):
//  * the call site's descriptor (target, buffer types, attributes; format in
//    runtime/ffi_site.h) is a constant global in the object, so a cached
//    executable carries it;
//  * operands are read in place (bufferization.to_buffer, read only);
//    results are fresh buffers the handler fills; an aliased result is its
//    operand's buffer, passed as both (bufferization copies the operand
//    first only when its value is still needed);
//  * the two address arrays live on the stack of the calling function
//    (allocated once at its entry, so calls in loops reuse them).
// A target no handler is registered for on the CPU is an error naming it.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/runtime_calls.h"
#include "radix/runtime/ffi_registry.h"
#include "radix/runtime/ffi_site.h"

namespace radix {

namespace {

constexpr const char* kTargetAttr = "radix.custom_call.target";

// Writes one attribute value; false (with `why`) for a kind the ABI lacks.
bool write_attr(ffi::detail::SiteWriter& w, mlir::Attribute a, std::string& why);

bool write_dict(ffi::detail::SiteWriter& w, mlir::DictionaryAttr d, std::string& why) {
  w.pod(static_cast<uint32_t>(d.size()));
  for (mlir::NamedAttribute na : d) {  // sorted by name
    w.str(na.getName().getValue());
    if (!write_attr(w, na.getValue(), why)) {
      why = "attribute '" + na.getName().str() + "': " + why;
      return false;
    }
  }
  return true;
}

template <class T>
void write_scalar(ffi::detail::SiteWriter& w, RadixFfi_DataType dt, T v) {
  w.pod(static_cast<uint32_t>(RADIX_FFI_ATTR_SCALAR));
  w.pod(static_cast<uint32_t>(dt));
  char bytes[8] = {};
  std::memcpy(bytes, &v, sizeof v);
  w.out.append(bytes, 8);
}

template <class T>
void write_array(ffi::detail::SiteWriter& w, RadixFfi_DataType dt, llvm::ArrayRef<T> v) {
  w.pod(static_cast<uint32_t>(RADIX_FFI_ATTR_ARRAY));
  w.pod(static_cast<uint32_t>(dt));
  w.pod(static_cast<uint64_t>(v.size()));
  w.out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

bool write_attr(ffi::detail::SiteWriter& w, mlir::Attribute a, std::string& why) {
  if (auto b = mlir::dyn_cast<mlir::BoolAttr>(a)) {
    write_scalar<uint8_t>(w, RADIX_FFI_DATA_TYPE_PRED, b.getValue() ? 1 : 0);
  } else if (auto i = mlir::dyn_cast<mlir::IntegerAttr>(a)) {
    if (i.getType().isInteger(32)) write_scalar<int32_t>(w, RADIX_FFI_DATA_TYPE_S32, static_cast<int32_t>(i.getInt()));
    else write_scalar<int64_t>(w, RADIX_FFI_DATA_TYPE_S64, i.getInt());
  } else if (auto f = mlir::dyn_cast<mlir::FloatAttr>(a)) {
    if (f.getType().isF32()) write_scalar<float>(w, RADIX_FFI_DATA_TYPE_F32, static_cast<float>(f.getValueAsDouble()));
    else write_scalar<double>(w, RADIX_FFI_DATA_TYPE_F64, f.getValueAsDouble());
  } else if (auto s = mlir::dyn_cast<mlir::StringAttr>(a)) {
    w.pod(static_cast<uint32_t>(RADIX_FFI_ATTR_STRING));
    w.str(s.getValue());
  } else if (auto v = mlir::dyn_cast<mlir::DenseI32ArrayAttr>(a)) {
    write_array<int32_t>(w, RADIX_FFI_DATA_TYPE_S32, v.asArrayRef());
  } else if (auto v = mlir::dyn_cast<mlir::DenseI64ArrayAttr>(a)) {
    write_array<int64_t>(w, RADIX_FFI_DATA_TYPE_S64, v.asArrayRef());
  } else if (auto v = mlir::dyn_cast<mlir::DenseF32ArrayAttr>(a)) {
    write_array<float>(w, RADIX_FFI_DATA_TYPE_F32, v.asArrayRef());
  } else if (auto v = mlir::dyn_cast<mlir::DenseF64ArrayAttr>(a)) {
    write_array<double>(w, RADIX_FFI_DATA_TYPE_F64, v.asArrayRef());
  } else if (auto d = mlir::dyn_cast<mlir::DictionaryAttr>(a)) {
    w.pod(static_cast<uint32_t>(RADIX_FFI_ATTR_DICTIONARY));
    return write_dict(w, d, why);
  } else {
    why = "an attribute kind the FFI has no representation for";
    return false;
  }
  return true;
}

struct CustomCallsPass : public mlir::PassWrapper<CustomCallsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CustomCallsPass)

  CustomCallsPass() = default;
  CustomCallsPass(const CustomCallsPass& o) : PassWrapper(o) {}
  // The platform whose handlers the program calls: "cpu", or "cuda" (which
  // also takes the host handlers: device buffers are host-readable there).
  Option<std::string> platform{*this, "platform", llvm::cl::desc("handler platform"), llvm::cl::init("cpu")};

  llvm::StringRef getArgument() const override { return "radix-custom-calls"; }
  llvm::StringRef getDescription() const override {
    return "Lower custom calls to calls into the runtime's FFI (radix_ffi_call)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::bufferization::BufferizationDialect, mlir::func::FuncDialect,
                    mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    llvm::SmallVector<mlir::func::CallOp> calls;
    module.walk([&](mlir::func::CallOp c) {
      if (c->hasAttr(kTargetAttr)) calls.push_back(c);
    });
    if (calls.empty()) return;
    mlir::OpBuilder b(&getContext());
    mlir::func::FuncOp runtime_fn = detail::declare_runtime_function(b, module, "radix_ffi_call", 3);
    int site = 0;
    for (mlir::func::CallOp c : calls)
      if (mlir::failed(lower(b, module, runtime_fn, c, site++))) return signalPassFailure();
    // The per-site declarations are unused now.
    llvm::SmallVector<mlir::func::FuncOp> decls;
    for (auto f : module.getOps<mlir::func::FuncOp>())
      if (f->hasAttr(kTargetAttr) && f.symbolKnownUseEmpty(module)) decls.push_back(f);
    for (auto f : decls) f.erase();
  }

  mlir::LogicalResult lower(mlir::OpBuilder& b, mlir::ModuleOp module, mlir::func::FuncOp runtime_fn,
                            mlir::func::CallOp c, int site) {
    mlir::Location loc = c.getLoc();
    const std::string target = mlir::cast<mlir::StringAttr>(c->getAttr(kTargetAttr)).str();
    if (!ffi::has_handler(target, platform) && !ffi::has_handler(target, "cpu")) {
      std::string known;
      for (const std::string& n : ffi::handler_names()) known += (known.empty() ? "" : ", ") + n;
      return c.emitError("custom call target '" + target + "' has no handler registered for platform " + platform.getValue() + " (registered: " +
                         (known.empty() ? "none" : known) + ")");
    }
    auto in_dtypes = c->getAttrOfType<mlir::DenseI32ArrayAttr>("radix.custom_call.operand_dtypes");
    auto out_dtypes = c->getAttrOfType<mlir::DenseI32ArrayAttr>("radix.custom_call.result_dtypes");
    auto attrs = c->getAttrOfType<mlir::DictionaryAttr>("radix.custom_call.attrs");
    if (!in_dtypes || !out_dtypes || !attrs || in_dtypes.size() != static_cast<int64_t>(c.getNumOperands()) ||
        out_dtypes.size() != static_cast<int64_t>(c.getNumResults()))
      return c.emitError("custom call '" + target + "': malformed radix.custom_call attributes");
    // (output, operand) aliases.
    llvm::DenseMap<unsigned, unsigned> alias_of_operand;
    if (auto al = c->getAttrOfType<mlir::DenseI32ArrayAttr>("radix.custom_call.output_operand_aliases"))
      for (int64_t i = 0; i + 1 < al.size(); i += 2)
        alias_of_operand[static_cast<unsigned>(al[i + 1])] = static_cast<unsigned>(al[i]);

    // The descriptor.
    ffi::detail::SiteWriter body;
    body.str(target);
    auto buffers = [&](mlir::TypeRange types, llvm::ArrayRef<int32_t> dts) {
      body.pod(static_cast<uint32_t>(types.size()));
      for (size_t i = 0; i < types.size(); ++i) {
        auto t = mlir::cast<mlir::RankedTensorType>(types[i]);
        body.pod(static_cast<uint32_t>(dts[i]));
        body.pod(static_cast<uint32_t>(t.getRank()));
        for (int64_t d : t.getShape()) body.pod(d);
      }
    };
    buffers(c.getOperandTypes(), in_dtypes.asArrayRef());
    buffers(c.getResultTypes(), out_dtypes.asArrayRef());
    std::string why;
    if (!write_dict(body, attrs, why)) return c.emitError("custom call '" + target + "': " + why);
    ffi::detail::SiteWriter desc;
    desc.out.append("RFFI", 4);
    desc.pod(ffi::detail::kSiteFormatVersion);
    desc.pod(ffi::detail::site_hash(body.out));
    desc.pod(static_cast<uint32_t>(body.out.size()));
    desc.out += body.out;

    const std::string gname = std::string(ffi::detail::kSiteSymbolPrefix) + std::to_string(site);
    auto gtype = mlir::MemRefType::get({static_cast<int64_t>(desc.out.size())}, b.getI8Type());
    {
      mlir::OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(module.getBody());
      auto tensor_t = mlir::RankedTensorType::get(gtype.getShape(), b.getI8Type());
      auto init = mlir::DenseElementsAttr::get(
          tensor_t, llvm::ArrayRef<int8_t>(reinterpret_cast<const int8_t*>(desc.out.data()), desc.out.size()));
      // Public: the loaded object lists it, so the runtime can drop the
      // site (and its handler state) when the executable goes away.
      mlir::memref::GlobalOp::create(b, loc, gname, b.getStringAttr("public"), gtype, init, /*constant=*/true,
                                     b.getI64IntegerAttr(8));
    }
    // Address arrays at the entry of the enclosing function.
    auto fn = c->getParentOfType<mlir::func::FuncOp>();
    const int64_t n_in = c.getNumOperands(), n_out = c.getNumResults();
    mlir::Value in_arr, out_arr;
    {
      mlir::OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&fn.getBody().front());
      in_arr = mlir::memref::AllocaOp::create(b, loc, mlir::MemRefType::get({std::max<int64_t>(n_in, 1)}, b.getI64Type()));
      out_arr = mlir::memref::AllocaOp::create(b, loc, mlir::MemRefType::get({std::max<int64_t>(n_out, 1)}, b.getI64Type()));
    }
    b.setInsertionPoint(c);
    auto address = [&](mlir::Value memref) { return detail::buffer_address(b, loc, memref); };
    auto store = [&](mlir::Value arr, int64_t i, mlir::Value v) {
      mlir::Value idx = mlir::arith::ConstantIndexOp::create(b, loc, i);
      mlir::memref::StoreOp::create(b, loc, v, arr, mlir::ValueRange{idx});
    };
    llvm::SmallVector<mlir::Value> out_bufs(static_cast<size_t>(n_out));
    for (int64_t i = 0; i < n_in; ++i) {
      mlir::Value operand = c.getOperand(static_cast<unsigned>(i));
      auto t = mlir::cast<mlir::RankedTensorType>(operand.getType());
      auto m_t = mlir::MemRefType::get(t.getShape(), t.getElementType());
      auto alias = alias_of_operand.find(static_cast<unsigned>(i));
      // An aliased operand's buffer is written: bufferization copies it
      // first only if the traced value is still read afterwards (or is an
      // argument the caller lent), so a last use is updated in place.
      const bool writes = alias != alias_of_operand.end();
      mlir::Value buf = mlir::bufferization::ToBufferOp::create(b, loc, m_t, operand, /*read_only=*/!writes);
      if (writes) out_bufs[alias->second] = buf;
      store(in_arr, i, address(buf));
    }
    for (int64_t o = 0; o < n_out; ++o) {
      if (!out_bufs[static_cast<size_t>(o)]) {
        auto t = mlir::cast<mlir::RankedTensorType>(c.getResult(static_cast<unsigned>(o)).getType());
        out_bufs[static_cast<size_t>(o)] =
            mlir::memref::AllocOp::create(b, loc, mlir::MemRefType::get(t.getShape(), t.getElementType()));
      }
      store(out_arr, o, address(out_bufs[static_cast<size_t>(o)]));
    }
    mlir::Value g = mlir::memref::GetGlobalOp::create(b, loc, gtype, gname);
    mlir::func::CallOp::create(b, loc, runtime_fn, mlir::ValueRange{address(g), address(in_arr), address(out_arr)});
    for (int64_t o = 0; o < n_out; ++o) {
      mlir::Value r = c.getResult(static_cast<unsigned>(o));
      mlir::Value t = mlir::bufferization::ToTensorOp::create(b, loc, r.getType(), out_bufs[static_cast<size_t>(o)],
                                                              /*restrict=*/true, /*writable=*/true);
      r.replaceAllUsesWith(t);
    }
    c.erase();
    return mlir::success();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_custom_calls_pass() { return std::make_unique<CustomCallsPass>(); }

}  // namespace radix
