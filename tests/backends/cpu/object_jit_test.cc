// emit_object + LoadedObject: compile small MLIR modules to native objects,
// load them into ORC JITs (fresh, twice, concurrently, in another process)
// and check the results and the error paths.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/raw_ostream.h"
#include "radix/backends/cpu/object_jit.h"

namespace radix {
namespace {

constexpr int kN = 16;

// @main(a, b, out): out[i] = f(a[i]) + b[i], where `op` computes %h = f(%x).
std::string ab_module(const std::string& op, const std::string& extra = "") {
  return extra + R"mlir(
func.func @main(%a: memref<16xf32>, %b: memref<16xf32>, %out: memref<16xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %a[%i] : memref<16xf32>
    %y = memref.load %b[%i] : memref<16xf32>
    )mlir" + op + R"mlir(
    %s = arith.addf %h, %y : f32
    memref.store %s, %out[%i] : memref<16xf32>
  }
  return
}
)mlir";
}

// sum(a) returns a scalar, which the packed entry stores through args[1].
constexpr const char* kSumFunction = R"mlir(
func.func @sum(%a: memref<16xf32>) -> f32 attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
    %x = memref.load %a[%i] : memref<16xf32>
    %s = arith.addf %acc, %x : f32
    scf.yield %s : f32
  }
  return %r : f32
}
)mlir";

const std::string kNegModule = ab_module("%h = arith.negf %x : f32", kSumFunction);
// exp becomes a call to libm's expf, found among the process's symbols.
const std::string kExpModule = ab_module("%h = math.exp %x : f32");
// A function the loader is given as a host symbol.
const std::string kHookModule = ab_module("%h = func.call @radix_test_hook(%x) : (f32) -> f32",
                                          "func.func private @radix_test_hook(f32) -> f32");

// A static constructor sets a global that @main returns; a static
// destructor calls back into the host.
constexpr const char* kCtorModule = R"mlir(
llvm.mlir.global internal @counter(0 : i32) : i32
llvm.func @radix_test_on_fini()
llvm.func @radix_test_init() {
  %p = llvm.mlir.addressof @counter : !llvm.ptr
  %v = llvm.mlir.constant(42 : i32) : i32
  llvm.store %v, %p : i32, !llvm.ptr
  llvm.return
}
llvm.func @radix_test_fini() {
  llvm.call @radix_test_on_fini() : () -> ()
  llvm.return
}
llvm.mlir.global_ctors ctors = [@radix_test_init], priorities = [0 : i32], data = [#llvm.zero]
llvm.mlir.global_dtors dtors = [@radix_test_fini], priorities = [0 : i32], data = [#llvm.zero]
func.func @main() -> i32 attributes {llvm.emit_c_interface} {
  %p = llvm.mlir.addressof @counter : !llvm.ptr
  %v = llvm.load %p : !llvm.ptr -> i32
  return %v : i32
}
)mlir";

// Given to the loader under the names the modules call. Internal linkage,
// so the process never exports those names (not even with -rdynamic).
float hook(float x) { return 2 * x + 1; }
std::atomic<int> g_fini_calls{0};
void on_fini() { ++g_fini_calls; }

// Passes for the module itself (the PassManager is anchored on
// builtin.module; "builtin.module(...)" would only reach nested modules).
// math-to-libm first, so that math.exp becomes a call to expf.
constexpr const char* kLowering =
    "convert-scf-to-cf,convert-math-to-libm,convert-math-to-llvm,finalize-memref-to-llvm,"
    "convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts";

std::unique_ptr<mlir::MLIRContext> make_context() {
  static std::once_flag once;
  std::call_once(once, [] { mlir::registerAllPasses(); });
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  return std::make_unique<mlir::MLIRContext>(registry);
}

// Parses `source` and lowers it to the LLVM dialect in place.
mlir::OwningOpRef<mlir::ModuleOp> lower(const std::string& source, mlir::MLIRContext* ctx) {
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, ctx);
  mlir::PassManager pm(ctx);
  if (!module || mlir::failed(mlir::parsePassPipeline(kLowering, pm)) || mlir::failed(pm.run(*module))) return {};
  return module;
}

Result<std::string> compile(const std::string& source, const ObjectCodegenOptions& options = {}) {
  auto ctx = make_context();
  auto module = lower(source, ctx.get());
  if (!module) return compile_error("parsing or lowering the test module failed");
  return emit_object(*module, options);
}

