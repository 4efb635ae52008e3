#include "radix/backends/cpu/object_jit.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ObjectFileInterface.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Target/LLVMIR/LLVMTranslationInterface.h"

namespace radix {

namespace {

void init_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

llvm::CodeGenOptLevel codegen_level(int opt_level) {
  switch (opt_level) {
    case 0: return llvm::CodeGenOptLevel::None;
    case 1: return llvm::CodeGenOptLevel::Less;
    case 2: return llvm::CodeGenOptLevel::Default;
    default: return llvm::CodeGenOptLevel::Aggressive;
  }
}

Result<std::unique_ptr<llvm::TargetMachine>> make_target_machine(const ObjectCodegenOptions& options) {
  const llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) return compile_error("no LLVM target for " + triple.str() + ": " + error);
  std::string cpu = options.target_cpu;
  std::string features;
  if (cpu == "host") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures f;
    for (const auto& kv : llvm::sys::getHostCPUFeatures()) f.AddFeature(kv.getKey(), kv.getValue());
    features = f.getString();
  } else {
    // LLVM only warns on stderr about an unknown CPU and then compiles for a
    // generic one: check the name first.
    std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, "", ""));
    if (!sti || !sti->isCPUStringValid(cpu))
      return invalid_argument("ObjectCodegenOptions.target_cpu: unknown CPU '" + cpu + "' for " + triple.str());
  }
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      codegen_level(options.opt_level)));
  if (!tm) return compile_error("cannot create a target machine for " + triple.str() + " / " + cpu);
  return tm;
}

// Registers the builtin and LLVM dialect translations only when missing: a
// caller's context usually has them (registerAllToLLVMIRTranslations), and
// changing the registry of a context another thread uses is unsafe.
void ensure_llvm_translation(mlir::MLIRContext* ctx) {
  auto has = [](mlir::Dialect* d) {
    return d && d->getRegisteredInterface<mlir::LLVMTranslationDialectInterface>();
  };
  if (has(ctx->getLoadedDialect<mlir::BuiltinDialect>()) && has(ctx->getLoadedDialect<mlir::LLVM::LLVMDialect>()))
    return;
  mlir::registerBuiltinDialectTranslation(*ctx);
  mlir::registerLLVMDialectTranslation(*ctx);
}

// Adds "_radix_packed_<name>"(void** args) calling "_mlir_ciface_<name>"
// with *args[i] as its i-th argument and storing a result through args[n]:
// one signature for every entry point, callable without knowing its types.
Status add_packed_wrapper(llvm::Module& m, const std::string& name) {
  const std::string ciface_name = "_mlir_ciface_" + name;
  const std::string packed_name = std::string(kPackedPrefix) + name;
  llvm::Function* ciface = m.getFunction(ciface_name);
  if (!ciface || ciface->isDeclaration())
    return compile_error("emit_object: @" + name + " has llvm.emit_c_interface but no definition of " + ciface_name);
  if (m.getNamedValue(packed_name)) return compile_error("emit_object: the module already defines " + packed_name);

  llvm::LLVMContext& ctx = m.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, /*isVarArg=*/false);
  auto* packed = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, packed_name, m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", packed));
  llvm::Value* args = packed->getArg(0);
  auto arg_slot = [&](unsigned i) { return b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, args, i)); };
  llvm::SmallVector<llvm::Value*> call_args;
  for (llvm::Argument& a : ciface->args()) call_args.push_back(b.CreateLoad(a.getType(), arg_slot(a.getArgNo())));
  llvm::CallInst* result = b.CreateCall(ciface, call_args);
  if (!result->getType()->isVoidTy()) b.CreateStore(result, arg_slot(ciface->arg_size()));
  b.CreateRetVoid();
  // The packed entry is the only way in: the C wrapper and the function end
  // up inlined into it. Left external, the wrapper would call the function
  // with every memref descriptor expanded (five or more scalars per
  // argument: 1,600 for a 110M Llama decode step), and instruction
  // selection of that one call took 7 of a 10 s compile.
  for (llvm::Function* fn : {m.getFunction(name), ciface})
    if (fn) {
      fn->setLinkage(llvm::GlobalValue::InternalLinkage);
      fn->removeFnAttr(llvm::Attribute::NoInline);
      fn->addFnAttr(llvm::Attribute::AlwaysInline);
    }
  return Status();
}

