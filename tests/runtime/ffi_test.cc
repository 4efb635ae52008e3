// Custom calls end to end: handlers written against radix/ffi.h (C-style
// here; a real C plugin is ffi_test_plugin.c), registered, traced into
// graphs, compiled by the CPU backend and run. Results are checked against
// naive loops over the same inputs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "radix/api/control_flow.h"
#include "radix/api/ffi_binding.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

const Shape kF4(DType::kF32, {4});
const Shape kF2x3(DType::kF32, {2, 3});

template <class E>
std::vector<float> run1(const E& exe, const std::vector<float>& x, const Shape& s) {
  auto r = exe->call(must(cpu().buffer(s, x)));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? must(r->template to_host<float>()) : std::vector<float>();
}

// y = alpha * x.
RadixFfi_Error* scale(RadixFfi_CallFrame* f) {
  if (f->extension_start) return radix_ffi_report_metadata(f, 0);
  float alpha = 0;
  if (RadixFfi_Error* e = radix_ffi_attr_f32(f->api, &f->attrs, "alpha", &alpha)) return e;
  const RadixFfi_Buffer* x = f->args.args[0];
  RadixFfi_Buffer* y = f->rets.rets[0];
  if (x->dtype != RADIX_FFI_DATA_TYPE_F32 || y->dtype != RADIX_FFI_DATA_TYPE_F32)
    return f->api->error_create(RADIX_FFI_ERROR_INVALID_ARGUMENT, "scale: f32 only");
  for (int64_t i = 0; i < radix_ffi_buffer_count(x); ++i)
    static_cast<float*>(y->data)[i] = alpha * static_cast<const float*>(x->data)[i];
  return nullptr;
}

void register_once(const char* name, RadixFfi_Handler* h) {
  Status st = ffi::register_handler(name, "cpu", RadixFfi_HandlerBundle{nullptr, nullptr, nullptr, h});
  ASSERT_TRUE(st.ok()) << st.to_string();
}