// A rank-1 memref descriptor: {allocated, aligned, offset, size, stride}.
struct Memref1D {
  float* allocated;
  float* aligned;
  int64_t offset, size, stride;
};
Memref1D memref(std::vector<float>& v) { return {v.data(), v.data(), 0, static_cast<int64_t>(v.size()), 1}; }

struct Inputs {
  std::vector<float> a = std::vector<float>(kN), b = std::vector<float>(kN);
  Inputs() {
    for (int i = 0; i < kN; ++i) a[i] = 0.25f * static_cast<float>(i) - 1.5f, b[i] = 1.0f / static_cast<float>(i + 1);
  }
};

// Calls a packed @main(a, b, out): args[i] points at a pointer to a descriptor.
std::vector<float> call_ab(void (*entry)(void**)) {
  Inputs in;
  std::vector<float> out(kN, -7.0f);
  Memref1D da = memref(in.a), db = memref(in.b), dout = memref(out);
  void *pa = &da, *pb = &db, *pout = &dout;
  void* args[] = {&pa, &pb, &pout};
  entry(args);
  return out;
}

float neg_f(float x) { return -x; }
float exp_f(float x) { return std::exp(x); }

// "" if out == f(a) + b within 1e-6 relative, else the first mismatch.
std::string mismatch(const std::vector<float>& got, float (*f)(float)) {
  Inputs in;
  for (int i = 0; i < kN; ++i) {
    const float want = f(in.a[i]) + in.b[i];
    if (!(std::fabs(got[i] - want) <= 1e-6f * std::max(1.0f, std::fabs(want))))
      return "out[" + std::to_string(i) + "] = " + std::to_string(got[i]) + ", want " + std::to_string(want);
  }
  return "";
}

// "" if `object` loads and its @main computes f(a) + b, else what failed.
std::string check_main(const std::string& object, float (*f)(float),
                       std::span<const LoadedObject::HostSymbol> host = {}) {
  auto loaded = LoadedObject::load(object, host);
  if (!loaded.ok()) return loaded.status().to_string();
  auto entry = (*loaded)->packed_entry("main");
  if (!entry.ok()) return entry.status().to_string();
  return mismatch(call_ab(*entry), f);
}