// Static constructors and destructors travel as two exported functions:
// LLJIT's platforms without the ORC runtime do not run the .init_array of
// an object they link, so load() and ~LoadedObject call these instead.
constexpr const char* kStaticInit = "_radix_static_init";
constexpr const char* kStaticFini = "_radix_static_fini";

// Replaces `array` (llvm.global_ctors / llvm.global_dtors) by a function
// `fn_name` calling its entries by priority: ascending for constructors,
// descending for destructors, as the LLVM LangRef orders them.
void lower_static_ctors(llvm::Module& m, const char* array, const char* fn_name, bool descending) {
  llvm::GlobalVariable* gv = m.getNamedGlobal(array);
  if (!gv) return;
  std::vector<std::pair<uint64_t, llvm::Constant*>> calls;
  if (auto* init = llvm::dyn_cast_or_null<llvm::ConstantArray>(gv->hasInitializer() ? gv->getInitializer() : nullptr))
    for (llvm::Use& u : init->operands()) {
      auto* entry = llvm::dyn_cast<llvm::ConstantStruct>(u.get());
      if (!entry || llvm::isa<llvm::ConstantPointerNull>(entry->getOperand(1))) continue;
      calls.emplace_back(llvm::cast<llvm::ConstantInt>(entry->getOperand(0))->getZExtValue(), entry->getOperand(1));
    }
  std::stable_sort(calls.begin(), calls.end(),
                   [&](const auto& a, const auto& b) { return descending ? a.first > b.first : a.first < b.first; });
  gv->eraseFromParent();
  if (calls.empty()) return;
  llvm::LLVMContext& ctx = m.getContext();
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), /*isVarArg=*/false);
  auto* fn = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, fn_name, m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  for (const auto& [priority, callee] : calls) b.CreateCall(type, callee);
  b.CreateRetVoid();
}

// Set once static destruction has begun (see ExitSentinel).
std::atomic<bool> g_exiting{false};

// Destroying an LLJIT runs LLVM code that uses LLVM's own static objects;
// during static destruction at exit those may already be gone. The sentinel
// is built right after the first JIT has linked, so it is destroyed before
// the LLVM statics that touched: JITs still alive after that are leaked.
struct ExitSentinel {
  ~ExitSentinel() { g_exiting.store(true); }
};
void arm_exit_sentinel() { static ExitSentinel sentinel; }

// Collects what the ExecutionSession reports (link errors such as an
// unresolved symbol arrive here, not in the failed lookup's error).
struct ErrorLog {
  std::mutex mu;
  std::string text;
  void add(llvm::Error e) {
    std::string s = llvm::toString(std::move(e));
    std::lock_guard<std::mutex> lock(mu);
    text += (text.empty() ? "" : "; ") + s;
  }
  std::string take() {
    std::lock_guard<std::mutex> lock(mu);
    return std::move(text);
  }
};

}  // namespace

Result<std::string> resolve_target_cpu(const std::string& target_cpu) {
  // Every compile asks (to check options and to key the cache); a CPU name
  // resolves the same way for the life of the process, so make the target
  // machine once per name.
  static std::mutex mu;
  static std::map<std::string, Result<std::string>> resolved;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = resolved.find(target_cpu); it != resolved.end()) return it->second;
  init_llvm_targets();
  ObjectCodegenOptions o;
  o.target_cpu = target_cpu;
  auto tm = make_target_machine(o);
  Result<std::string> r = tm.ok() ? Result<std::string>((*tm)->getTargetCPU().str() + " " +
                                                        (*tm)->getTargetFeatureString().str())
                                  : Result<std::string>(tm.status());
  resolved.emplace(target_cpu, r);
  return r;
}

namespace {
// Runs LLVM's code generator over `m`: an object file or assembly text.
Result<std::string> generate_code(llvm::TargetMachine& tm, llvm::Module& m, llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    return compile_error(std::string("emit_object: the target machine cannot emit ") +
                         (type == llvm::CodeGenFileType::ObjectFile ? "object files" : "assembly"));
  pm.run(m);
  return std::string(bytes.data(), bytes.size());
}
}  // namespace