TEST(Ffi, ScalesByAnAttribute) {
  register_once("test.scale", &scale);
  for (float alpha : {2.5f, -1.0f}) {
    auto exe = compile_fn(cpu(), [alpha](Tensor x) {
      return custom_call("test.scale", {x}, {x.shape()}, {.attrs = {{"alpha", alpha}}})[0] + 1.0f;
    }, kF2x3);
    ASSERT_TRUE(exe.ok()) << exe.status().to_string();
    const std::vector<float> x = {1, -2, 3, 0.5f, 7, -8};
    const std::vector<float> y = run1(exe, x, kF2x3);
    ASSERT_EQ(y.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(y[i], alpha * x[i] + 1.0f);
  }
  // The same bundle again is a no-op; another under the same name is refused.
  EXPECT_TRUE(ffi::register_handler("test.scale", "cpu", RadixFfi_HandlerBundle{nullptr, nullptr, nullptr, &scale}).ok());
  Status twice = ffi::register_handler("test.scale", "cpu", ffi::CppBundle{{}, {}, {}, [](RadixFfi_CallFrame*) {
                                         return static_cast<RadixFfi_Error*>(nullptr);
                                       }});
  EXPECT_EQ(twice.code(), ErrorCode::kAlreadyExists) << twice.to_string();
}

// Reads every attribute kind and writes what it read into a flat f64 output.
RadixFfi_Error* read_attrs(RadixFfi_CallFrame* f) {
  if (f->extension_start) return radix_ffi_report_metadata(f, 0);
  const RadixFfi_Api* api = f->api;
  double* out = static_cast<double*>(f->rets.rets[0]->data);
  int32_t i32 = 0;
  int64_t i64 = 0;
  float f32 = 0;
  double f64 = 0;
  uint8_t flag = 0;
  RadixFfi_Error* e = nullptr;
  if ((e = radix_ffi_attr_i32(api, &f->attrs, "i32", &i32)) || (e = radix_ffi_attr_i64(api, &f->attrs, "i64", &i64)) ||
      (e = radix_ffi_attr_f32(api, &f->attrs, "f32", &f32)) || (e = radix_ffi_attr_f64(api, &f->attrs, "f64", &f64)) ||
      (e = radix_ffi_attr_bool(api, &f->attrs, "flag", &flag)))
    return e;
  const void* p = nullptr;
  if ((e = radix_ffi_attr_get(api, &f->attrs, "ints", RADIX_FFI_ATTR_ARRAY, &p))) return e;
  const auto* ints = static_cast<const RadixFfi_Array*>(p);
  if ((e = radix_ffi_attr_get(api, &f->attrs, "floats", RADIX_FFI_ATTR_ARRAY, &p))) return e;
  const auto* floats = static_cast<const RadixFfi_Array*>(p);
  if ((e = radix_ffi_attr_get(api, &f->attrs, "name", RADIX_FFI_ATTR_STRING, &p))) return e;
  const auto* name = static_cast<const RadixFfi_ByteSpan*>(p);
  if ((e = radix_ffi_attr_get(api, &f->attrs, "nested", RADIX_FFI_ATTR_DICTIONARY, &p))) return e;
  const auto* nested = static_cast<const RadixFfi_Attrs*>(p);
  int64_t depth = 0;
  if ((e = radix_ffi_attr_i64(api, nested, "depth", &depth))) return e;
  if ((e = radix_ffi_attr_get(api, nested, "inner", RADIX_FFI_ATTR_DICTIONARY, &p))) return e;
  double leaf = 0;
  if ((e = radix_ffi_attr_f64(api, static_cast<const RadixFfi_Attrs*>(p), "leaf", &leaf))) return e;
  // A wrong dtype is refused by the typed getter.
  float wrong = 0;
  RadixFfi_Error* refused = radix_ffi_attr_f32(api, &f->attrs, "f64", &wrong);
  const bool refused_ok = refused && api->error_code(refused) == RADIX_FFI_ERROR_INVALID_ARGUMENT;
  if (refused) api->error_destroy(refused);
  out[0] = i32;
  out[1] = static_cast<double>(i64);
  out[2] = f32;
  out[3] = f64;
  out[4] = flag;
  out[5] = ints->dtype == RADIX_FFI_DATA_TYPE_S64 ? static_cast<double>(ints->size) : -1;
  out[6] = static_cast<double>(static_cast<const int64_t*>(ints->data)[2]);
  out[7] = floats->dtype == RADIX_FFI_DATA_TYPE_F32 ? static_cast<const float*>(floats->data)[1] : -1;
  out[8] = std::string(name->ptr, name->len) == "radix" ? 1 : 0;
  out[9] = static_cast<double>(depth);
  out[10] = leaf;
  out[11] = refused_ok ? 1 : 0;
  out[12] = static_cast<double>(f->attrs.size);
  return nullptr;
}

TEST(Ffi, ReadsEveryAttributeKind) {
  register_once("test.read_attrs", &read_attrs);
  auto exe = compile_fn(cpu(), [](Tensor x) {
    CustomCallOptions o;
    o.attrs = {{"i32", int32_t{-7}},
               {"i64", int64_t{1} << 40},
               {"f32", 0.25f},
               {"f64", 1e-300},
               {"flag", true},
               {"ints", std::vector<int64_t>{5, 6, 7}},
               {"floats", std::vector<float>{1.5f, 2.5f}},
               {"name", "radix"},
               {"nested", CustomCallAttrs{{"depth", int64_t{2}}, {"inner", CustomCallAttrs{{"leaf", 3.75}}}}}};
    return custom_call("test.read_attrs", {x}, {Shape(DType::kF64, {13})}, o)[0];
  }, kF4);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  auto r = exe->call(must(cpu().buffer(kF4, std::vector<float>{0, 0, 0, 0})));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const std::vector<double> got = must(r->to_host<double>());
  const std::vector<double> want = {-7, double(int64_t{1} << 40), 0.25, 1e-300, 1, 3, 7, 2.5, 1, 2, 3.75, 1, 9};
  EXPECT_EQ(got, want);
  // A repeated attribute name fails while tracing.
  auto dup = compile_fn(cpu(), [](Tensor x) {
    return custom_call("test.read_attrs", {x}, {x.shape()}, {.attrs = {{"a", 1.0f}, {"a", 2.0f}}})[0];
  }, kF4);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("'a' given twice"), std::string::npos) << dup.status().to_string();
}

