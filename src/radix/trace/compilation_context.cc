#include "radix/trace/compilation_context.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <sstream>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "radix/runtime/profiler.h"
#include "radix/trace/diagnostic_collector.h"
#include "radix/trace/mlir_bridge.h"

namespace radix {

namespace {
thread_local CompilationContext* g_current = nullptr;
std::atomic<uint64_t> g_next_trace_id{1};
uint64_t new_trace_id() { return g_next_trace_id.fetch_add(1, std::memory_order_relaxed); }
thread_local std::vector<CompilationContext*> g_stack;

// The dialects tracing emits (their dependencies load with them) and the
// interface extensions canonicalization may use. Backends lower in contexts
// of their own, with their own registries.
const mlir::DialectRegistry& trace_registry() {
  static mlir::DialectRegistry* registry = [] {
    auto* r = new mlir::DialectRegistry();
    r->insert<mlir::func::FuncDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
              mlir::tensor::TensorDialect, mlir::linalg::LinalgDialect, mlir::scf::SCFDialect>();
    mlir::registerAllExtensions(*r);
    return r;
  }();
  return *registry;
}
}  // namespace

struct CompilationContext::Impl {
  mlir::MLIRContext mlir;
  mlir::OpBuilder builder;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::mutex serialize_mu;  // printing may touch the context's uniquer: one at a time
  std::string bytecode;
  explicit Impl()
      : mlir(trace_registry(), mlir::MLIRContext::Threading::DISABLED), builder(&mlir) {
    mlir.loadDialect<mlir::func::FuncDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
                     mlir::tensor::TensorDialect, mlir::linalg::LinalgDialect, mlir::scf::SCFDialect>();
  }
};

CompilationContext::CompilationContext(const TraceOptions& options)
    : impl_(std::make_unique<Impl>()), options_(options), trace_id_(new_trace_id()) {
  mlir::Location l = mlir::NameLoc::get(mlir::StringAttr::get(&impl_->mlir, options_.name));
  impl_->module = mlir::ModuleOp::create(l, llvm::StringRef(options_.name));
}

// An Activation must end before its context is destroyed (it is scoped
// inside the context's lifetime); the activation stack is left to it.
CompilationContext::~CompilationContext() = default;

CompilationContext* CompilationContext::current() { return g_current; }

CompilationContext& CompilationContext::require_current(const char* what) {
  if (!g_current)
    throw TraceError(std::string(what) +
                     ": no active CompilationContext; ops can only be used while tracing (compile_fn / "
                     "compile_model)");
  return *g_current;
}

CompilationContext::Activation::Activation(CompilationContext& ctx) : ctx_(&ctx) {
  g_stack.push_back(g_current);
  g_current = &ctx;
}

CompilationContext::Activation::~Activation() {
  g_current = g_stack.back();
  g_stack.pop_back();
}

mlir::MLIRContext& CompilationContext::mlir_context() { return impl_->mlir; }
mlir::OpBuilder& CompilationContext::builder() { return impl_->builder; }
mlir::ModuleOp CompilationContext::module() { return *impl_->module; }
mlir::Location CompilationContext::loc() { return mlir::UnknownLoc::get(&impl_->mlir); }

std::string CompilationContext::module_text() {
  std::lock_guard<std::mutex> lock(impl_->serialize_mu);
  std::string s;
  llvm::raw_string_ostream os(s);
  impl_->module->print(os);
  return s;
}

const std::string& CompilationContext::module_bytecode() {
  std::lock_guard<std::mutex> lock(impl_->serialize_mu);
  if (impl_->bytecode.empty()) {
    llvm::raw_string_ostream os(impl_->bytecode);
    if (mlir::failed(mlir::writeBytecodeToFile(*impl_->module, os)))
      detail::fail("internal: the traced module cannot be written as bytecode");
  }
  return impl_->bytecode;
}

void CompilationContext::push_block(mlir::Block* block) {
  blocks_.push_back(block);
  impl_->builder.setInsertionPointToEnd(block);
}

void CompilationContext::pop_block(mlir::Block* block) {
  if (blocks_.empty() || blocks_.back() != block) detail::fail("internal: unbalanced block stack");
  blocks_.pop_back();
  if (!blocks_.empty()) impl_->builder.setInsertionPointToEnd(blocks_.back());
}

mlir::Block* CompilationContext::current_block() const { return blocks_.empty() ? nullptr : blocks_.back(); }


Status CompilationContext::emit_main(const std::vector<Shape>& inputs, const std::vector<std::string>& input_names,
                                     size_t n_model, const Body& body, Signature* signature) {
  mlir::MLIRContext* mctx = &impl_->mlir;
  mlir::OpBuilder& b = impl_->builder;
  mlir::Location l = loc();
  detail::DiagnosticCollector diags(mctx);
  trace_id_ = new_trace_id();  // tensors of any earlier function are foreign from here on

  llvm::SmallVector<mlir::Type> arg_types;
  for (const Shape& s : inputs) arg_types.push_back(detail::tensor_type(mctx, s));
  b.setInsertionPointToEnd(impl_->module->getBody());
  auto fn = mlir::func::FuncOp::create(b, l, "main", b.getFunctionType(arg_types, {}));
  mlir::Block* entry = fn.addEntryBlock();

  std::vector<Tensor> args;
  args.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    args.push_back(Tensor::from_opaque(this, entry->getArgument(static_cast<unsigned>(i)).getAsOpaquePointer(),
                                       inputs[i], next_id(), static_cast<int>(i)));

  std::vector<Tensor> results;
  push_block(entry);
  try {
    Activation act(*this);
    results = body(args);
  } catch (const TraceError& e) {
    pop_block(entry);
    fn.erase();
    return Status(ErrorCode::kTraceError, e.what());
  } catch (const std::invalid_argument& e) {  // a Shape the body built itself was invalid
    pop_block(entry);
    fn.erase();
    return Status(ErrorCode::kTraceError, std::string("invalid Shape built in the traced function: ") + e.what());
  }

  llvm::SmallVector<mlir::Value> ret_values;
  llvm::SmallVector<mlir::Type> ret_types;
  Signature sig;
  sig.inputs = inputs;
  sig.input_names = input_names;
  sig.n_model = n_model;
  for (size_t i = 0; i < results.size(); ++i) {
    const Tensor& r = results[i];
    if (r.is_placeholder() || r.trace_id() != trace_id_) {
      pop_block(entry);
      fn.erase();
      return Status(ErrorCode::kTraceError,
                    "result " + std::to_string(i) + " (" + r.shape().to_string() +
                        ") is not a value traced in this function (a placeholder or a tensor of another trace)");
    }
    ret_values.push_back(detail::value_of(r));
    ret_types.push_back(ret_values.back().getType());
    sig.outputs.push_back(r.shape());
    sig.output_donations.push_back(r.donation_arg());
  }
  mlir::func::ReturnOp::create(b, l, ret_values);
  pop_block(entry);
  fn.setFunctionType(b.getFunctionType(arg_types, ret_types));

  // Argument attributes: names for readability, donations as aliasing hints.
  for (size_t i = 0; i < inputs.size(); ++i)
    if (i < input_names.size() && !input_names[i].empty())
      fn.setArgAttr(static_cast<unsigned>(i), "radix.name", b.getStringAttr(input_names[i]));
  for (size_t o = 0; o < sig.output_donations.size(); ++o) {
    int a = sig.output_donations[o];
    if (a < 0) continue;
    if (fn.getArgAttr(static_cast<unsigned>(a), "radix.aliasing_output"))
      return Status(ErrorCode::kTraceError, "argument " + std::to_string(a) + " (" + inputs[a].to_string() +
                                                ") is donated to two results");
    fn.setArgAttr(static_cast<unsigned>(a), "radix.aliasing_output", b.getI32IntegerAttr(static_cast<int>(o)));
  }

  // Verify right after emission: an invalid module is a bug in an op emitter.
  if (mlir::failed(mlir::verify(*impl_->module)))
    return Status(ErrorCode::kTraceError, "the traced module failed verification:\n" + diags.text());

  if (options_.canonicalize) {
    mlir::PassManager pm = mlir::PassManager::on<mlir::ModuleOp>(mctx);
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
    pm.addPass(mlir::createCanonicalizerPass());
    if (mlir::failed(pm.run(*impl_->module)))
      return Status(ErrorCode::kTraceError, "canonicalization of the traced module failed:\n" + diags.text());
  }
  if (signature) *signature = std::move(sig);
  return Status();
}

Result<TracedModule> trace(const TraceOptions& options, const std::vector<Shape>& inputs,
                           const std::vector<std::string>& input_names, size_t n_model,
                           const CompilationContext::Body& body) {
  Profiler::Span span("trace " + options.name, "trace");
  auto ctx = std::make_unique<CompilationContext>(options);
  Signature sig;
  RADIX_RETURN_IF_ERROR(ctx->emit_main(inputs, input_names, n_model, body, &sig));
  return TracedModule(std::move(ctx), std::move(sig));
}

// ------------------------------------------------------------ TracedModule

TracedModule::TracedModule(std::unique_ptr<CompilationContext> ctx, Signature sig)
    : ctx_(std::move(ctx)), sig_(std::move(sig)) {}
TracedModule::TracedModule(TracedModule&&) noexcept = default;
TracedModule& TracedModule::operator=(TracedModule&&) noexcept = default;
TracedModule::~TracedModule() = default;

const std::string& TracedModule::name() const { return ctx_->options().name; }
mlir::ModuleOp TracedModule::module() const { return ctx_->module(); }
mlir::MLIRContext* TracedModule::mlir_context() const { return &ctx_->mlir_context(); }

std::string TracedModule::to_string() const { return ctx_->module_text(); }
const std::string& TracedModule::bytecode() const { return ctx_->module_bytecode(); }

std::string Signature::to_string() const {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) os << ", ";
    os << inputs[i].to_string();
    if (i < input_names.size() && !input_names[i].empty()) os << " " << input_names[i];
  }
  os << ") -> (";
  for (size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : "") << outputs[i].to_string();
  os << ")";
  return os.str();
}