Result<std::string> emit_object(mlir::ModuleOp module, const ObjectCodegenOptions& options) {
  if (options.opt_level < 0 || options.opt_level > 3)
    return invalid_argument("ObjectCodegenOptions.opt_level must be 0..3, got " + std::to_string(options.opt_level));
  init_llvm_targets();
  RADIX_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, make_target_machine(options));

  // The C wrappers convert-func-to-llvm adds carry the attribute too.
  llvm::SmallVector<std::string> entries;
  for (auto fn : module.getOps<mlir::LLVM::LLVMFuncOp>())
    if (!fn.isExternal() && fn->hasAttr(mlir::LLVM::LLVMDialect::getEmitCWrapperAttrName()) &&
        !fn.getName().starts_with("_mlir_ciface_"))
      entries.push_back(fn.getName().str());

  using StepClock = std::chrono::steady_clock;
  auto t_step = StepClock::now();
  auto step_done = [&](std::string_view step) {
    const auto now = StepClock::now();
    if (options.on_step) options.on_step(step, std::chrono::duration<double, std::milli>(now - t_step).count());
    t_step = now;
  };
  ensure_llvm_translation(module->getContext());
  llvm::LLVMContext llvm_ctx;  // one per call: compiles on other threads share nothing
  std::string diagnostics;
  std::unique_ptr<llvm::Module> m;
  {
    // Context-wide: while it is installed, it would also take diagnostics of
    // other threads using the same context.
    mlir::ScopedDiagnosticHandler capture(module->getContext(), [&](mlir::Diagnostic& d) {
      if (!diagnostics.empty()) diagnostics += "\n";
      diagnostics += d.str();
      return mlir::success();
    });
    m = mlir::translateModuleToLLVMIR(module, llvm_ctx, "radix");
  }
  if (!m) return compile_error("emit_object: translation to LLVM IR failed: " + diagnostics);
  m->setTargetTriple(tm->getTargetTriple());
  m->setDataLayout(tm->createDataLayout());
  for (const std::string& name : entries) RADIX_RETURN_IF_ERROR(add_packed_wrapper(*m, name));
  for (const char* reserved : {kStaticInit, kStaticFini})
    if (m->getNamedValue(reserved)) return compile_error(std::string("emit_object: the module defines ") + reserved);
  lower_static_ctors(*m, "llvm.global_ctors", kStaticInit, /*descending=*/false);
  lower_static_ctors(*m, "llvm.global_dtors", kStaticFini, /*descending=*/true);

  step_done("translate");

  auto optimize = mlir::makeOptimizingTransformer(static_cast<unsigned>(options.opt_level), 0, tm.get());
  if (llvm::Error e = optimize(m.get()))
    return compile_error("emit_object: LLVM optimization failed: " + llvm::toString(std::move(e)));
  step_done("llvm-opt");
  if (options.on_llvm_ir) {
    std::string ir;
    llvm::raw_string_ostream os(ir);
    m->print(os, nullptr);
    options.on_llvm_ir(ir);
  }

  if (options.on_asm) {
    // Code generation changes the module it runs on: the listing comes from a copy.
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*m);
    RADIX_ASSIGN_OR_RETURN(std::string text, generate_code(*tm, *copy, llvm::CodeGenFileType::AssemblyFile));
    options.on_asm(text);
    step_done("asm");
  }
  Result<std::string> object = generate_code(*tm, *m, llvm::CodeGenFileType::ObjectFile);
  step_done("codegen");
  return object;
}

struct LoadedObject::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  llvm::orc::SymbolMap symbols;  // every symbol the object defines, resolved at load

  // Calls a void() function of the object if it defines one.
  void call_if_defined(const char* name) const {
    auto it = symbols.find(jit->mangleAndIntern(name));
    if (it != symbols.end()) it->second.getAddress().toPtr<void (*)()>()();
  }
};