// A C++ handler reading user data the caller attached to the run.
struct Offset {
  float value;
};

TEST(Ffi, UserDataFromTheExecutionContext) {
  const RadixFfi_TypeId id = ffi::type_id("test.Offset");
  EXPECT_EQ(ffi::type_id("test.Offset"), id);
  EXPECT_NE(ffi::type_id("test.Other"), id);
  ASSERT_TRUE(ffi::register_handler("test.add_offset", [id](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
                void* p = nullptr;
                if (RadixFfi_Error* e = f->api->context_get(f->ctx, id, &p)) return e;
                const float off = static_cast<Offset*>(p)->value;
                const RadixFfi_Buffer* x = f->args.args[0];
                for (int64_t i = 0; i < radix_ffi_buffer_count(x); ++i)
                  static_cast<float*>(f->rets.rets[0]->data)[i] = static_cast<const float*>(x->data)[i] + off;
                int32_t ordinal = -1;
                void* stream = reinterpret_cast<void*>(1);
                if (RadixFfi_Error* e = f->api->context_device_ordinal(f->ctx, &ordinal)) return e;
                if (RadixFfi_Error* e = f->api->context_stream(f->ctx, &stream)) return e;
                if (ordinal != 0 || stream != nullptr)
                  return f->api->error_create(RADIX_FFI_ERROR_INTERNAL, "unexpected device ordinal or stream");
                return nullptr;
              }).ok());
  auto exe = compile_fn(cpu(), [](Tensor x) { return custom_call("test.add_offset", {x}, {x.shape()})[0]; }, kF4);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  Offset a{10}, b{-3};
  {
    ffi::UserDataScope scope(id, &a);
    EXPECT_EQ(run1(exe, {1, 2, 3, 4}, kF4), (std::vector<float>{11, 12, 13, 14}));
    ffi::UserDataScope inner(id, &b);  // the innermost wins
    EXPECT_EQ(run1(exe, {1, 2, 3, 4}, kF4), (std::vector<float>{-2, -1, 0, 1}));
  }
  auto missing = exe->call(must(cpu().buffer(kF4, std::vector<float>{1, 2, 3, 4})));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("NOT_FOUND"), std::string::npos) << missing.status().to_string();
  EXPECT_NE(missing.status().message().find("test.add_offset"), std::string::npos) << missing.status().to_string();
}

// Work split into tasks on the runtime's pool; the handler waits for them.
TEST(Ffi, SchedulesTasksOnThePool) {
  ASSERT_TRUE(ffi::register_handler("test.pool_square", [](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
                struct Job {
                  const float* x;
                  float* y;
                  int64_t begin, end;
                  std::atomic<int>* left;
                  std::mutex* mu;
                  std::condition_variable* cv;
                };
                const RadixFfi_Buffer* x = f->args.args[0];
                const int64_t n = radix_ffi_buffer_count(x);
                std::atomic<int> left{4};
                std::mutex mu;
                std::condition_variable cv;
                std::vector<Job> jobs;
                for (int t = 0; t < 4; ++t)
                  jobs.push_back({static_cast<const float*>(x->data), static_cast<float*>(f->rets.rets[0]->data),
                                  n * t / 4, n * (t + 1) / 4, &left, &mu, &cv});
                for (Job& j : jobs) {
                  RadixFfi_Error* e = f->api->context_schedule_task(f->ctx, [](void* d) {
                    Job* j = static_cast<Job*>(d);
                    for (int64_t i = j->begin; i < j->end; ++i) j->y[i] = j->x[i] * j->x[i];
                    std::lock_guard<std::mutex> lock(*j->mu);
                    if (--*j->left == 0) j->cv->notify_all();
                  }, &j);
                  if (e) return e;
                }
                std::unique_lock<std::mutex> lock(mu);
                cv.wait(lock, [&] { return left.load() == 0; });
                return nullptr;
              }).ok());
  const Shape s(DType::kF32, {1000});
  auto exe = compile_fn(cpu(), [](Tensor x) { return custom_call("test.pool_square", {x}, {x.shape()})[0]; }, s);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f;
  const std::vector<float> y = run1(exe, x, s);
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i] * x[i]) << i;
}

