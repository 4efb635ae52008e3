// The two registries of the runtime: backends by name and host symbols.
#include <gtest/gtest.h>

#include "radix/runtime/host_symbols.h"
#include "test_util.h"

namespace radix {
namespace {

TEST(BackendRegistry, CpuIsRegisteredAndUnknownNamesAreListed) {
  auto cpu = Platform::get("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_EQ(cpu->name(), "cpu");
  EXPECT_EQ(cpu->backend(), Platform::cpu().backend()) << "one instance per name";
  auto none = Platform::get("tpu");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(none.status().message().find("no backend named 'tpu' (registered: cpu"), std::string::npos)
      << none.status().message();
  EXPECT_FALSE(register_backend("cpu", [] { return std::shared_ptr<Backend>(); })) << "names are unique";
}

// A backend registered from outside the library is found by name and is
// what the Platform's buffers use.
class CountingBackend : public Backend {
 public:
  std::string name() const override { return "counting"; }
  Status check_options(const CompileOptions&) const override { return Status(); }
  std::string codegen_fingerprint(const CompileOptions&) const override { return "counting"; }
  Result<std::unique_ptr<BackendExecutable>> compile(const CompileJob&) override {
    return compile_error("counting: cannot compile");
  }
  Result<std::unique_ptr<BackendExecutable>> load(std::string_view, const CompileJob&) override {
    return compile_error("counting: cannot load");
  }
  Result<void*> allocate(size_t bytes, MemoryKind) override {
    ++allocations;
    return std::malloc(std::max<size_t>(bytes, 1));
  }
  void deallocate(void* p, size_t, MemoryKind) override { std::free(p); }
  Status copy_to_device(void* d, const void* s, size_t n) override { return std::memcpy(d, s, n), Status(); }
  Status copy_to_host(void* d, const void* s, size_t n) override { return std::memcpy(d, s, n), Status(); }
  Status copy_on_device(void* d, const void* s, size_t n) override { return std::memcpy(d, s, n), Status(); }
  int allocations = 0;
};

TEST(BackendRegistry, OutsideBackendsRegisterByName) {
  static std::shared_ptr<CountingBackend> backend = std::make_shared<CountingBackend>();
  ASSERT_TRUE(register_backend("counting", [] { return backend; }));
  Platform p = testing::must(Platform::get("counting"));
  Buffer b = testing::must(p.buffer(Shape(DType::kI32, {3}), {1, 2, 3}));
  EXPECT_EQ(backend->allocations, 1);
  EXPECT_EQ(testing::must(b.to_host<int32_t>()), (std::vector<int32_t>{1, 2, 3}));
  auto names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "counting"), names.end());
  // Its compile errors come back as they are.
  TracedModule m = testing::must(trace({}, {Shape(DType::kF32, {2})}, {"x"}, 0,
                                       [](std::span<const Tensor> in) { return std::vector<Tensor>{in[0] + 1.0}; }));
  auto exe = p.compile(m);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("counting: cannot compile"), std::string::npos);
}

float twice(float x) { return 2 * x; }
float thrice(float x) { return 3 * x; }

TEST(HostSymbols, OneAddressPerName) {
  (void)Platform::cpu();  // the CPU backend registers its helpers when it is made
  EXPECT_TRUE(register_host_symbol("radix_test_twice", reinterpret_cast<void*>(&twice)).ok());
  EXPECT_TRUE(register_host_symbol("radix_test_twice", reinterpret_cast<void*>(&twice)).ok()) << "idempotent";
  Status clash = register_host_symbol("radix_test_twice", reinterpret_cast<void*>(&thrice));
  EXPECT_EQ(clash.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(clash.message().find("'radix_test_twice' is already registered"), std::string::npos);
  EXPECT_FALSE(register_host_symbol("", reinterpret_cast<void*>(&twice)).ok());
  bool found = false, bf16 = false;
  for (const HostSymbol& s : host_symbols()) {
    found |= s.name == "radix_test_twice" && s.address == reinterpret_cast<void*>(&twice);
    bf16 |= s.name == "__truncsfbf2";  // the CPU backend's runtime helpers go through the registry too
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(bf16);
}

}  // namespace
}  // namespace radix