LoadedObject::LoadedObject(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::vector<const void*> LoadedObject::symbols_with_prefix(std::string_view prefix) const {
  std::vector<const void*> out;
  for (const auto& [name, sym] : impl_->symbols) {
    const llvm::StringRef n = *name;  // ELF: no leading underscore added
    if (n.starts_with(llvm::StringRef(prefix.data(), prefix.size())))
      out.push_back(sym.getAddress().toPtr<const void*>());
  }
  return out;
}

LoadedObject::~LoadedObject() {
  if (g_exiting.load()) {
    (void)impl_->jit.release();  // the process is exiting: let the OS reclaim it
    return;
  }
  impl_->call_if_defined(kStaticFini);
}

Result<std::unique_ptr<LoadedObject>> LoadedObject::load(std::string_view object,
                                                         std::span<const HostSymbol> host_symbols) {
  auto fail = [](const std::string& why) { return compile_error("cannot load object: " + why); };
  init_llvm_targets();
  // A copy: JITLink refers to the buffer while linking, and aligns it.
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), "radix-object");

  // Refuse up front what would fail late or silently: another architecture,
  // a non-relocatable file, initializers in sections nobody would run.
  // (JITLink checks headers but not relocation offsets: a bit-flipped object
  // can still crash it, so an on-disk cache must checksum its files.)
  auto parsed = llvm::object::ObjectFile::createObjectFile(buffer->getMemBufferRef());
  if (!parsed) return fail(llvm::toString(parsed.takeError()));
  const llvm::Triple host(llvm::sys::getProcessTriple());
  const llvm::Triple::ArchType arch = (*parsed)->getArch();
  if (arch != host.getArch())
    return fail("it is for " + llvm::Triple::getArchTypeName(arch).str() + ", this host is " +
                llvm::Triple::getArchTypeName(host.getArch()).str());
  if (!(*parsed)->isRelocatableObject()) return fail("not a relocatable object file");
  for (const llvm::object::SectionRef& section : (*parsed)->sections()) {
    llvm::Expected<llvm::StringRef> name = section.getName();
    if (!name) return fail(llvm::toString(name.takeError()));
    for (const char* unsupported : {".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors"})
      if (name->starts_with(unsupported))
        return fail("its static constructors or destructors are in " + name->str() +
                    ", which this loader does not run (emit_object makes them functions)");
  }

  // With RADIX_PERF_MAP set, the functions' names, sizes and places (section,
  // offset in it), for perf's map of JIT code (written once the object is
  // linked, below). Local ones too: OpenMP's outlined loop bodies, where a
  // threaded program spends its time, have internal linkage.
  struct Function {
    std::string name;
    uint64_t size = 0, section = 0, offset = 0;
    bool global = false;
  };
  std::vector<Function> functions;
  if (std::getenv("RADIX_PERF_MAP") != nullptr && llvm::isa<llvm::object::ELFObjectFileBase>(*parsed))
    for (const llvm::object::SymbolRef& sym : (*parsed)->symbols()) {
      llvm::Expected<llvm::object::SymbolRef::Type> type = sym.getType();
      llvm::Expected<llvm::StringRef> name = sym.getName();
      llvm::Expected<llvm::object::section_iterator> section = sym.getSection();
      llvm::Expected<uint64_t> value = sym.getValue();
      llvm::Expected<uint32_t> flags = sym.getFlags();
      if (!type || !name || !section || !value || !flags) {
        llvm::consumeError(type.takeError());
        llvm::consumeError(name.takeError());
        llvm::consumeError(section.takeError());
        llvm::consumeError(value.takeError());
        llvm::consumeError(flags.takeError());
        continue;
      }
      if (*type != llvm::object::SymbolRef::ST_Function || *section == (*parsed)->section_end()) continue;
      functions.push_back(Function{name->str(), llvm::object::ELFSymbolRef(sym).getSize(), (*section)->getIndex(), *value,
                                   (*flags & llvm::object::SymbolRef::SF_Global) != 0});
    }

  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return fail("cannot detect the host target: " + llvm::toString(jtmb.takeError()));
  // No platform: its initializers only cover IR the JIT compiles itself,
  // and its deinitialize() compiles IR (milliseconds) at every unload. The
  // object's constructors and destructors are the kStaticInit/Fini calls.
  auto created = llvm::orc::LLJITBuilder()
                     .setJITTargetMachineBuilder(std::move(*jtmb))
                     .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
                     .setProcessSymbolsJITDylibSetup([](llvm::orc::LLJIT& j) -> llvm::Expected<llvm::orc::JITDylibSP> {
                       auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                           j.getDataLayout().getGlobalPrefix());
                       if (!gen) return gen.takeError();
                       llvm::orc::JITDylib& jd = j.getExecutionSession().createBareJITDylib("<Process Symbols>");
                       jd.addGenerator(std::move(*gen));
                       return &jd;
                     })
                     .create();
  if (!created) return fail(llvm::toString(created.takeError()));
  auto impl = std::make_unique<Impl>();
  impl->jit = std::move(*created);
  llvm::orc::LLJIT& jit = *impl->jit;
  llvm::orc::ExecutionSession& es = jit.getExecutionSession();
  auto log = std::make_shared<ErrorLog>();
  es.setErrorReporter([log](llvm::Error e) { log->add(std::move(e)); });
  auto fail_with_log = [&](llvm::Error e) {
    std::string why = llvm::toString(std::move(e));
    if (std::string reported = log->take(); !reported.empty()) why = reported + " (" + why + ")";
    return fail(why);
  };

  llvm::orc::JITDylib& main = jit.getMainJITDylib();
  if (!host_symbols.empty()) {
    llvm::orc::SymbolMap defs;
    for (const HostSymbol& s : host_symbols) {
      const llvm::orc::ExecutorSymbolDef def(llvm::orc::ExecutorAddr::fromPtr(s.address),
                                             llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
      if (!defs.try_emplace(jit.mangleAndIntern(s.name), def).second)
        return fail("host symbol " + s.name + " is given twice");
    }
    if (llvm::Error e = main.define(llvm::orc::absoluteSymbols(std::move(defs)))) return fail_with_log(std::move(e));
  }

  // Look up everything the object defines: this links it now, so that an
  // unresolved symbol is a load error, and packed_entry needs no JIT call.
  auto interface = llvm::orc::getObjectFileInterface(es, buffer->getMemBufferRef());
  if (!interface) return fail(llvm::toString(interface.takeError()));
  llvm::orc::SymbolLookupSet wanted;
  for (const auto& [name, flags] : interface->SymbolFlags)
    if (!flags.hasMaterializationSideEffectsOnly()) wanted.add(name);
  if (llvm::Error e = jit.addObjectFile(main, std::move(buffer))) return fail_with_log(std::move(e));
  auto symbols = es.lookup(llvm::orc::makeJITDylibSearchOrder(&main, llvm::orc::JITDylibLookupFlags::MatchAllSymbols),
                           std::move(wanted));
  if (!symbols) return fail_with_log(symbols.takeError());
  impl->symbols = std::move(*symbols);
  if (!functions.empty()) {
    // perf's convention for JIT code: /tmp/perf-<pid>.map, "start size name"
    // per line (hex), so `perf report` names the compiled functions.
    static std::mutex perf_map_mutex;
    std::lock_guard<std::mutex> lock(perf_map_mutex);
    const std::string path = "/tmp/perf-" + std::to_string(::getpid()) + ".map";
    // A local function's address: its section's load address (from a
    // global function in the same section: JITLink keeps an ELF section as
    // one block) plus its offset; skipped when its section has none.
    std::map<uint64_t, uint64_t> section_base;
    for (const Function& fn : functions)
      if (fn.global)
        if (auto it = impl->symbols.find(jit.mangleAndIntern(fn.name)); it != impl->symbols.end())
          section_base.emplace(fn.section, it->second.getAddress().getValue() - fn.offset);
    if (std::FILE* f = std::fopen(path.c_str(), "a")) {
      for (const Function& fn : functions) {
        auto base = section_base.find(fn.section);
        if (base == section_base.end() || fn.size == 0) continue;
        // An entry's code is inlined into its packed wrapper: listed
        // under the traced function's own name.
        const std::string_view shown = std::string_view(fn.name).starts_with(kPackedPrefix)
                                           ? std::string_view(fn.name).substr(kPackedPrefix.size())
                                           : std::string_view(fn.name);
        std::fprintf(f, "%llx %llx %.*s\n", static_cast<unsigned long long>(base->second + fn.offset),
                     static_cast<unsigned long long>(fn.size), static_cast<int>(shown.size()), shown.data());
      }
      std::fclose(f);
    }
  }
  impl->call_if_defined(kStaticInit);
  arm_exit_sentinel();
  return std::unique_ptr<LoadedObject>(new LoadedObject(std::move(impl)));
}

Result<void (*)(void**)> LoadedObject::packed_entry(std::string_view function_name) const {
  const std::string name = std::string(kPackedPrefix) + std::string(function_name);
  auto it = impl_->symbols.find(impl_->jit->mangleAndIntern(name));
  if (it == impl_->symbols.end()) return Status(ErrorCode::kNotFound, "the loaded object has no packed entry " + name);
  return it->second.getAddress().toPtr<void (*)(void**)>();
}

}  // namespace radix