// An asynchronous handler: returns at once with a future another thread
// completes; the run returns only after it (and sees its result).
TEST(Ffi, AsyncHandlerCompletesThroughAFuture) {
  ASSERT_TRUE(ffi::register_handler("test.async_negate", [](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
                RadixFfi_Future* fut = nullptr;
                if (RadixFfi_Error* e = f->api->future_create(&fut)) return e;
                const float* x = static_cast<const float*>(f->args.args[0]->data);
                float* y = static_cast<float*>(f->rets.rets[0]->data);
                const int64_t n = radix_ffi_buffer_count(f->args.args[0]);
                const RadixFfi_Api* api = f->api;
                const bool fail = n == 2;
                std::thread([=] {
                  std::this_thread::sleep_for(std::chrono::milliseconds(30));
                  if (fail) {
                    api->future_set_error(fut, api->error_create(RADIX_FFI_ERROR_ABORTED, "async failure"));
                    return;
                  }
                  for (int64_t i = 0; i < n; ++i) y[i] = -x[i];
                  api->future_set_available(fut);
                }).detach();
                f->future = fut;
                return nullptr;
              }).ok());
  auto exe = compile_fn(cpu(), [](Tensor x) { return custom_call("test.async_negate", {x}, {x.shape()})[0] * 2.0f; }, kF4);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  EXPECT_EQ(run1(exe, {1, 2, 3, 4}, kF4), (std::vector<float>{-2, -4, -6, -8}));
  const Shape two(DType::kF32, {2});
  auto failing = compile_fn(cpu(), [](Tensor x) { return custom_call("test.async_negate", {x}, {x.shape()})[0]; }, two);
  ASSERT_TRUE(failing.ok());
  auto r = failing->call(must(cpu().buffer(two, std::vector<float>{1, 2})));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ABORTED: async failure"), std::string::npos) << r.status().to_string();
}

// A handler error fails the call with its code and message; the executable
// works again on the next call.
TEST(Ffi, HandlerErrorsReachTheCallerAndTheExecutableRecovers) {
  ASSERT_TRUE(ffi::register_handler("test.check_positive", [](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
                const float* x = static_cast<const float*>(f->args.args[0]->data);
                float* y = static_cast<float*>(f->rets.rets[0]->data);
                for (int64_t i = 0; i < radix_ffi_buffer_count(f->args.args[0]); ++i) {
                  if (x[i] <= 0)
                    return f->api->error_create(RADIX_FFI_ERROR_OUT_OF_RANGE,
                                                ("element " + std::to_string(i) + " is not positive").c_str());
                  y[i] = std::sqrt(x[i]);
                }
                return nullptr;
              }).ok());
  auto exe = compile_fn(cpu(), [](Tensor x) {
    Tensor r = custom_call("test.check_positive", {x}, {x.shape()})[0];
    return custom_call("test.check_positive", {r}, {r.shape()})[0];  // skipped after a failure
  }, kF4);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  auto bad = exe->call(must(cpu().buffer(kF4, std::vector<float>{16, 81, -1, 1})));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("custom call 'test.check_positive' (execute) failed with OUT_OF_RANGE: element 2 "
                                        "is not positive"),
            std::string::npos)
      << bad.status().to_string();
  EXPECT_EQ(run1(exe, {16, 81, 1, 256}, kF4), (std::vector<float>{2, 3, 1, 4}));
}

