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
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "radix/runtime/profiler.h"
#include "radix/trace/diagnostic_collector.h"
#include "radix/trace/function_attributes.h"
#include "radix/trace/mlir_bridge.h"
#include "radix/trace/sharding_emitter.h"

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
              mlir::tensor::TensorDialect, mlir::linalg::LinalgDialect, mlir::scf::SCFDialect,
              mlir::shard::ShardDialect>();
    mlir::registerAllExtensions(*r);
    detail::register_sharding_models(*r);
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

// ------------------------------------------------------------ functions

namespace {
// A new function goes before the top-level op holding `block` (the function
// being traced, so callees precede their callers), or at the module's end.
void set_function_insertion_point(mlir::OpBuilder& b, mlir::ModuleOp module, mlir::Block* block) {
  mlir::Operation* top = block ? block->getParentOp() : nullptr;
  while (top && top->getParentOp() != module.getOperation()) top = top->getParentOp();
  if (top) b.setInsertionPoint(top);
  else b.setInsertionPointToEnd(module.getBody());
}
}  // namespace

EmittedFunction CompilationContext::emit_function(const std::string& name, bool is_public,
                                                  const std::vector<Shape>& inputs, const Body& body) {
  mlir::OpBuilder& b = impl_->builder;
  mlir::Location l = loc();
  // The caller (if any) is mid-trace: its insertion point, block stack and
  // trace id come back on every exit.
  mlir::OpBuilder::InsertionGuard guard(b);
  struct Restore {
    CompilationContext* self;
    std::vector<mlir::Block*> blocks;
    uint64_t trace_id;
    ~Restore() {
      self->blocks_ = std::move(blocks);
      self->trace_id_ = trace_id;
    }
  } restore{this, std::move(blocks_), trace_id_};
  blocks_.clear();
  trace_id_ = new_trace_id();  // the caller's tensors are foreign in here

  set_function_insertion_point(b, module(), restore.blocks.empty() ? nullptr : restore.blocks.back());
  llvm::SmallVector<mlir::Type> arg_types;
  for (const Shape& s : inputs) arg_types.push_back(detail::tensor_type(&impl_->mlir, s));
  auto fn = mlir::func::FuncOp::create(b, l, name, b.getFunctionType(arg_types, {}));
  if (!is_public) fn.setPrivate();
  mlir::Block* entry = fn.addEntryBlock();

  EmittedFunction out;
  out.op = fn;
  try {
    std::vector<Tensor> args = detail::wrap_block_arguments(*this, entry, inputs, 0, /*as_parameters=*/true);
    push_block(entry);
    std::vector<Tensor> results;
    {
      Activation act(*this);
      results = body(args);
    }
    detail::require_traced_here(*this, "", results);
    mlir::func::ReturnOp::create(b, l, detail::values_of(results));
    pop_block(entry);
    llvm::SmallVector<mlir::Type> ret_types;
    for (const Tensor& r : results) {
      ret_types.push_back(detail::value_of(r).getType());
      out.outputs.push_back(r.shape());
      out.output_donations.push_back(r.donation_arg());
      out.output_memory_kinds.push_back(r.memory_kind());
    }
    fn.setFunctionType(b.getFunctionType(arg_types, ret_types));
  } catch (const std::invalid_argument& e) {  // a Shape the body built itself was invalid
    fn.erase();
    throw TraceError(std::string("invalid Shape built in the traced function: ") + e.what());
  } catch (...) {
    fn.erase();
    throw;
  }
  return out;
}