// ------------------------------------------------------------ detail

namespace detail {

void fail(const std::string& msg) { throw TraceError(msg); }

mlir::Type element_type(mlir::MLIRContext* ctx, DType d) {
  switch (d) {
    case DType::kBool: return mlir::IntegerType::get(ctx, 1);
    case DType::kI8: case DType::kU8: return mlir::IntegerType::get(ctx, 8);
    case DType::kI16: case DType::kU16: return mlir::IntegerType::get(ctx, 16);
    case DType::kI32: case DType::kU32: return mlir::IntegerType::get(ctx, 32);
    case DType::kI64: case DType::kU64: return mlir::IntegerType::get(ctx, 64);
    case DType::kF16: return mlir::Float16Type::get(ctx);
    case DType::kBF16: return mlir::BFloat16Type::get(ctx);
    case DType::kF32: return mlir::Float32Type::get(ctx);
    case DType::kF64: return mlir::Float64Type::get(ctx);
  }
  fail("internal: unknown dtype");
}

mlir::RankedTensorType tensor_type(mlir::MLIRContext* ctx, const Shape& s) {
  llvm::SmallVector<int64_t> dims(s.dims().begin(), s.dims().end());
  return mlir::RankedTensorType::get(dims, element_type(ctx, s.dtype()));
}

Tensor wrap(CompilationContext& ctx, mlir::Value v, const Shape& shape) {
  return Tensor::from_opaque(&ctx, v.getAsOpaquePointer(), shape, ctx.next_id());
}

std::string describe(const char* op, std::initializer_list<const Tensor*> operands) {
  std::string s = std::string(op) + "(";
  bool first = true;
  for (const Tensor* t : operands) {
    if (!first) s += ", ";
    first = false;
    s += t->shape().to_string();
  }
  return s + ")";
}

CompilationContext& context_for(const char* op, std::initializer_list<const Tensor*> operands) {
  CompilationContext& ctx = CompilationContext::require_current(op);
  for (const Tensor* t : operands) {
    if (t->is_placeholder())
      fail(describe(op, operands) + ": operand " + t->shape().to_string() +
           " is a placeholder; only tensors produced while tracing can be used in ops");
    if (t->trace_id() != ctx.trace_id())
      fail(describe(op, operands) + ": operand " + t->shape().to_string() +
           " belongs to another trace than the active one (a tensor kept from an earlier or other "
           "compile_fn / compile_model)");
  }
  return ctx;
}

}  // namespace detail
}  // namespace radix