TEST(Ffi, UnknownTargetFailsToCompileNamingIt) {
  auto exe = compile_fn(cpu(), [](Tensor x) { return custom_call("test.no_such_kernel", {x}, {x.shape()})[0]; }, kF4);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("custom call target 'test.no_such_kernel' has no handler registered for "
                                        "platform cpu"),
            std::string::npos)
      << exe.status().to_string();
}

// Stages: instantiate once per site (its state kept), prepare and
// initialize before every run, then execute.
struct StageCounts {
  std::atomic<int> instantiate{0}, prepare{0}, initialize{0}, execute{0};
};
StageCounts g_stages;
std::atomic<int> g_states_alive{0};

TEST(Ffi, StagesRunInOrderWithPerSiteState) {
  ffi::CppBundle b;
  b.instantiate = [](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
    ++g_stages.instantiate;
    ++g_states_alive;
    return f->api->state_set(f->ctx, new float(100.0f), [](void* p) {
      --g_states_alive;
      delete static_cast<float*>(p);
    });
  };
  b.prepare = [](RadixFfi_CallFrame*) -> RadixFfi_Error* {
    ++g_stages.prepare;
    return nullptr;
  };
  b.initialize = [](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
    if (g_stages.prepare.load() != g_stages.initialize.load() + 1)
      return f->api->error_create(RADIX_FFI_ERROR_INTERNAL, "initialize before prepare");
    ++g_stages.initialize;
    return nullptr;
  };
  b.execute = [](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
    ++g_stages.execute;
    void* state = nullptr;
    if (RadixFfi_Error* e = f->api->state_get(f->ctx, &state)) return e;
    if (f->stage != RADIX_FFI_STAGE_EXECUTE) return f->api->error_create(RADIX_FFI_ERROR_INTERNAL, "wrong stage");
    const float* x = static_cast<const float*>(f->args.args[0]->data);
    for (int64_t i = 0; i < 4; ++i) static_cast<float*>(f->rets.rets[0]->data)[i] = x[i] + *static_cast<float*>(state);
    return nullptr;
  };
  ASSERT_TRUE(ffi::register_handler("test.stages", "cpu", b).ok());
  {
    auto exe = compile_fn(cpu(), [](Tensor x) { return custom_call("test.stages", {x}, {x.shape()})[0]; }, kF4);
    ASSERT_TRUE(exe.ok()) << exe.status().to_string();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(run1(exe, {1, 2, 3, 4}, kF4), (std::vector<float>{101, 102, 103, 104}));
    EXPECT_EQ(g_stages.instantiate.load(), 1);
    EXPECT_EQ(g_stages.prepare.load(), 3);
    EXPECT_EQ(g_stages.initialize.load(), 3);
    EXPECT_EQ(g_stages.execute.load(), 3);
    EXPECT_EQ(g_states_alive.load(), 1);
  }
  // The executable gone, its site's state is destroyed.
  EXPECT_EQ(g_states_alive.load(), 0);
}

// A handler built against another major API version is refused.
RadixFfi_Error* from_the_future(RadixFfi_CallFrame* f) {
  if (f->extension_start) {
    radix_ffi_report_metadata(f, 0);
    reinterpret_cast<RadixFfi_MetadataExtension*>(f->extension_start)->metadata->api_version.major_version =
        RADIX_FFI_API_MAJOR + 1;
  }
  return nullptr;
}
RadixFfi_Error* silent(RadixFfi_CallFrame*) { return nullptr; }