TEST(ObjectJit, RunsAndReturnsScalars) {
  std::string ir;
  ObjectCodegenOptions o;
  o.on_llvm_ir = [&](const std::string& text) { ir = text; };
  auto object = compile(kNegModule, o);
  ASSERT_TRUE(object.ok()) << object.status().to_string();
  EXPECT_NE(ir.find("_radix_packed_main"), std::string::npos);
  EXPECT_NE(ir.find("_radix_packed_sum"), std::string::npos);
  EXPECT_EQ(object->substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(check_main(*object, neg_f), "");

  auto loaded = LoadedObject::load(*object, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  auto sum = (*loaded)->packed_entry("sum");
  ASSERT_TRUE(sum.ok()) << sum.status().to_string();
  Inputs in;
  Memref1D da = memref(in.a);
  void* pa = &da;
  float result = -1, want = 0;
  void* args[] = {&pa, &result};
  (*sum)(args);
  for (float x : in.a) want += x;
  EXPECT_FLOAT_EQ(result, want);

  auto missing = (*loaded)->packed_entry("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("_radix_packed_nope"), std::string::npos);
}

// An entry with many memref arguments (a Llama decode step has ~200): the
// object exports only the packed entry (function and C wrapper are inlined
// into it), the result is right, and each step reports its time in order.
TEST(ObjectJit, ManyArgumentEntryExportsOnlyThePackedEntry) {
  constexpr int kArgs = 200;
  std::string params, body;
  for (int k = 0; k < kArgs; ++k) {
    params += "%a" + std::to_string(k) + ": memref<16xf32>, ";
    body += "    %x" + std::to_string(k) + " = memref.load %a" + std::to_string(k) + "[%i] : memref<16xf32>\n";
    body += "    %s" + std::to_string(k + 1) + " = arith.addf %s" + std::to_string(k) + ", %x" + std::to_string(k) +
            " : f32\n";
  }
  const std::string source = "func.func @main(" + params +
                             "%out: memref<16xf32>) attributes {llvm.emit_c_interface} {\n"
                             "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
                             "  %c16 = arith.constant 16 : index\n  %s0 = arith.constant 0.0 : f32\n"
                             "  scf.for %i = %c0 to %c16 step %c1 {\n" +
                             body + "    memref.store %s" + std::to_string(kArgs) +
                             ", %out[%i] : memref<16xf32>\n  }\n  return\n}\n";
  ObjectCodegenOptions o;
  std::vector<std::string> steps;
  o.on_step = [&](std::string_view step, double ms) {
    EXPECT_GE(ms, 0.0) << step;
    steps.emplace_back(step);
  };
  auto object = compile(source, o);
  ASSERT_TRUE(object.ok()) << object.status().to_string();
  EXPECT_EQ(steps, (std::vector<std::string>{"translate", "llvm-opt", "codegen"}));
  auto loaded = LoadedObject::load(*object, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_TRUE((*loaded)->symbols_with_prefix("main").empty());
  EXPECT_TRUE((*loaded)->symbols_with_prefix("_mlir_ciface_").empty());
  auto entry = (*loaded)->packed_entry("main");
  ASSERT_TRUE(entry.ok()) << entry.status().to_string();

  std::vector<std::vector<float>> inputs(kArgs, std::vector<float>(kN));
  std::vector<Memref1D> descriptors;
  std::vector<void*> pointers(kArgs + 1);
  std::vector<void*> args(kArgs + 1);
  std::vector<float> out(kN, -7.0f), want(kN, 0.0f);
  for (int k = 0; k < kArgs; ++k)
    for (int i = 0; i < kN; ++i) inputs[k][i] = static_cast<float>((k * 7 + i * 3) % 11) - 5.0f;
  for (int k = 0; k < kArgs; ++k) descriptors.push_back(memref(inputs[k]));
  descriptors.push_back(memref(out));
  for (int k = 0; k <= kArgs; ++k) pointers[k] = &descriptors[k], args[k] = &pointers[k];
  for (int i = 0; i < kN; ++i)
    for (int k = 0; k < kArgs; ++k) want[i] += inputs[k][i];  // small integers: exact in f32
  (*entry)(args.data());
  EXPECT_EQ(out, want);
}

TEST(ObjectJit, OptLevelsAndCpus) {
  for (int level : {0, 1, 2, 3}) {
    ObjectCodegenOptions o;
    o.opt_level = level;
    auto object = compile(kExpModule, o);
    ASSERT_TRUE(object.ok()) << "O" << level << ": " << object.status().to_string();
    EXPECT_EQ(check_main(*object, exp_f), "");
  }
  ObjectCodegenOptions generic;
  generic.target_cpu = "x86-64";  // a named CPU every x86-64 host runs
  auto object = compile(kExpModule, generic);
  ASSERT_TRUE(object.ok()) << object.status().to_string();
  EXPECT_EQ(check_main(*object, exp_f), "");
}

TEST(ObjectJit, BadOptionsAreErrors) {
  ObjectCodegenOptions o;
  o.target_cpu = "not-a-cpu-9000";
  auto object = compile(kNegModule, o);
  ASSERT_FALSE(object.ok());
  EXPECT_NE(object.status().message().find("not-a-cpu-9000"), std::string::npos) << object.status().to_string();
  o = ObjectCodegenOptions();
  o.opt_level = 4;
  EXPECT_FALSE(compile(kNegModule, o).ok());
}

std::unique_ptr<LoadedObject> g_kept_until_exit;

TEST(ObjectJit, SameBytesLoadTwice) {
  auto object = compile(kExpModule);
  ASSERT_TRUE(object.ok()) << object.status().to_string();
  auto first = LoadedObject::load(*object, {});
  auto second = LoadedObject::load(*object, {});
  ASSERT_TRUE(first.ok() && second.ok());
  auto e1 = (*first)->packed_entry("main");
  auto e2 = (*second)->packed_entry("main");
  ASSERT_TRUE(e1.ok() && e2.ok());
  EXPECT_NE(*e1, *e2);  // two copies of the code
  EXPECT_EQ(mismatch(call_ab(*e1), exp_f), "");
  first = Result<std::unique_ptr<LoadedObject>>(compile_error("unloaded"));  // the other one still runs
  EXPECT_EQ(mismatch(call_ab(*e2), exp_f), "");
  // Kept until static destruction at exit, which must not crash.
  g_kept_until_exit = std::move(second).value();
}

TEST(ObjectJit, ConcurrentCompilesLoadsAndCalls) {
  auto object = compile(kExpModule);
  ASSERT_TRUE(object.ok()) << object.status().to_string();
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < failures.size(); ++t)
    threads.emplace_back([&, t] {
      auto own = compile(kExpModule);  // one MLIRContext per thread
      if (!own.ok()) return void(failures[t] = own.status().to_string());
      for (int rep = 0; rep < 4 && failures[t].empty(); ++rep)
        failures[t] = check_main(rep % 2 ? *own : *object, exp_f);
    });
  for (auto& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
}

TEST(ObjectJit, HostSymbolsResolve) {
  auto object = compile(kHookModule);
  ASSERT_TRUE(object.ok()) << object.status().to_string();
  const LoadedObject::HostSymbol host{"radix_test_hook", reinterpret_cast<void*>(&hook)};
  EXPECT_EQ(check_main(*object, hook, {&host, 1}), "");

  auto missing = LoadedObject::load(*object, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kCompileError);
  EXPECT_NE(missing.status().message().find("radix_test_hook"), std::string::npos) << missing.status().to_string();
}

TEST(ObjectJit, StaticConstructorsAndDestructorsRun) {
  // At O3 LLVM would fold a constructor it can evaluate into the global's
  // initial value if it were still a constructor: check both levels.
  for (int level : {0, 3}) {
    ObjectCodegenOptions o;
    o.opt_level = level;
    auto object = compile(kCtorModule, o);
    ASSERT_TRUE(object.ok()) << object.status().to_string();
    const LoadedObject::HostSymbol fini{"radix_test_on_fini", reinterpret_cast<void*>(&on_fini)};
    auto loaded = LoadedObject::load(*object, {&fini, 1});
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    auto entry = (*loaded)->packed_entry("main");
    ASSERT_TRUE(entry.ok()) << entry.status().to_string();
    int32_t result = -1;
    void* args[] = {&result};
    (*entry)(args);
    EXPECT_EQ(result, 42) << "O" << level;
    const int before = g_fini_calls.load();
    loaded = Result<std::unique_ptr<LoadedObject>>(compile_error("unloaded"));
    EXPECT_EQ(g_fini_calls.load(), before + 1) << "O" << level;
  }
}

// A module that is already LLVM dialect, in a context that knows nothing
// else: emit_object registers the translations it needs.
TEST(ObjectJit, EmitsFromBareLlvmContext) {
  std::string lowered;
  {
    auto ctx = make_context();
    auto module = lower(kExpModule, ctx.get());
    ASSERT_TRUE(module);
    llvm::raw_string_ostream os(lowered);
    module->print(os);
  }
  mlir::MLIRContext bare;
  bare.loadDialect<mlir::LLVM::LLVMDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(lowered, &bare);
  ASSERT_TRUE(module);
  auto object = emit_object(*module, {});
  ASSERT_TRUE(object.ok()) << object.status().to_string();
  EXPECT_EQ(check_main(*object, exp_f), "");
}

TEST(ObjectJit, BadBytesAreErrors) {
  auto object = compile(kNegModule);
  ASSERT_TRUE(object.ok());
  std::string other_arch = *object;
  other_arch[18] = static_cast<char>(183);  // e_machine = EM_AARCH64
  other_arch[19] = 0;
  for (const std::string& bytes : {std::string(), std::string("definitely not an object file"),
                                   std::string("\x7f" "ELF\x02\x01\x01", 7) + std::string(200, '\xab'),
                                   object->substr(0, object->size() / 2), object->substr(0, 64), other_arch}) {
    auto loaded = LoadedObject::load(bytes, {});
    ASSERT_FALSE(loaded.ok()) << "loaded " << bytes.size() << " bad bytes";
    EXPECT_EQ(loaded.status().code(), ErrorCode::kCompileError);
    EXPECT_EQ(loaded.status().message().rfind("cannot load object: ", 0), 0u) << loaded.status().message();
  }
}

// The on-disk cache case: the bytes are written here and loaded by a fresh
// process (this binary again, running only ObjectJitChild) that never
// compiles anything.
constexpr const char* kChildEnv = "RADIX_OBJECT_JIT_TEST_FILE";

TEST(ObjectJit, LoadsInAnotherProcess) {
  auto object = compile(kExpModule);
  ASSERT_TRUE(object.ok()) << object.status().to_string();
  const std::string path = ::testing::TempDir() + "radix_object_jit_test_" + std::to_string(getpid()) + ".o";
  std::ofstream(path, std::ios::binary) << *object;
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
  const std::string cmd =
      std::string(kChildEnv) + "='" + path + "' '" + self + "' --gtest_filter=ObjectJitChild.* --gtest_brief=1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::remove(path.c_str());
}

TEST(ObjectJitChild, LoadsCachedFile) {
  const char* path = std::getenv(kChildEnv);
  if (!path) GTEST_SKIP() << "run by ObjectJit.LoadsInAnotherProcess";
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty()) << path;
  EXPECT_EQ(check_main(bytes, exp_f), "");
}

}  // namespace
}  // namespace radix