Status CompilationContext::emit_main(const std::vector<Shape>& inputs, const std::vector<std::string>& input_names,
                                     size_t n_model, const Body& body, Signature* signature) {
  mlir::MLIRContext* mctx = &impl_->mlir;
  detail::DiagnosticCollector diags(mctx);
  EmittedFunction f;
  for (size_t i = 0; i < inputs.size() && automatic_partitioning(); ++i)
    if (auto err = options_.mesh.check(inputs[i]))
      return Status(ErrorCode::kTraceError, "input " + std::to_string(i) +
                                                (i < input_names.size() ? " (" + input_names[i] + ")" : "") + ": " + *err);
  try {
    f = emit_function("main", /*is_public=*/true, inputs, body);
    auto fn = mlir::cast<mlir::func::FuncOp>(f.op);
    detail::write_argument_names(fn, input_names);
    detail::write_donations(fn, f.output_donations, inputs);
    detail::write_output_memory_kinds(fn, f.output_memory_kinds);
    if (automatic_partitioning()) {
      detail::write_shardings(fn, inputs, f.outputs, options_.mesh);
      detail::annotate_main_shardings(*this, fn, inputs, f.outputs);
    }
  } catch (const TraceError& e) {
    return Status(ErrorCode::kTraceError, e.what());
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
  if (signature) {
    signature->inputs = inputs;
    signature->input_names = input_names;
    signature->n_model = n_model;
    signature->outputs = std::move(f.outputs);
    // On several devices the executable is one device's part of the
    // program: its buffers are the local shards.
    // (Manual partitioning traced the device's own shapes already.)
    signature->mesh = options_.mesh;
    if (automatic_partitioning()) {
      for (Shape& s : signature->inputs) s = options_.mesh.local_shape(s);
      for (Shape& s : signature->outputs) s = options_.mesh.local_shape(s);
    }
    signature->output_donations = std::move(f.output_donations);
    signature->output_memory_kinds = std::move(f.output_memory_kinds);
  }
  return Status();
}

const CachedFunction* CompilationContext::cached_function(const std::string& key) const {
  auto it = functions_.find(key);
  return it == functions_.end() ? nullptr : &it->second;
}

const CachedFunction& CompilationContext::add_cached_function(const std::string& key, CachedFunction f) {
  return functions_.insert_or_assign(key, std::move(f)).first->second;
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

// Why a tensor of another trace is refused, for every such message.
constexpr const char* kForeign =
    " belongs to another trace than the active one (a tensor kept from an earlier or other compile_fn / "
    "compile_model, or captured from an enclosing function: pass it as an argument of call())";

CompilationContext& context_for(const char* op, std::initializer_list<const Tensor*> operands) {
  CompilationContext& ctx = CompilationContext::require_current(op);
  for (const Tensor* t : operands) {
    if (t->is_placeholder())
      fail(describe(op, operands) + ": operand " + t->shape().to_string() +
           " is a placeholder; only tensors produced while tracing can be used in ops");
    if (t->trace_id() != ctx.trace_id()) fail(describe(op, operands) + ": operand " + t->shape().to_string() + kForeign);
  }
  return ctx;
}

void require_traced_here(CompilationContext& ctx, const std::string& what, std::span<const Tensor> results) {
  for (size_t i = 0; i < results.size(); ++i) {
    const Tensor& r = results[i];
    std::string head = what + "result " + std::to_string(i) + " (" + r.shape().to_string() + ")";
    if (r.is_placeholder()) fail(head + " is a placeholder, not a value traced in this function");
    if (r.trace_id() != ctx.trace_id()) fail(head + kForeign);
  }
}

llvm::SmallVector<mlir::Value> values_of(std::span<const Tensor> ts) {
  llvm::SmallVector<mlir::Value> v;
  for (const Tensor& t : ts) v.push_back(value_of(t));
  return v;
}

std::vector<Tensor> wrap_block_arguments(CompilationContext& ctx, mlir::Block* block, std::span<const Shape> shapes,
                                         unsigned first, bool as_parameters) {
  std::vector<Tensor> out;
  out.reserve(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    mlir::Value v = block->getArgument(first + static_cast<unsigned>(i));
    out.push_back(Tensor::from_opaque(&ctx, v.getAsOpaquePointer(), shapes[i], ctx.next_id(),
                                      as_parameters ? static_cast<int>(i) : -1));
  }
  return out;
}

}  // namespace detail
}  // namespace radix