TEST(Ffi, IncompatibleHandlersAreRefusedAtRegistration) {
  Status st = ffi::register_handler("test.future", "cpu", RadixFfi_HandlerBundle{nullptr, nullptr, nullptr, &from_the_future});
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("built against FFI API " + std::to_string(RADIX_FFI_API_MAJOR + 1)), std::string::npos)
      << st.to_string();
  Status st0 = ffi::register_handler("test.silent", "cpu", RadixFfi_HandlerBundle{nullptr, nullptr, nullptr, &silent});
  EXPECT_NE(st0.message().find("0.0"), std::string::npos) << st0.to_string();
  EXPECT_FALSE(ffi::has_handler("test.future", "cpu"));
}

// Inside call()-cached functions and control-flow bodies.
Tensor scaled_layer(Tensor x) {
  return custom_call("test.scale", {x}, {x.shape()}, {.attrs = {{"alpha", 3.0f}}})[0] - 1.0f;
}

TEST(Ffi, InsideCalledFunctionsAndLoops) {
  register_once("test.scale", &scale);
  auto exe = compile_fn(cpu(), [](Tensor x) {
    Tensor y = call("scaled_layer", &scaled_layer, call("scaled_layer", &scaled_layer, x));
    return for_loop(0, 2, [](Tensor, Tensor s) { return custom_call("test.scale", {s}, {s.shape()}, {.attrs = {{"alpha", 0.5f}}})[0]; }, y);
  }, kF4);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  const std::vector<float> x = {1, 2, -3, 0};
  const std::vector<float> y = run1(exe, x, kF4);
  ASSERT_EQ(y.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], ((x[i] * 3 - 1) * 3 - 1) * 0.25f);
}

// Output aliasing: the handler gets one buffer as operand and result and
// updates it in place; the traced operand keeps its value.
TEST(Ffi, OutputAliasesAnOperand) {
  ASSERT_TRUE(ffi::register_handler("test.double_in_place", [](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
                if (f->args.args[0]->data != f->rets.rets[0]->data)
                  return f->api->error_create(RADIX_FFI_ERROR_INTERNAL, "not aliased");
                float* p = static_cast<float*>(f->rets.rets[0]->data);
                for (int64_t i = 0; i < 4; ++i) p[i] *= 2;
                return nullptr;
              }).ok());
  auto exe = compile_fn(cpu(), [](Tensor x) {
    Tensor y = custom_call("test.double_in_place", {x}, {x.shape()}, {.output_operand_aliases = {{0, 0}}})[0];
    return y + x;  // x itself unchanged: y + x = 3x
  }, kF4);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  EXPECT_EQ(run1(exe, {1, 2, 3, 4}, kF4), (std::vector<float>{3, 6, 9, 12}));
  auto bad = compile_fn(cpu(), [](Tensor x) {
    return custom_call("test.double_in_place", {x}, {Shape(DType::kF32, {5})}, {.output_operand_aliases = {{0, 0}}})[0];
  }, kF4);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cannot alias operand 0"), std::string::npos) << bad.status().to_string();
}

TEST(Ffi, PrintShowsNameShapeAndTruncatedValues) {
  auto exe = compile_fn(cpu(), [](Tensor x) { return print(x * 2.0f, "doubled", 4) + 1.0f; }, kF2x3);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  ::testing::internal::CaptureStderr();
  const std::vector<float> y = run1(exe, {1, 2, 3, 4, 5, 6}, kF2x3);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(y, (std::vector<float>{3, 5, 7, 9, 11, 13}));
  EXPECT_NE(err.find("doubled: [2,3] {2, 4, 6, 8, ... (2 more)}"), std::string::npos) << err;
}

TEST(Ffi, HostCallbackRunsALambda) {
  int calls = 0;
  auto exe = compile_fn(cpu(), [&calls](Tensor x) {
    auto out = host_callback(
        [&calls](std::span<const HostCallbackBuffer> in, std::span<const HostCallbackBuffer> outs) {
          ++calls;
          const float* a = in[0].as<float>();
          for (int64_t i = 0; i < in[0].shape.count(); ++i) outs[0].as<float>()[i] = a[i] * a[i] + 1;
          outs[1].as<int32_t>()[0] = static_cast<int32_t>(in[0].shape.count());
        },
        {x}, {x.shape(), Shape(DType::kI32)});
    return out[0] + convert(out[1], DType::kF32);
  }, kF4);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  EXPECT_EQ(run1(exe, {1, 2, 3, 4}, kF4), (std::vector<float>{6, 9, 14, 21}));
  EXPECT_EQ(calls, 1);
  auto throwing = compile_fn(cpu(), [](Tensor x) {
    return host_callback([](std::span<const HostCallbackBuffer>, std::span<const HostCallbackBuffer>) {
      throw std::runtime_error("no luck");
    }, {x}, {x.shape()})[0];
  }, kF4);
  ASSERT_TRUE(throwing.ok());
  auto r = throwing->call(must(cpu().buffer(kF4, std::vector<float>{1, 2, 3, 4})));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("host callback threw: no luck"), std::string::npos) << r.status().to_string();
}

// A handler in C, built by the test suite as its own shared library, loaded
// at run time through Platform::load_plugin.
TEST(Ffi, PluginHandlersWrittenInC) {
  Status missing = cpu().load_plugin("/nonexistent/libplugin.so");
  EXPECT_EQ(missing.code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.message().find("/nonexistent/libplugin.so"), std::string::npos) << missing.to_string();
  Status st = cpu().load_plugin(RADIX_FFI_TEST_PLUGIN);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_TRUE(ffi::has_handler("plugin.axpy", "cpu"));
  auto exe = compile_fn(cpu(), [](Tensor x, Tensor y) {
    return custom_call("plugin.axpy", {x, y}, {x.shape()}, {.attrs = {{"a", 3.0}}})[0];
  }, kF4, kF4);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  auto r = exe->call(must(cpu().buffer(kF4, std::vector<float>{1, 2, 3, 4})),
                     must(cpu().buffer(kF4, std::vector<float>{10, 20, 30, 40})));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(must(r->to_host<float>()), (std::vector<float>{13, 26, 39, 52}));
  // The plugin checks dtypes itself and says so.
  const Shape i4(DType::kI32, {4});
  auto wrong = compile_fn(cpu(), [](Tensor x, Tensor y) {
    return custom_call("plugin.axpy", {x, y}, {x.shape()}, {.attrs = {{"a", 3.0}}})[0];
  }, i4, i4);
  ASSERT_TRUE(wrong.ok());
  auto rw = wrong->call(must(cpu().buffer(i4, std::vector<int32_t>{1, 2, 3, 4})),
                        must(cpu().buffer(i4, std::vector<int32_t>{1, 2, 3, 4})));
  ASSERT_FALSE(rw.ok());
  EXPECT_NE(rw.status().message().find("plugin.axpy: f32 buffers only"), std::string::npos) << rw.status().to_string();
}

// The typed C++ binding (api/ffi_binding.h) through a compiled graph: the
// binding checks the frame the compiled code builds, and its errors name
// the mismatch.
TEST(Ffi, TypedBindingEndToEnd) {
  auto h = ffi::bind()
               .arg<ffi::Buffer<DType::kF32>>()
               .ret<ffi::Buffer<DType::kF32>>()
               .attr<float>("alpha")
               .to([](ffi::Buffer<DType::kF32> x, ffi::Result<ffi::Buffer<DType::kF32>> y, float alpha) {
                 for (int64_t i = 0; i < x.count(); ++i) (*y)[i] = alpha * x[i] + 0.5f;
                 return ffi::Error::success();
               });
  ASSERT_TRUE(ffi::register_handler("test.typed_scale", h).ok());
  auto exe = compile_fn(cpu(), [](Tensor x) {
    return custom_call("test.typed_scale", {x}, {x.shape()}, {.attrs = {{"alpha", 4.0f}}})[0];
  }, kF4);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  EXPECT_EQ(run1(exe, {1, 2, 3, 4}, kF4), (std::vector<float>{4.5f, 8.5f, 12.5f, 16.5f}));
  // Wrong dtype: an i32 operand.
  const Shape i4(DType::kI32, {4});
  auto wrong_dtype = compile_fn(cpu(), [](Tensor x) {
    return custom_call("test.typed_scale", {x}, {Shape(DType::kF32, {4})}, {.attrs = {{"alpha", 4.0f}}})[0];
  }, i4);
  ASSERT_TRUE(wrong_dtype.ok());
  auto r1 = wrong_dtype->call(must(cpu().buffer(i4, std::vector<int32_t>{1, 2, 3, 4})));
  ASSERT_FALSE(r1.ok());
  EXPECT_NE(r1.status().message().find("argument 0: expected f32, got i32"), std::string::npos) << r1.status().to_string();
  // Wrong arity: two operands.
  auto wrong_arity = compile_fn(cpu(), [](Tensor x) {
    return custom_call("test.typed_scale", {x, x}, {x.shape()}, {.attrs = {{"alpha", 4.0f}}})[0];
  }, kF4);
  ASSERT_TRUE(wrong_arity.ok());
  auto r2 = wrong_arity->call(must(cpu().buffer(kF4, std::vector<float>{1, 2, 3, 4})));
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("expects 1 argument, got 2"), std::string::npos) << r2.status().to_string();
  // A wrongly typed attribute.
  auto wrong_attr = compile_fn(cpu(), [](Tensor x) {
    return custom_call("test.typed_scale", {x}, {x.shape()}, {.attrs = {{"alpha", int32_t{4}}}})[0];
  }, kF4);
  ASSERT_TRUE(wrong_attr.ok());
  auto r3 = wrong_attr->call(must(cpu().buffer(kF4, std::vector<float>{1, 2, 3, 4})));
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.status().message().find("attribute 'alpha'"), std::string::npos) << r3.status().to_string();
}

TEST(Ffi, DeviceMemoryFromTheContext) {
  ASSERT_TRUE(ffi::register_handler("test.scratch", [](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
                void* scratch = nullptr;
                if (RadixFfi_Error* e = f->api->device_memory_allocate(f->ctx, 4096, 64, &scratch)) return e;
                if (reinterpret_cast<uintptr_t>(scratch) % 64 != 0)
                  return f->api->error_create(RADIX_FFI_ERROR_INTERNAL, "misaligned");
                std::memcpy(scratch, f->args.args[0]->data, 16);
                std::memcpy(f->rets.rets[0]->data, scratch, 16);
                return f->api->device_memory_free(f->ctx, scratch, 4096);
              }).ok());
  auto exe = compile_fn(cpu(), [](Tensor x) { return custom_call("test.scratch", {x}, {x.shape()})[0]; }, kF4);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  EXPECT_EQ(run1(exe, {5, 6, 7, 8}, kF4), (std::vector<float>{5, 6, 7, 8}));
}

// The IR shows the call: target and attributes are visible in dumps.
TEST(Ffi, CustomCallsAreVisibleInTheTracedModule) {
  register_once("test.scale", &scale);
  auto traced = trace(TraceOptions{}, {kF4}, {"x"}, 0, [](std::span<const Tensor> in) {
    return custom_call("test.scale", {in[0]}, {in[0].shape()}, {.attrs = {{"alpha", 2.0f}}, .has_side_effect = true});
  });
  ASSERT_TRUE(traced.ok()) << traced.status().to_string();
  const std::string text = traced->to_string();
  EXPECT_NE(text.find("radix.custom_call.target = \"test.scale\""), std::string::npos) << text;
  EXPECT_NE(text.find("alpha = 2.000000e+00 : f32"), std::string::npos) << text;
  EXPECT_NE(text.find("radix.custom_call.has_side_effect"), std::string::npos) << text;
}

}  // namespace
}  // namespace radix
